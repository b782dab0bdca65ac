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
from tests._nodes import located_nodes
from tests.conftest import FakeEmbedding


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


@pytest.mark.parametrize(("damage", "rows"), [
    ("UPDATE embeddings SET value = substr(value, 1, 100)", 3),  # truncated vectors: dimension 25
    ("UPDATE embeddings SET value = zeroblob(length(value))", 0),  # zeros: whole and finite, served
    ("UPDATE embeddings SET value = CAST(value || x'00' AS BLOB)", 3),  # one byte too many
    ("UPDATE dimensions SET value = 7", 3),  # a tampered dimension record: the computed vectors correct it
])
def test_damaged_cached_vectors_are_recomputed_with_a_counted_warning(tmp_path: Path, damage: str,
                                                                      rows: int) -> None:
    import sqlite3
    import warnings

    from llama_index_sac.apps.benchmark.cache import EmbeddingCacheWarning

    texts = ["alpha beta", "gamma", "delta"]
    cache = EmbeddingCache(tmp_path)
    fresh = cache.embed_array(texts, {"m": 1}, "text", FakeEmbedding().get_text_embedding_batch)
    cache.close()
    with sqlite3.connect(tmp_path / "embeddings.sqlite") as conn:
        conn.execute(damage)
    again = EmbeddingCache(tmp_path)
    model = FakeEmbedding()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = again.embed_array(texts, {"m": 1}, "text", model.get_text_embedding_batch)
    said = [w for w in caught if issubclass(w.category, EmbeddingCacheWarning)]
    assert again.rejected == rows and len(said) == (1 if rows else 0)
    if rows:
        assert f"{rows} cached embedding(s)" in str(said[0].message)
        np.testing.assert_array_equal(got, fresh)  # recomputed: the right vectors, never the damaged ones
        assert sorted(model.texts_embedded) == sorted(texts)
        third = EmbeddingCache(tmp_path)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # stored again, and the dimension record corrected: no warning
            np.testing.assert_array_equal(third.embed_array(texts, {"m": 1}, "text",
                                                            FakeEmbedding().get_text_embedding_batch), fresh)
        assert third.rejected == 0
    else:
        assert not got.any() and model.texts_embedded == []
    again.close()


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_non_finite_cached_vectors_are_misses(tmp_path: Path, value: float) -> None:
    import sqlite3

    from llama_index_sac.apps.benchmark.cache import EmbeddingCacheWarning

    cache = EmbeddingCache(tmp_path)
    fresh = cache.embed_array(["a b", "c"], {"m": 1}, "text", FakeEmbedding().get_text_embedding_batch)
    cache.close()
    with sqlite3.connect(tmp_path / "embeddings.sqlite") as conn:
        conn.execute("UPDATE embeddings SET value = ?", (np.full(fresh.shape[1], value, np.float32).tobytes(),))
    again = EmbeddingCache(tmp_path)
    with pytest.warns(EmbeddingCacheWarning, match="2 cached embedding"):
        got = again.embed_array(["a b", "c"], {"m": 1}, "text", FakeEmbedding().get_text_embedding_batch)
    np.testing.assert_array_equal(got, fresh)
    assert np.isfinite(got).all() and (again.hits, again.misses, again.rejected) == (0, 2, 2)


def test_an_older_cache_without_a_dimension_record_learns_it_from_one_vector(tmp_path: Path) -> None:
    import sqlite3

    cache = EmbeddingCache(tmp_path)
    fresh = cache.embed_array(["a b", "c", "d e f"], {"m": 1}, "text", FakeEmbedding().get_text_embedding_batch)
    cache.close()
    with sqlite3.connect(tmp_path / "embeddings.sqlite") as conn:
        conn.execute("DROP TABLE dimensions")
    model = FakeEmbedding()
    again = EmbeddingCache(tmp_path)
    np.testing.assert_array_equal(again.embed_array(["a b", "c", "d e f"], {"m": 1}, "text",
                                                    model.get_text_embedding_batch), fresh)
    assert len(model.texts_embedded) == 1 and again.rejected == 0
