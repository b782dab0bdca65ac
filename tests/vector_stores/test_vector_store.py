"""NumpyVectorStore: same top-k as LlamaIndex's SimpleVectorStore, inside a VectorStoreIndex, clear errors."""

from __future__ import annotations

import numpy as np
import pytest
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.core.vector_stores.types import (
    ExactMatchFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
)

from llama_index_sac.vector_stores.numpy_store import NumpyVectorStore
from tests.conftest import FakeEmbedding


def _nodes(n: int, dim: int, seed: int) -> list[TextNode]:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n, dim))
    return [TextNode(id_=f"n{i}", text=f"chunk {i}", embedding=v.tolist()) for i, v in enumerate(vectors)]


@pytest.mark.parametrize("k", [1, 5, 50, 500])
def test_same_top_k_as_simple_vector_store(k):
    nodes = _nodes(300, 16, seed=k)
    ours, simple = NumpyVectorStore(), SimpleVectorStore()
    ours.add(nodes)
    simple.add(nodes)
    rng = np.random.default_rng(99)
    for _ in range(10):
        query = VectorStoreQuery(query_embedding=rng.normal(size=16).tolist(), similarity_top_k=k)
        a, b = ours.query(query), simple.query(query)
        assert a.ids == b.ids
        assert a.similarities is not None and b.similarities is not None
        assert np.allclose(a.similarities, b.similarities, atol=1e-5)
        assert a.nodes is not None and [n.node_id for n in a.nodes] == a.ids


def test_ties_by_insertion_order_and_delete():
    nodes = [TextNode(id_=f"n{i}", text="x", embedding=[1.0, 0.0]) for i in range(4)]
    for i, node in enumerate(nodes):
        node.relationships = {}
        node.metadata = {"i": i}
    store = NumpyVectorStore()
    store.add(nodes)
    assert store.query(VectorStoreQuery(query_embedding=[1.0, 0.0], similarity_top_k=3)).ids == ["n0", "n1", "n2"]
    doc_node = TextNode(id_="d", text="y", embedding=[0.0, 1.0])
    doc_node.relationships = {}
    store.add([doc_node])
    assert store.query(VectorStoreQuery(query_embedding=[0.0, 1.0], similarity_top_k=1)).ids == ["d"]


def test_ties_by_document_then_offset_whatever_the_insertion_order():
    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo

    def node(doc: str, start: int, vector: list[float]) -> TextNode:
        made = TextNode(id_=f"{doc}@{start}", text="MUTUAL NON-DISCLOSURE AGREEMENT", embedding=vector,
                        start_char_idx=start, end_char_idx=start + 31)
        made.relationships = {NodeRelationship.SOURCE: RelatedNodeInfo(node_id=doc)}
        return made

    tied = [node("b.txt", 900, [1.0, 0.0]), node("b.txt", 0, [1.0, 0.0]), node("a.txt", 400, [1.0, 0.0]),
            node("a.txt", 7, [1.0, 0.0])]
    other = node("a.txt", 50, [0.6, 0.8])  # a lower score (0.6)
    query = VectorStoreQuery(query_embedding=[1.0, 0.0], similarity_top_k=3)
    expected = ["a.txt@7", "a.txt@400", "b.txt@0"]  # by document id, then start: also at the cut (the 4th is left)
    for order in ([*tied, other], [other, *reversed(tied)], [tied[2], other, tied[0], tied[3], tied[1]]):
        store = NumpyVectorStore()
        store.add(order)
        assert store.query(query).ids == expected
        assert store.query(VectorStoreQuery(query_embedding=[1.0, 0.0], similarity_top_k=5)).ids == [
            *expected, "b.txt@900", "a.txt@50"]
        filtered = VectorStoreQuery(query_embedding=[1.0, 0.0], similarity_top_k=1, doc_ids=["b.txt"])
        assert store.query(filtered).ids == ["b.txt@0"]


def test_in_a_vector_store_index(fake_embedding: FakeEmbedding):
    nodes = [TextNode(id_=f"n{i}", text=t) for i, t in enumerate(["governing law of Delaware", "notice period",
                                                                    "confidential information", "termination"])]
    index = VectorStoreIndex(
        nodes, embed_model=fake_embedding, storage_context=StorageContext.from_defaults(vector_store=NumpyVectorStore())
    )
    hits = index.as_retriever(similarity_top_k=2).retrieve("governing law of Delaware")
    assert hits[0].node.node_id == "n0" and hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert len(hits) == 2


def test_errors():
    store = NumpyVectorStore()
    with pytest.raises(ValueError, match="no embedding"):
        store.add([TextNode(id_="a", text="x")])
    store.add([TextNode(id_="a", text="x", embedding=[1.0, 0.0])])
    with pytest.raises(NotImplementedError, match="mode"):
        store.query(VectorStoreQuery(query_embedding=[1.0, 0.0], mode=VectorStoreQueryMode.MMR))
    assert store.query(VectorStoreQuery(query_embedding=[1.0, 0.0], similarity_top_k=0)).ids == []


