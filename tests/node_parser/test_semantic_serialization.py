"""SemanticNodeParser / HybridNodeParser through to_dict / from_dict and pickle: the model travels as its identity."""

from __future__ import annotations

import pickle

import pytest
from llama_index.core.bridge.pydantic import ValidationError

from llama_index_sac import HybridNodeParser, SemanticNodeParser
from tests.conftest import FakeEmbedding

TEXT = "Alpha agrees to pay the fee. The weather is nice today. Beta shall deliver the goods on time. " * 12


def test_other_model_round_trips_when_given_and_is_refused_by_name_alone() -> None:
    parser = SemanticNodeParser(embed_model=FakeEmbedding(), breakpoint_method="threshold",
                                breakpoint_threshold_amount=0.2)
    data = parser.to_dict()
    assert data["embed_model"] == {"class_name": "FakeEmbedding", "model_name": "unknown"}
    with pytest.raises(ValidationError, match=r"cannot be rebuilt from its identity: pass the model itself"):
        SemanticNodeParser.from_dict(data)
    again = SemanticNodeParser.from_dict(data, embed_model=FakeEmbedding())
    assert again.to_dict() == data
    assert again.chunk_indices(TEXT) == parser.chunk_indices(TEXT)
    copy = pickle.loads(pickle.dumps(parser))  # a model that cannot be rebuilt travels with the parser
    assert isinstance(copy.embed_model, FakeEmbedding) and copy.chunk_indices(TEXT) == parser.chunk_indices(TEXT)


@pytest.mark.slow
def test_default_model_is_rebuilt_not_pickled() -> None:
    from llama_index_sac import default_embedding_model

    model = default_embedding_model()
    parser = SemanticNodeParser(embed_model=model)
    blob = pickle.dumps(parser)
    assert len(blob) < 10_000  # the parser's settings and the model's identity, not its ~90 MB of weights
    copy = pickle.loads(blob)
    assert copy.embed_model is not model and copy.to_dict() == parser.to_dict()
    assert copy.chunk_indices(TEXT) == parser.chunk_indices(TEXT)
    rebuilt = SemanticNodeParser.from_dict(parser.to_dict())
    assert rebuilt.to_dict() == parser.to_dict()
    hybrid = HybridNodeParser.from_defaults(embed_model=model, chunk_size=300)
    assert len(pickle.dumps(hybrid)) < 10_000
    assert HybridNodeParser.from_dict(hybrid.to_dict()).to_dict() == hybrid.to_dict()
    assert pickle.loads(pickle.dumps(hybrid)).chunk_indices(TEXT) == hybrid.chunk_indices(TEXT)
