"""The streaming runner: float32 matrices instead of per-node Python float lists, no copy of the
nodes, one configuration's index at a time, and the same numbers as the list-based path, bit for bit.

* ``NumpyVectorStore.add_matrix`` vs ``add`` of the same vectors: the same ids and the same scores (``==`` on
  float32-derived floats, no tolerance) under metadata filters, document-id filters, ``node_ids``/``doc_ids``,
  deletes and replaced ids, and the same scores as the arithmetic of the list-based store (rows normalised in float32
  over one matrix).
* ``EmbeddingCache.embed_array`` vs ``embed``: the same float32 values; a lazy sequence of texts is read by index
  only for the texts it must compute.
* The runner's retriever over a matrix vs ``factories.build_retriever`` over nodes carrying lists: the same ranking
  and scores for dense, document-aware and hybrid retrieval.
* A run under ``tracemalloc``: stored nodes carry no ``embedding``, each configuration's store is freed before the
  next one starts, and the peak traced memory stays below a bound derived from what one configuration must hold.
"""

from __future__ import annotations

import gc
import tracemalloc
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from llama_index.core.schema import MetadataMode, NodeRelationship, QueryBundle, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores.types import (
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
)

from llama_index_sac import (
    RecursiveCharacterNodeParser,
    SummaryAugmentationTransformation,
    synthetic_contracts,
)
from llama_index_sac.apps.benchmark import factories
from llama_index_sac.apps.benchmark.cache import EmbeddingCache
from llama_index_sac.apps.benchmark.components import RecursiveParserSettings
from llama_index_sac.apps.benchmark.config import RunSettings, parse_config
from llama_index_sac.apps.benchmark.runner import run_evaluation
from llama_index_sac.vector_stores import numpy_store
from llama_index_sac.vector_stores.numpy_store import NumpyVectorStore
from tests.conftest import FakeEmbedding


class FakeEmbedding384(FakeEmbedding):
    """The FakeEmbedding at MiniLM's dimension (384): a Python list of it costs 32 bytes per value, float32 4."""

    dim: int = 384


def _nodes(n: int, n_docs: int = 5) -> list[TextNode]:
    nodes = []
    for i in range(n):
        node = TextNode(id_=f"n{i:03d}", text=f"chunk {i}", metadata={"party": "acme" if i % 3 else "globex"},
                        start_char_idx=10 * i, end_char_idx=10 * i + 7)
        node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=f"doc{i % n_docs}")
        nodes.append(node)
    return nodes


