"""EmbeddingCache and CachedEmbedding: each distinct text is computed once per model identity, across calls and
across cache instances (runs); the semantic parser fed through CachedEmbedding gives the same chunks."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest
from llama_index.core import Document

from llama_index_sac.apps.benchmark.cache import CachedEmbedding, EmbeddingCache
from llama_index_sac.node_parser.semantic import SemanticNodeParser

from ._nodes import located_nodes
from .conftest import FakeEmbedding


def test_embedding_cache_computes_each_text_once(tmp_path: Path, fake_embedding: FakeEmbedding) -> None:
    cache = EmbeddingCache(tmp_path)
    texts = ["alpha beta", "gamma", "alpha beta", "delta"]
    first = cache.embed(texts, {"m": 1}, "text", fake_embedding.get_text_embedding_batch)
    # each distinct text once, shortest first (less padding per batch); the result keeps the input order
    assert fake_embedding.texts_embedded == ["gamma", "delta", "alpha beta"]
    assert first[0] == first[2]
    np.testing.assert_allclose(first[0], fake_embedding._vector("alpha beta"), rtol=1e-6)
    np.testing.assert_allclose(first[1], fake_embedding._vector("gamma"), rtol=1e-6)
    assert (cache.hits, cache.misses) == (1, 3)
    cache.close()
    again = EmbeddingCache(tmp_path)  # a later run: everything from disk
    second = again.embed(texts, {"m": 1}, "text", fake_embedding.get_text_embedding_batch)
    assert fake_embedding.texts_embedded == ["gamma", "delta", "alpha beta"]
    np.testing.assert_allclose(second, first, rtol=1e-6)
    other_model = again.embed(["gamma"], {"m": 2}, "text", fake_embedding.get_text_embedding_batch)
    assert fake_embedding.texts_embedded[-1] == "gamma" and len(other_model) == 1  # identity is part of the key
    again.close()


def test_embedding_cache_rejects_a_model_that_drops_vectors(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    with pytest.raises(RuntimeError, match="returned 1 vectors for 2 texts"):
        cache.embed(["a", "b"], {"m": 1}, "text", lambda texts: [[0.0, 1.0]])
    cache.close()


def test_cached_embedding_shares_sentence_vectors_between_parses(tmp_path: Path, fake_embedding: FakeEmbedding) -> None:
    text = (
        "The Supplier shall indemnify the Customer against all losses. Liability is capped at the fees paid. "
        "Either party may terminate this Agreement on thirty days notice. Termination does not affect accrued rights."
    )
    docs = [Document(text=text, id_="d1")]
    direct = located_nodes(SemanticNodeParser.from_defaults(embed_model=FakeEmbedding()).get_nodes_from_documents(docs))
    cache = EmbeddingCache(tmp_path)
    wrapped = CachedEmbedding(fake_embedding, cache, {"m": "fake"})
    assert wrapped.model_name == fake_embedding.model_name
    first = located_nodes(SemanticNodeParser.from_defaults(embed_model=wrapped).get_nodes_from_documents(docs))
    computed = len(fake_embedding.texts_embedded)
    assert computed > 0
    second = located_nodes(SemanticNodeParser.from_defaults(embed_model=wrapped).get_nodes_from_documents(docs))
    assert len(fake_embedding.texts_embedded) == computed  # the second parse embedded nothing
    spans = [[(n.start_char_idx, n.end_char_idx) for n in nodes] for nodes in (direct, first, second)]
    assert spans[0] == spans[1] == spans[2]
    assert wrapped.get_query_embedding("indemnity cap") == fake_embedding._vector("indemnity cap")
    cache.close()
    # the async path gives the same chunks and computes the missing vectors in one batched call, not one per text
    inner = FakeEmbedding()
    fresh = EmbeddingCache(tmp_path / "async")
    parser = SemanticNodeParser.from_defaults(embed_model=CachedEmbedding(inner, fresh, {"m": "fake"}))
    third = located_nodes(asyncio.run(parser.aget_nodes_from_documents(docs)))
    assert [(n.start_char_idx, n.end_char_idx) for n in third] == spans[0]
    assert len(inner.calls) == 1 and len(inner.texts_embedded) == computed
    fresh.close()
