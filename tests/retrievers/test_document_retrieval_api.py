"""DocumentAwareRetriever's LlamaIndex conventions: from_defaults, wrapping retrievers (BM25, filtered), a real
aretrieve, the node-postprocessor form, and the document index persisted beside a StorageContext."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.llms import MockLLM
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.vector_stores import MetadataFilter, MetadataFilters

from llama_index_sac import DocumentAwarePostprocessor, DocumentAwareRetriever, DocumentIndex, NumpyVectorStore
from llama_index_sac.retrievers._llamaindex import embed_model_of
from llama_index_sac.retrievers.ranking import fuse
from tests.conftest import FakeEmbedding
from tests.retrievers.test_document_retrieval import SUMMARIES, build, chunk, corpus

pytest.importorskip("bm25s")

QUESTION = "Consider the NDA between Osprey Robotics and Fairhaven Software; how long is information kept secret?"


class Fixed(BaseRetriever):
    """A retriever that returns fixed hits (sync), or awaits ``gate`` first (async only: sync is refused)."""

    def __init__(self, hits: list[NodeWithScore], gate: asyncio.Event | None = None) -> None:
        super().__init__()
        self.hits, self.gate = hits, gate

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if self.gate is not None:
            raise AssertionError("the sync path was called from aretrieve")
        return list(self.hits)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if self.gate is not None:
            await self.gate.wait()  # set by another task: a blocked event loop would never get there
        return list(self.hits)


def hits(*pairs: tuple[str, float]) -> list[NodeWithScore]:
    nodes = {n.node_id: n for n in corpus()}
    return [NodeWithScore(node=nodes[node_id], score=value) for node_id, value in pairs]


def test_fuse_adds_the_weighted_prior_and_keeps_each_node_once() -> None:
    found = hits(("nda-kestrel.txt#0", 0.50), ("nda-osprey.txt#0", 0.45), ("msa-acme.txt#0", 0.40),
                 ("nda-kestrel.txt#0", 0.10))  # a node twice: its first hit counts
    fused = fuse(found, {"nda-osprey.txt": 1.0, "msa-acme.txt": 0.25}, 0.1, top_k=2)
    # 0.45 + 0.1 * 1.0 = 0.55 > 0.50 + 0 = 0.50 > 0.40 + 0.1 * 0.25 = 0.425
    assert [(h.node.node_id, round(h.score or 0, 6)) for h in fused] == [("nda-osprey.txt#0", 0.55),
                                                                          ("nda-kestrel.txt#0", 0.5)]
    tie = fuse(hits(("nda-osprey.txt#1", 0.3), ("nda-kestrel.txt#1", 0.3)), {}, 0.3, top_k=None)
    assert [h.node.node_id for h in tie] == ["nda-kestrel.txt#1", "nda-osprey.txt#1"]  # ties by node id


def test_from_defaults_over_an_index_a_store_and_a_vector_retriever() -> None:
    index = build(corpus())
    by_index = DocumentAwareRetriever.from_defaults(index, similarity_top_k=3)
    assert (by_index.options.focus_documents, by_index.options.prior_weight) == (2, 0.3)
    assert len(by_index.document_index) == 3
    first = [h.node.node_id for h in by_index.retrieve(QUESTION)]
    assert first[0] == "nda-osprey.txt#0"
    store = index.storage_context.vector_store
    by_store = DocumentAwareRetriever.from_defaults(store, embed_model=FakeEmbedding(), similarity_top_k=3)
    assert [h.node.node_id for h in by_store.retrieve(QUESTION)] == first
    by_retriever = DocumentAwareRetriever.from_defaults(index.as_retriever(similarity_top_k=1), similarity_top_k=3)
    assert [h.node.node_id for h in by_retriever.retrieve(QUESTION)] == first
    with pytest.raises(ValueError) as raised:
        DocumentAwareRetriever.from_defaults(Fixed([]))
    # the error names every way to the document index, the nodes in memory first (a BM25Retriever built from them)
    assert str(raised.value) == ("a Fixed holds no summaries to read: pass document_index= "
                                 "(DocumentIndex.from_nodes(nodes) for the SAC nodes it retrieves from, "
                                 "DocumentIndex.from_source(vector_store) or DocumentIndex.load(path))")
    with pytest.raises(TypeError, match="VectorStoreIndex or a BaseRetriever"):
        DocumentAwareRetriever(object(), by_index.document_index)  # type: ignore[arg-type]


def test_a_retriever_with_filters_keeps_them_in_every_query() -> None:
    nodes = corpus()
    for node in nodes:
        node.metadata["year"] = 2020 if node.ref_doc_id == "nda-osprey.txt" else 2024
    index = build(nodes)
    documents = DocumentIndex.from_nodes(nodes)
    recent = MetadataFilters(filters=[MetadataFilter(key="year", value=2024)])
    aware = DocumentAwareRetriever(index.as_retriever(filters=recent), documents, similarity_top_k=6)
    assert aware.filters is recent and aware.options.focus_documents == 2
    found = aware.retrieve(QUESTION)  # the prior names Osprey's NDA; the filter excludes it: no Osprey chunk
    assert found and {h.node.ref_doc_id for h in found} == {"nda-kestrel.txt", "msa-acme.txt"}


def test_it_wraps_a_bm25_retriever_and_reweighs_its_candidates() -> None:
    bm25 = pytest.importorskip("llama_index.retrievers.bm25")
    nodes = corpus()
    documents = DocumentIndex.from_nodes(nodes)
    inner = bm25.BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=6)
    plain = inner.retrieve("Confidential Information secret")
    assert {h.node.node_id for h in plain[:3]} == {f"{d}#0" for d in SUMMARIES}  # the boilerplate clause, 3 ties
    aware = DocumentAwareRetriever.from_defaults(inner, documents, similarity_top_k=3, prior_weight=10.0)
    assert aware.options.focus_documents == 0  # a BM25 retriever cannot be filtered to one document
    top = aware.retrieve("Osprey Robotics Confidential Information secret")
    assert top[0].node.node_id == "nda-osprey.txt#0"
    with pytest.raises(ValueError, match="focus_documents=2 needs a vector index"):
        DocumentAwareRetriever(inner, documents, focus_documents=2)


def test_aretrieve_awaits_the_wrapped_retriever_without_blocking_the_loop() -> None:
    documents = DocumentIndex.from_nodes(corpus())
    found = hits(("nda-kestrel.txt#0", 0.50), ("nda-osprey.txt#0", 0.45))

    async def main() -> list[NodeWithScore]:
        gate = asyncio.Event()
        aware = DocumentAwareRetriever(Fixed(found, gate), documents, similarity_top_k=2, prior_weight=0.1)
        task = asyncio.ensure_future(aware.aretrieve(QUESTION))
        await asyncio.sleep(0)
        gate.set()  # only reachable while aretrieve is suspended: the loop is free
        return await asyncio.wait_for(task, timeout=30)

    result = asyncio.run(main())
    assert [h.node.node_id for h in result] == ["nda-osprey.txt#0", "nda-kestrel.txt#0"]


def test_aretrieve_over_an_index_equals_retrieve() -> None:
    index = build(corpus())
    aware = DocumentAwareRetriever.from_defaults(index, similarity_top_k=4, prior_weight=0.1)
    sync = [(h.node.node_id, h.score) for h in aware.retrieve(QUESTION)]

    async def main() -> list[NodeWithScore]:
        return await aware.aretrieve(QUESTION)

    assert [(h.node.node_id, h.score) for h in asyncio.run(main())] == sync


def test_the_postprocessor_reranks_a_query_engines_chunks() -> None:
    index = build(corpus())
    documents = DocumentIndex.from_nodes(corpus())
    plain = index.as_query_engine(similarity_top_k=6, llm=MockLLM()).query(QUESTION)
    post = DocumentAwarePostprocessor(documents, prior_weight=1.0, top_n=2)
    engine = index.as_query_engine(similarity_top_k=6, llm=MockLLM(), node_postprocessors=[post])
    answer = engine.query(QUESTION)
    assert [h.node.ref_doc_id for h in answer.source_nodes] == ["nda-osprey.txt", "nda-osprey.txt"]
    assert [h.node.ref_doc_id for h in plain.source_nodes][:2] != ["nda-osprey.txt", "nda-osprey.txt"]
    assert post.class_name() == "DocumentAwarePostprocessor" and post.to_dict()["top_n"] == 2
    with pytest.raises(ValueError, match="needs the query"):
        post.postprocess_nodes(answer.source_nodes)
    with pytest.raises(TypeError, match="DocumentIndex"):
        DocumentAwarePostprocessor({"a": "b"})  # type: ignore[arg-type]


def test_the_document_index_is_persisted_beside_the_storage_context(tmp_path: Path) -> None:
    nodes = corpus()
    storage = StorageContext.from_defaults(vector_store=NumpyVectorStore())
    VectorStoreIndex(nodes, storage_context=storage, embed_model=FakeEmbedding())
    storage.persist(persist_dir=str(tmp_path))
    documents = DocumentIndex.from_nodes(nodes)
    assert documents.persist(tmp_path) == tmp_path / "document_index.json"
    again = DocumentIndex.from_persist_dir(tmp_path)
    assert again.summaries == documents.summaries and again.names == documents.names
    assert again.prior_of(QUESTION) == documents.prior_of(QUESTION)
    with pytest.raises(FileNotFoundError):
        DocumentIndex.from_persist_dir(tmp_path / "elsewhere")


def test_the_document_index_takes_a_documents_longest_summary() -> None:
    nodes = [chunk("nda-kestrel.txt", 0, "First clause."), chunk("nda-kestrel.txt", 1, "Second clause.")]
    nodes[0].metadata["document_summary"] = "Non-Disclosure Agreement"  # trimmed to fit the embedding limit
    assert DocumentIndex.from_nodes(nodes, names=False).summaries == {"nda-kestrel.txt": SUMMARIES["nda-kestrel.txt"]}
    only_trimmed = [TextNode(text="x", id_="n", metadata={"document_summary": ""})]
    assert DocumentIndex.from_nodes([*nodes, *only_trimmed], names=False).doc_ids == ["nda-kestrel.txt"]


def test_a_pickled_retriever_answers_the_same() -> None:
    import pickle

    retriever = DocumentAwareRetriever.from_defaults(build(corpus()), similarity_top_k=3)
    again = pickle.loads(pickle.dumps(retriever))
    assert again.index is not None and isinstance(embed_model_of(again.index), FakeEmbedding)
    assert ([(h.node.node_id, h.score) for h in again.retrieve(QUESTION)]
            == [(h.node.node_id, h.score) for h in retriever.retrieve(QUESTION)])
