"""embedding_max_tokens and embedding_token_counter (embeddings/limits.py): how many tokens a model reads, counted
with its own tokenizer."""

from __future__ import annotations

import pytest

from llama_index_sac.embeddings.limits import embedding_max_tokens, embedding_token_counter
from tests.conftest import FakeEmbedding, offline_installed


@offline_installed
@pytest.mark.slow
def test_token_counter_counts_what_the_model_sees(minilm) -> None:
    count = embedding_token_counter(minilm)
    assert count is not None
    assert count("hello world") == 4  # [CLS] hello world [SEP]
    long_text = "word " * 300
    limit = embedding_max_tokens(minilm)
    assert limit is not None
    assert count(long_text) == 302 > limit  # would be truncated: callers can warn


def test_max_tokens_unknown_for_models_without_a_limit() -> None:
    assert embedding_max_tokens(FakeEmbedding()) is None
    assert embedding_token_counter(FakeEmbedding()) is None
    assert embedding_max_tokens(FakeEmbedding(model_name="sentence-transformers/all-MiniLM-L6-v2")) == 256