def _vectors(n: int, dim: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    vectors[7] = 0.0  # a zero vector: stays zero, scores 0
    vectors[11] = vectors[12]  # a tie: document id, then offset decides (doc1 before doc2)
    return vectors


def _queries(q: list[float]) -> list[VectorStoreQuery]:
    doc_in = MetadataFilters(filters=[MetadataFilter(key="ref_doc_id", value=["doc1", "doc3"],
                                                     operator=FilterOperator.IN)])
    doc_eq = MetadataFilters(filters=[MetadataFilter(key="doc_id", value="doc2")])
    party = MetadataFilters(filters=[MetadataFilter(key="party", value="globex")])
    both = MetadataFilters(filters=[MetadataFilter(key="party", value="acme"),
                                    MetadataFilter(key="document_id", value="doc4")])
    extras: list[dict[str, Any]] = [
        {}, {"filters": doc_in}, {"filters": doc_eq}, {"filters": party}, {"filters": both},
        {"node_ids": ["n001", "n011", "n012", "n050"]}, {"doc_ids": ["doc0"]}, {"node_ids": []},
    ]
    return [VectorStoreQuery(query_embedding=q, similarity_top_k=k, **extra) for k in (1, 10, 500) for extra in extras]


def _same(a: NumpyVectorStore, b: NumpyVectorStore, queries: Sequence[VectorStoreQuery]) -> int:
    compared = 0
    for query in queries:
        ra, rb = a.query(query), b.query(query)
        assert ra.ids == rb.ids
        assert ra.similarities == rb.similarities  # exact: the same float32 arithmetic
        compared += len(ra.ids or [])
    return compared


def test_add_matrix_scores_as_add_with_filters_doc_ids_and_deletes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(numpy_store, "_NORM_ROWS", 7)  # rows normalised by blocks (4096 by default), ragged end
    dim, rng = 24, np.random.default_rng(1)
    vectors = _vectors(120, dim, seed=0)
    listed = _nodes(120)
    for node, row in zip(listed, vectors):
        node.embedding = row.astype(np.float64).tolist()  # what the list-based runner set
    by_list, by_matrix = NumpyVectorStore(), NumpyVectorStore()
    by_list.add(listed)
    matrix_nodes = _nodes(120)
    assert by_matrix.add_matrix(matrix_nodes, vectors) == [n.node_id for n in matrix_nodes]
    assert all(node.embedding is None for node in by_matrix.get_nodes())
    queries = [q for _ in range(4) for q in _queries(rng.normal(size=dim).tolist())]
    assert _same(by_list, by_matrix, queries) > 1000

    # the list-based store's arithmetic: float32 rows normalised over one matrix, one product, stable ties
    q = rng.normal(size=dim).astype(np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    expected = (vectors / np.where(norms == 0, 1.0, norms)) @ (q / np.linalg.norm(q))
    order = np.lexsort((np.arange(120), -expected))
    got = by_matrix.query(VectorStoreQuery(query_embedding=q.tolist(), similarity_top_k=120))
    assert got.ids == [f"n{i:03d}" for i in order]
    assert got.similarities == [float(expected[i]) for i in order]
    assert got.ids.index("n011") == got.ids.index("n012") - 1  # tie: doc1 (n011) before doc2 (n012)
    assert got.similarities[got.ids.index("n007")] == 0.0

    # deletes, and a second block (joined lazily into one matrix), on both stores alike
    for store in (by_list, by_matrix):
        store.delete("doc2")
    assert all(n.ref_doc_id != "doc2" for n in by_matrix.get_nodes())
    extra = _vectors(30, dim, seed=5)
    extra_listed = [TextNode(id_=f"x{i}", text="x", embedding=row.astype(np.float64).tolist()) for i, row in
                    enumerate(extra)]
    by_list.add(extra_listed)
    by_matrix.add_matrix([TextNode(id_=f"x{i}", text="x") for i in range(30)], extra)
    assert _same(by_list, by_matrix, _queries(rng.normal(size=dim).tolist())) > 0
    # a known id added again: its new vector, at its first position (as a dict keeps it)
    again = np.random.default_rng(9).normal(size=(1, dim)).astype(np.float32)
    by_list.add([TextNode(id_="n005", text="new", embedding=again[0].astype(np.float64).tolist())])
    by_matrix.add_matrix([TextNode(id_="n005", text="new")], again)
    assert [n.node_id for n in by_matrix.get_nodes()] == [n.node_id for n in by_list.get_nodes()]
    top = by_matrix.query(VectorStoreQuery(query_embedding=again[0].tolist(), similarity_top_k=1))
    assert top.ids == ["n005"] and top.nodes is not None and top.nodes[0].get_content() == "new"
    assert _same(by_list, by_matrix, _queries(rng.normal(size=dim).tolist())) > 0
    for store in (by_list, by_matrix):  # every document deleted: the document-less nodes stay
        for doc in ("doc0", "doc1", "doc3", "doc4"):
            store.delete(doc)
    assert [n.node_id for n in by_matrix.get_nodes()] == ["n005"] + [f"x{i}" for i in range(30)]
    assert _same(by_list, by_matrix, _queries(rng.normal(size=dim).tolist())) > 0


def test_add_matrix_copy_and_errors() -> None:
    vectors = _vectors(20, 8, seed=2)
    kept = vectors.copy()
    store = NumpyVectorStore()
    store.add_matrix(_nodes(20), vectors)  # copy=True: the caller's array is untouched
    assert np.array_equal(vectors, kept)
    owned = NumpyVectorStore()
    owned.add_matrix(_nodes(20), vectors, copy=False)  # handed over: normalised in place, no second matrix
    norms = np.linalg.norm(kept, axis=1, keepdims=True)
    assert np.array_equal(vectors, kept / np.where(norms == 0, 1.0, norms))
    q = VectorStoreQuery(query_embedding=[1.0] * 8, similarity_top_k=20)
    assert store.query(q).similarities == owned.query(q).similarities
    ints = NumpyVectorStore()
    ints.add_matrix(_nodes(2), np.array([[3, 4, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 1]]))
    assert ints.query(VectorStoreQuery(query_embedding=[3.0, 4.0] + [0.0] * 6, similarity_top_k=1)).similarities == [
        pytest.approx(1.0)]

    with pytest.raises(TypeError, match="matrix must be a numpy array of real numbers, got list"):
        store.add_matrix(_nodes(1), [[1.0] * 8])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="dtype <U1"):
        store.add_matrix(_nodes(1), np.array([["a"] * 8]))
    with pytest.raises(TypeError, match="BaseNode objects, got str"):
        store.add_matrix(["n0"], np.zeros((1, 8)))  # type: ignore[list-item]
    with pytest.raises(ValueError, match=r"shape \(len\(nodes\), dim\) = \(2, dim\), got \(3, 8\)"):
        store.add_matrix(_nodes(2), np.zeros((3, 8)))
    with pytest.raises(ValueError, match=r"got \(2,\)"):
        store.add_matrix(_nodes(2), np.zeros(2))
    with pytest.raises(ValueError, match="different dimensions in one NumpyVectorStore: 9 added to 8"):
        store.add_matrix(_nodes(1), np.zeros((1, 9)))
    with pytest.raises(ValueError, match="different dimensions"):
        store.add([TextNode(id_="a", text="a", embedding=[1.0, 0.0])])
    assert store.add_matrix([], np.zeros((0, 8))) == []
    empty = NumpyVectorStore()
    assert empty.query(q).ids == [] and empty.get_nodes() == []


class _LazyTexts(Sequence[str]):
    """Texts that count how often each is read by index."""

    def __init__(self, texts: list[str]) -> None:
        self.texts, self.reads = texts, [0] * len(texts)

    def __len__(self) -> int:
        return len(self.texts)

    def __getitem__(self, i: Any) -> Any:
        self.reads[i] += 1
        return self.texts[i]

    def __iter__(self) -> Iterator[str]:
        return iter(self.texts)


def test_embed_array_is_embed_as_float32_and_reads_only_the_texts_it_computes(tmp_path: Path) -> None:
    model = FakeEmbedding()
    texts = ["gamma", "alpha beta", "gamma", "delta epsilon", "alpha beta"]
    cache = EmbeddingCache(tmp_path)
    lazy = _LazyTexts(texts)
    matrix = cache.embed_array(lazy, {"m": 1}, "text", model.get_text_embedding_batch)
    assert matrix.dtype == np.float32 and matrix.shape == (5, 64) and matrix.flags.c_contiguous
    assert lazy.reads == [2, 2, 0, 2, 0]  # the 3 distinct texts: once for the length order, once to compute
    assert model.texts_embedded == ["gamma", "alpha beta", "delta epsilon"]
    assert np.array_equal(matrix[0], matrix[2]) and np.array_equal(matrix[1], matrix[4])
    assert np.array_equal(matrix[3], np.asarray(model._vector("delta epsilon"), dtype=np.float32))
    assert (cache.hits, cache.misses) == (2, 3)
    cache.close()

    again = EmbeddingCache(tmp_path)  # from disk: no text read by index, nothing computed
    lazy = _LazyTexts(texts + ["zeta"])
    second = again.embed_array(lazy, {"m": 1}, "text", model.get_text_embedding_batch)
    assert lazy.reads == [0, 0, 0, 0, 0, 2] and model.texts_embedded[-1] == "zeta"
    assert np.array_equal(second[:5], matrix)
    listed = again.embed(texts, {"m": 1}, "text", model.get_text_embedding_batch)
    assert listed == matrix.astype(np.float64).tolist()  # the list API: the same float32 values
    assert again.embed([], {"m": 1}, "text", model.get_text_embedding_batch) == []
    assert again.embed_array([], {"m": 1}, "text", model.get_text_embedding_batch).shape == (0, 0)
    with pytest.raises(RuntimeError, match="computed embedding of dimension 3 among vectors of dimension 64"):
        again.embed_array(["gamma", "new text"], {"m": 1}, "text", lambda batch: [[0.0, 1.0, 0.0]] * len(batch))
    again.close()


@pytest.mark.parametrize("spec", ["baseline", "sac-doc", "sac:retrieval=hybrid"])
def test_runner_retriever_over_a_matrix_ranks_as_the_list_based_one(tmp_path: Path, spec: str) -> None:
    """The runner's retriever (nodes without ``embedding`` + a float32 matrix) against the list-based
    ``factories.build_retriever``: the same nodes and the same scores for every query."""
    config = parse_config(spec)
    benchmark, model = synthetic_contracts(12), FakeEmbedding()
    documents = benchmark.to_documents(embed_metadata_keys=config.augmentation.embed_metadata)
    assert isinstance(config.parser, RecursiveParserSettings)
    parser = RecursiveCharacterNodeParser(chunk_size=config.parser.chunk_size,
                                          chunk_overlap=config.parser.chunk_overlap)

    def parsed() -> list[Any]:
        nodes = parser.get_nodes_from_documents(documents)
        if config.summarizer.kind != "none":
            SummaryAugmentationTransformation(cache_dir=str(tmp_path / "summaries"))(nodes, documents=documents)
        return nodes

    cache = EmbeddingCache(tmp_path)
    listed, streamed = parsed(), parsed()
    texts = [n.get_content(metadata_mode=MetadataMode.EMBED) for n in listed]
    for node, vector in zip(listed, cache.embed(texts, {"m": 1}, "text", model.get_text_embedding_batch)):
        node.embedding = vector
    matrix = cache.embed_array(texts, {"m": 1}, "text", model.get_text_embedding_batch)
    cache.close()
    old = factories.build_retriever(config, listed, model, 16)
    new = factories.build_retriever(config, streamed, model, 16, vectors=matrix)
    assert all(node.embedding is None for node in streamed)
    for query in benchmark.queries:
        embedding = model.get_query_embedding(query.query)
        a = old.retrieve(QueryBundle(query_str=query.query, embedding=embedding))
        b = new.retrieve(QueryBundle(query_str=query.query, embedding=embedding))
        assert [(h.node.node_id, h.score) for h in a] == [(h.node.node_id, h.score) for h in b]
        assert len(b) == 16


@pytest.mark.slow  # many processes or a large input: minutes in the whole suite
def test_a_run_holds_no_float_lists_and_one_configuration_at_a_time(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Bound on the peak traced memory of a cached run of baseline + SAC on synthetic_contracts(40), dim 384.

    What the run must hold at its peak (the retrieval of the second configuration), each measured below the same way
    (under tracemalloc, after a warm-up run that filled the caches and imported everything):

    * ``nodes_bytes``: one configuration's parsed and augmented nodes (the store keeps them; no copy);
    * ``2 * n * 384 * 4``: its float32 matrix (the cache's output, handed over to the store and normalised in place)
      and as much again for the transients of the cache lookup and of the queries;
    * ``results_bytes``: the results of the run as pydantic models (the first configuration's, kept, and the
      second one's, being built from its plain dicts);
    * 1 MiB for the rest (LlamaIndex's index and retriever objects, the query vectors, the run's bookkeeping).

    The list-based runner held ``n * 384 * 32`` bytes more per configuration (an 8-byte pointer and a 24-byte float
    object per value: 4.4 MiB for the 378 chunks here, twice the 2.1 MiB left under the bound of 6.8 MiB) and a copy
    of every node in the index: its peak here was 13.9 MiB, against 4.7 MiB now. Whether each configuration's store
    is freed before the next one starts is checked with weak references.
    """
    benchmark, model = synthetic_contracts(40), FakeEmbedding384()
    configs = [parse_config("baseline"), parse_config("sac")]
    settings = RunSettings(ks=[1, 4, 16], cache_dir=tmp_path, show_progress=False, retrieval_threads=1)
    warm = run_evaluation(benchmark, configs, settings, embed_model=model)  # fills the caches, imports everything
    n = warm.configs[0].n_chunks
    assert n == warm.configs[1].n_chunks == 378

    documents = benchmark.to_documents()
    gc.collect()
    tracemalloc.start()
    nodes = RecursiveCharacterNodeParser()(documents)
    SummaryAugmentationTransformation(cache_dir=str(tmp_path / "summaries"))(nodes, documents=documents)
    gc.collect()
    nodes_bytes = tracemalloc.get_traced_memory()[0]
    del nodes
    gc.collect()
    base = tracemalloc.get_traced_memory()[0]
    copy = type(warm).model_validate(warm.model_dump())
    results_bytes = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    del copy
    bound = nodes_bytes + 2 * n * 384 * 4 + results_bytes + 2**20

    stores: list[weakref.ref[NumpyVectorStore]] = []
    stored_without_embedding: list[int] = []
    alive_at_start: list[int] = []
    add_matrix = NumpyVectorStore.add_matrix

    def recording(self: NumpyVectorStore, *args: Any, **kwargs: Any) -> list[str]:  # the real method, observed
        ids = add_matrix(self, *args, **kwargs)
        stores.append(weakref.ref(self))
        stored_without_embedding.append(sum(node.embedding is None for node in self.get_nodes()))
        return ids

    def log(line: str) -> None:
        if line.startswith("configuration "):
            alive_at_start.append(sum(ref() is not None for ref in stores))

    monkeypatch.setattr(NumpyVectorStore, "add_matrix", recording)
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    results = run_evaluation(benchmark, configs, settings, log=log, embed_model=model)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()

    assert [c.chunks_embedded for c in results.configs] == [0, 0]  # a cached run: nothing computed
    assert [c.aggregates for c in results.configs] == [c.aggregates for c in warm.configs]
    assert stored_without_embedding == [n, n]  # every stored node without a Python list
    assert alive_at_start == [0, 0]  # the first configuration's store is gone before the second starts
    gc.collect()
    assert all(ref() is None for ref in stores)
    assert peak < bound, (f"peak traced {peak / 2**20:.2f} MiB >= bound {bound / 2**20:.2f} MiB (nodes "
                          f"{nodes_bytes / 2**20:.2f} MiB, results {results_bytes / 2**20:.2f} MiB)")