def test_node_ids_doc_ids_and_metadata_filters_restrict_candidates():
    nodes = _nodes(40, 8, seed=3)
    for i, node in enumerate(nodes):
        node.metadata = {"party": "acme" if i % 2 else "globex"}
    ours, simple = NumpyVectorStore(), SimpleVectorStore()
    ours.add(nodes)
    simple.add(nodes)
    q = np.random.default_rng(5).normal(size=8).tolist()
    filters = MetadataFilters(filters=[ExactMatchFilter(key="party", value="acme")])
    for query in (
        VectorStoreQuery(query_embedding=q, similarity_top_k=5, filters=filters),
        VectorStoreQuery(query_embedding=q, similarity_top_k=5, node_ids=["n1", "n2", "n3"]),
    ):
        assert ours.query(query).ids == simple.query(query).ids
    unrestricted = VectorStoreQuery(query_embedding=q, similarity_top_k=5)
    assert ours.query(VectorStoreQuery(query_embedding=q, similarity_top_k=5, node_ids=[])).ids == simple.query(
        unrestricted
    ).ids
    filtered = ours.query(VectorStoreQuery(query_embedding=q, similarity_top_k=5, filters=filters)).ids
    assert filtered is not None and all(int(i[1:]) % 2 for i in filtered)


def test_get_nodes_with_ids_and_filters() -> None:
    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo
    from llama_index.core.vector_stores import MetadataFilter, MetadataFilters

    store = NumpyVectorStore()
    nodes = []
    for i, (doc, party) in enumerate([("a", "acme"), ("a", "globex"), ("b", "acme")]):
        node = TextNode(id_=f"n{i}", text=f"t{i}", embedding=[1.0, float(i)], metadata={"party": party})
        node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=doc)
        nodes.append(node)
    store.add(nodes)
    ids = [n.node_id for n in store.get_nodes(filters=MetadataFilters(filters=[MetadataFilter(key="ref_doc_id",
                                                                                              value="a")]))]
    assert ids == ["n0", "n1"]
    acme = MetadataFilters(filters=[MetadataFilter(key="party", value="acme")])
    assert [n.node_id for n in store.get_nodes(node_ids=["n1", "n2"], filters=acme)] == ["n2"]
    assert [n.node_id for n in store.get_nodes()] == ["n0", "n1", "n2"]


def test_a_pickled_store_keeps_its_nodes_and_answers_the_same() -> None:
    import pickle

    store = NumpyVectorStore()
    store.add(_nodes(40, 8, seed=3))
    again = pickle.loads(pickle.dumps(store))
    query = VectorStoreQuery(query_embedding=np.random.default_rng(5).normal(size=8).tolist(), similarity_top_k=10)
    a, b = store.query(query), again.query(query)
    assert len(a.ids or []) == 10 and a.ids == b.ids and a.similarities == b.similarities
    assert [n.get_content() for n in again.get_nodes(node_ids=["n1"])] == ["chunk 1"]


def test_a_document_filter_scores_its_rows_as_the_whole_store_does() -> None:
    """A document whose rows are one run (a view of the matrix) or split (added in two batches): each hit's score and
    the order are those of the unfiltered query over the same rows, to the bit."""
    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo
    from llama_index.core.vector_stores import FilterOperator, MetadataFilter

    nodes = _nodes(60, 24, seed=11)
    for i, node in enumerate(nodes):  # a: rows 0-19 (one run); b: rows 20-39 and 50-59 (split); c: rows 40-49
        doc = "a" if i < 20 else "c" if 40 <= i < 50 else "b"
        node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=doc)
    store = NumpyVectorStore()
    store.add(nodes[:40])
    store.add(nodes[40:])
    q = np.random.default_rng(8).normal(size=24).tolist()
    every = store.query(VectorStoreQuery(query_embedding=q, similarity_top_k=60))
    assert every.ids is not None and every.similarities is not None
    score = dict(zip(every.ids, every.similarities))
    for docs in (["a"], ["b"], ["c", "a"]):
        only = MetadataFilters(filters=[MetadataFilter(key="ref_doc_id", value=docs, operator=FilterOperator.IN)])
        got = store.query(VectorStoreQuery(query_embedding=q, similarity_top_k=7, filters=only))
        assert got.ids is not None and got.similarities is not None
        kept = [node_id for node_id in every.ids if store.get_nodes([node_id])[0].ref_doc_id in docs]
        assert got.ids == kept[:7]  # the whole store's order among the document's rows
        assert got.similarities == [score[node_id] for node_id in got.ids]  # the same float32 sums
        assert all(type(s) is float for s in got.similarities)
