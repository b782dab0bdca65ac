"""``node_locations`` (the node id -> span map, from real stores: NumpyVectorStore, Chroma and Qdrant on disk, a
docstore, an index, plain nodes) and ``gold_span`` (a quoted answer -> its exact span), with hand-worked values and
every error case. No mocks: the stores are real; two thin recording proxies only count the page requests."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llama_index.core import Document, StorageContext, VectorStoreIndex
from llama_index.core.evaluation import RetrieverEvaluator
from llama_index.core.evaluation.retrieval.metrics_base import BaseRetrievalMetric
from llama_index.core.schema import NodeRelationship, NodeWithScore, RelatedNodeInfo, TextNode
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.vector_stores import SimpleVectorStore

from llama_index_sac import NumpyVectorStore, RecursiveCharacterNodeParser
from llama_index_sac.evaluation.evaluator import NodeLocationError
from llama_index_sac.evaluation.llamaindex_metrics import DRMMetric, SpanPrecisionMetric, SpanRecallMetric, gold_span_id
from llama_index_sac.evaluation.locations import gold_span, node_locations
from llama_index_sac.evaluation.metrics import LocatedSpan
from tests.conftest import FakeEmbedding

DOCS = {"a.txt": "Alpha one. Alpha two. Alpha three.", "b.txt": "Beta one.\n\nBeta two is longer."}
# RecursiveCharacterNodeParser(chunk_size=12): ". " then " " separators, the separator kept at the chunk's end
EXPECTED = {
    ("a.txt", 0, 11), ("a.txt", 11, 22), ("a.txt", 22, 34),  # "Alpha one. " | "Alpha two. " | "Alpha three."
    ("b.txt", 0, 11), ("b.txt", 11, 23), ("b.txt", 23, 30),  # "Beta one.\n\n" | "Beta two is " | "longer."
}


@pytest.fixture
def nodes() -> list[TextNode]:
    documents = [Document(text=text, id_=doc_id) for doc_id, text in DOCS.items()]
    out = RecursiveCharacterNodeParser(chunk_size=12, chunk_overlap=0).get_nodes_from_documents(documents)
    assert all(isinstance(n, TextNode) for n in out)
    return out  # type: ignore[return-value]


@pytest.fixture
def reference(nodes: list[TextNode]) -> dict[str, LocatedSpan]:
    """The map as read off the nodes themselves, checked against the hand-worked spans and the documents."""
    ref = {n.node_id: LocatedSpan(n.ref_doc_id or "", n.start_char_idx or 0, n.end_char_idx or 0) for n in nodes}
    assert set(ref.values()) == EXPECTED
    for node in nodes:
        span = ref[node.node_id]
        assert DOCS[span.doc_id][span.start:span.end] == node.text
    return ref


def _index(nodes: list[TextNode], vector_store: Any = None) -> VectorStoreIndex:
    storage = StorageContext.from_defaults(vector_store=vector_store) if vector_store is not None else None
    return VectorStoreIndex(nodes, embed_model=FakeEmbedding(), storage_context=storage)


# -- node_locations: every kind of source gives the same, exact map --------------------------------------------------
def test_plain_nodes_and_retrieved_nodes(nodes: list[TextNode], reference: dict[str, LocatedSpan]) -> None:
    located = node_locations(nodes)
    assert located == reference
    assert all(type(span) is LocatedSpan for span in located.values())
    assert node_locations(iter(nodes)) == reference  # any iterable, read once
    assert node_locations(NodeWithScore(node=n, score=0.5) for n in nodes) == reference
    assert node_locations([]) == {}


def test_numpy_vector_store_and_the_indexes(nodes: list[TextNode], reference: dict[str, LocatedSpan]) -> None:
    store = NumpyVectorStore()
    index = _index(nodes, store)
    assert node_locations(store) == reference
    assert node_locations(index) == reference  # stores_text: read from the store
    default = _index(nodes)  # SimpleVectorStore keeps only embeddings: read from the index's docstore
    assert not default.vector_store.stores_text
    assert node_locations(default) == reference


def test_docstore_and_its_docs_mapping(nodes: list[TextNode], reference: dict[str, LocatedSpan]) -> None:
    docstore = SimpleDocumentStore()
    docstore.add_documents(nodes)
    assert node_locations(docstore) == reference
    assert node_locations(docstore.docs) == reference


def test_doc_id_from_metadata_for_nodes_without_source_relationship() -> None:
    node = TextNode(text="x", id_="n1", start_char_idx=5, end_char_idx=6, metadata={"file_path": "cuad/x.txt"})
    assert node_locations([node], doc_id_metadata_key="file_path") == {"n1": LocatedSpan("cuad/x.txt", 5, 6)}


class _Recorder:
    """Forwards every attribute to the real object and records the calls of one method (name, kwargs)."""

    def __init__(self, real: Any, method: str) -> None:
        self._real, self._method = real, method
        self.calls: list[dict[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._real, name)
        if name != self._method:
            return attr

        def recorded(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(kwargs)
            return attr(*args, **kwargs)

        return recorded


@pytest.fixture
def chroma(tmp_path: Path) -> Iterator[Any]:
    chromadb = pytest.importorskip("chromadb", reason="the 'vectorstores' extra is not installed")
    pytest.importorskip("llama_index.vector_stores.chroma", reason="the 'vectorstores' extra is not installed")
    client = chromadb.PersistentClient(path=str(tmp_path / "chroma"))
    yield client
    client.close()


@pytest.fixture
def qdrant(tmp_path: Path) -> Iterator[Any]:
    qdrant_client = pytest.importorskip("qdrant_client", reason="the 'vectorstores' extra is not installed")
    pytest.importorskip("llama_index.vector_stores.qdrant", reason="the 'vectorstores' extra is not installed")
    client = qdrant_client.QdrantClient(path=str(tmp_path / "qdrant"))
    yield client
    client.close()


@pytest.mark.parametrize(("page_size", "requests"), [(4, 2), (1, 6), (512, 1)])
def test_chroma_is_read_page_by_page(chroma: Any, nodes: list[TextNode], reference: dict[str, LocatedSpan],
                                     page_size: int, requests: int) -> None:
    from llama_index.vector_stores.chroma import ChromaVectorStore

    store = ChromaVectorStore(chroma_collection=chroma.get_or_create_collection("contracts"))
    index = _index(nodes, store)
    recorder = _Recorder(store._collection, "get")
    store._collection = recorder  # type: ignore[assignment]
    assert node_locations(store, page_size=page_size) == reference
    assert [call["limit"] for call in recorder.calls] == [page_size] * requests  # 6 rows: never one giant fetch
    assert [call["offset"] for call in recorder.calls] == [page_size * i for i in range(requests)]
    store._collection = recorder._real
    # the map covers what a retriever over the store returns
    retrieved = index.as_retriever(similarity_top_k=6).retrieve("Beta two is ")
    assert {hit.node.node_id for hit in retrieved} == set(reference)


@pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")
@pytest.mark.parametrize(("page_size", "requests"), [(4, 2), (1, 6), (512, 1)])
def test_qdrant_is_scrolled_page_by_page(qdrant: Any, nodes: list[TextNode], reference: dict[str, LocatedSpan],
                                         page_size: int, requests: int) -> None:
    from llama_index.vector_stores.qdrant import QdrantVectorStore

    store = QdrantVectorStore(collection_name="contracts", client=qdrant)
    assert node_locations(store) == {}  # the collection does not exist until something is added
    index = _index(nodes, store)
    recorder = _Recorder(qdrant, "scroll")
    store._client = recorder  # type: ignore[assignment]
    assert node_locations(store, page_size=page_size) == reference
    assert [call["limit"] for call in recorder.calls] == [page_size] * requests
    store._client = qdrant
    retrieved = index.as_retriever(similarity_top_k=6).retrieve("Alpha two. ")
    assert {hit.node.node_id for hit in retrieved} == set(reference)


def test_retriever_evaluator_end_to_end_with_chroma(chroma: Any, nodes: list[TextNode]) -> None:
    """The use the helpers exist for: gold from a quote, the map from the store, LlamaIndex's RetrieverEvaluator."""
    from llama_index.vector_stores.chroma import ChromaVectorStore

    store = ChromaVectorStore(chroma_collection=chroma.get_or_create_collection("contracts"))
    retriever = _index(nodes, store).as_retriever(similarity_top_k=1)
    locations = node_locations(store)
    gold = gold_span(DOCS["b.txt"], "two is", doc_id="b.txt")
    assert gold == LocatedSpan("b.txt", 16, 22)
    metrics: list[BaseRetrievalMetric] = [
        m(node_locations=locations) for m in (SpanPrecisionMetric, SpanRecallMetric, DRMMetric)
    ]
    evaluator = RetrieverEvaluator(metrics=metrics, retriever=retriever)
    # the query is the chunk's own text, so the hashed-trigram embedding ranks chunk b.txt [11, 23) first
    result = evaluator.evaluate(query="Beta two is ", expected_ids=[gold_span_id(gold)])
    assert [locations[i] for i in result.retrieved_ids] == [LocatedSpan("b.txt", 11, 23)]
    assert result.metric_vals_dict == {"span_precision": 6 / 12, "span_recall": 1.0, "drm": 0.0}


# -- node_locations: errors -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("source", [42, "nodes", b"nodes", None, 3.5])
def test_not_a_source_is_a_type_error_naming_it(source: Any) -> None:
    with pytest.raises(TypeError, match=f"node_locations\\(\\) takes .*; got {type(source).__name__}"):
        node_locations(source)


def test_items_that_are_not_nodes(nodes: list[TextNode]) -> None:
    with pytest.raises(TypeError, match=r"item 1 of the list is a str \('oops'\), not a node"):
        node_locations([nodes[0], "oops"])
    with pytest.raises(TypeError, match=r"item 0 of the dict is a int"):
        node_locations({"n": 3})


def test_a_store_without_the_nodes(nodes: list[TextNode]) -> None:
    store = SimpleVectorStore()
    _index(nodes, store)
    with pytest.raises(TypeError, match="SimpleVectorStore keeps only embeddings, not the nodes"):
        node_locations(store)


@pytest.mark.parametrize(("page_size", "error"), [(0, ValueError), (-3, ValueError), (True, TypeError),
                                                  (2.0, TypeError)])
def test_bad_page_size(nodes: list[TextNode], page_size: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="page_size"):
        node_locations(nodes, page_size=page_size)


def test_bad_doc_id_metadata_key(nodes: list[TextNode]) -> None:
    with pytest.raises(TypeError, match="doc_id_metadata_key must be a str or None, got int"):
        node_locations(nodes, doc_id_metadata_key=1)  # type: ignore[arg-type]


def test_nodes_that_cannot_be_located() -> None:
    orphan = TextNode(text="x", id_="orphan", start_char_idx=0, end_char_idx=1)
    with pytest.raises(NodeLocationError, match="node 'orphan' cannot be scored, it lacks a document id"):
        node_locations([orphan])
    no_offsets = TextNode(text="x", id_="loose")
    no_offsets.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id="d.txt")
    with pytest.raises(ValueError, match="node 'loose' cannot be scored, it lacks character offsets"):
        node_locations([no_offsets])


def test_a_docstore_of_whole_documents() -> None:
    docstore = SimpleDocumentStore()
    docstore.add_documents([Document(text="whole", id_="d.txt")])
    with pytest.raises(ValueError, match="SimpleDocumentStore holds the whole document 'd.txt', not a chunk"):
        node_locations(docstore)


def test_one_id_with_two_locations() -> None:
    def node(start: int) -> TextNode:
        n = TextNode(text="x", id_="same", start_char_idx=start, end_char_idx=start + 1)
        n.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id="d.txt")
        return n

    assert node_locations([node(0), node(0)]) == {"same": LocatedSpan("d.txt", 0, 1)}  # a repeat is harmless
    with pytest.raises(ValueError, match=r"node id 'same' appears twice .* \('d.txt', 0, 1\) and \('d.txt', 4, 5\)"):
        node_locations([node(0), node(4)])


def test_a_chroma_row_not_written_by_llamaindex(chroma: Any, nodes: list[TextNode]) -> None:
    from llama_index.vector_stores.chroma import ChromaVectorStore

    collection = chroma.get_or_create_collection("contracts")
    store = ChromaVectorStore(chroma_collection=collection)
    _index(nodes, store)
    collection.add(ids=["foreign-row"], embeddings=[[0.0] * 64], metadatas=[{"source": "elsewhere"}],
                   documents=["text"])
    with pytest.raises(ValueError, match="row 'foreign-row' of the ChromaVectorStore has no '_node_content'"):
        node_locations(store)


# -- gold_span --------------------------------------------------------------------------------------------------------
LAW = "ARTICLE 9.\nThis Agreement is governed by the laws of the State of Delaware.\nARTICLE 10.\n"


def test_the_exact_span_of_a_quote() -> None:
    span = gold_span(LAW, "governed by the laws of the State of Delaware", doc_id="nda/x.txt")
    # "ARTICLE 9.\n" is 11 characters, "This Agreement is " 18; the quote 9+3+4+5+3+4+6+3+8 = 45
    assert span == LocatedSpan("nda/x.txt", 29, 74)
    assert LAW[span.start:span.end] == "governed by the laws of the State of Delaware"
    assert gold_span("ééé ü", "ü", doc_id="d") == LocatedSpan("d", 4, 5)  # characters, not bytes


def test_absent_quote_names_the_document_and_the_nearest_match() -> None:
    # LAW is 11 + 65 + 12 = 88 characters; "the laws of the State of " (25 characters) starts at 11 + 30 = 41
    with pytest.raises(ValueError, match=re.escape(
        "quote 'the laws of the State of New York' not found in doc_id 'nda/x.txt' (88 characters); its first 25 "
        "of 33 characters are at offset 41, then the document reads 'Delaware.\\nARTICLE 10.\\n' where the quote "
        "reads 'New York'"
    )):
        gold_span(LAW, "the laws of the State of New York", doc_id="nda/x.txt")
    with pytest.raises(ValueError, match=r"not found in doc_id 'd' .*; it matches with normalize_whitespace=True$"):
        gold_span(LAW, "Delaware. ARTICLE 10.", doc_id="d")
    with pytest.raises(ValueError, match=r"it matches if letter case is ignored"):
        gold_span(LAW, "STATE OF DELAWARE", doc_id="d")
    with pytest.raises(ValueError, match=r"^quote 'zzz' not found in doc_id 'd' \(88 characters\)$"):
        gold_span(LAW, "zzz", doc_id="d")


def test_ambiguous_quote_names_every_offset_and_occurrence_picks_one() -> None:
    with pytest.raises(ValueError, match=re.escape(
        "quote 'ARTICLE ' is ambiguous in doc_id 'd': found 2 times, at [0:8], [76:84]; pass occurrence=i"
    )):
        gold_span(LAW, "ARTICLE ", doc_id="d")
    assert gold_span(LAW, "ARTICLE ", doc_id="d", occurrence=0) == LocatedSpan("d", 0, 8)
    assert gold_span(LAW, "ARTICLE ", doc_id="d", occurrence=1) == LocatedSpan("d", 76, 84)
    with pytest.raises(ValueError, match="occurrence=2 but quote 'ARTICLE ' occurs only 2 time"):
        gold_span(LAW, "ARTICLE ", doc_id="d", occurrence=2)
    with pytest.raises(ValueError, match=re.escape("found 8 times, at [0:1], [1:2], [2:3], [3:4], [4:5], ...")):
        gold_span("a" * 8, "a", doc_id="d")
    # overlapping occurrences count: "aa" starts at 0, 1 and 2 of "aaaa"
    with pytest.raises(ValueError, match=re.escape("found 3 times, at [0:2], [1:3], [2:4]")):
        gold_span("aaaa", "aa", doc_id="d")
    assert gold_span("aaaa", "aa", doc_id="d", occurrence=2) == LocatedSpan("d", 2, 4)


def test_whitespace_normalization_keeps_the_original_offsets() -> None:
    text = "Section 2.\tThe  term is\r\n  three\u00a0years.\n\nSection 3."
    quote = "  The term is three years. "
    span = gold_span(text, quote, doc_id="d", normalize_whitespace=True)
    # "Section 2.\t" is 11 characters; then The(3) + 2 + term(4) + 1 + is(2) + 4 + three(5) + 1 + years.(6) = 28
    assert span == LocatedSpan("d", 11, 39)
    assert text[span.start:span.end] == "The  term is\r\n  three\u00a0years."
    with pytest.raises(ValueError, match="not found"):  # off unless asked for
        gold_span(text, quote, doc_id="d")
    with pytest.raises(ValueError, match=re.escape("found 2 times, at [0:7], [41:48]")):  # "\n\n" at 39-40
        gold_span(text, "Section\n", doc_id="d", normalize_whitespace=True)
    assert gold_span(text, "Section", doc_id="d", occurrence=1, normalize_whitespace=True) == LocatedSpan("d", 41, 48)


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"text": 3}, TypeError, "text must be a str, got int"),
    ({"quote": None}, TypeError, "quote must be a str, got NoneType"),
    ({"doc_id": 7}, TypeError, "doc_id must be a str, got int"),
    ({"doc_id": ""}, ValueError, "doc_id must be a non-empty string"),
    ({"quote": ""}, ValueError, "the quote for 'd' is empty"),
    ({"quote": " \n\t", "normalize_whitespace": True}, ValueError, "is empty once whitespace is normalized"),
    ({"occurrence": True}, TypeError, "occurrence must be an int or None, got bool"),
    ({"occurrence": "1"}, TypeError, "occurrence must be an int or None, got str"),
    ({"occurrence": -1}, ValueError, "occurrence must be >= 0, got -1"),
])
def test_bad_arguments(kwargs: dict[str, Any], error: type[Exception], message: str) -> None:
    arguments: dict[str, Any] = {"text": LAW, "quote": "Delaware", "doc_id": "d", **kwargs}
    with pytest.raises(error, match=re.escape(message)):
        gold_span(**arguments)


def _naive_starts(text: str, quote: str) -> list[int]:
    return [i for i in range(len(text) - len(quote) + 1) if text[i:i + len(quote)] == quote]


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="ab", max_size=40), data=st.data())
def test_occurrences_match_a_naive_search(text: str, data: st.DataObject) -> None:
    """Every occurrence, overlapping ones included, in order (periodic quotes such as "abab" exercise the runs)."""
    quote = data.draw(st.text(alphabet="ab", min_size=1, max_size=6))
    starts = _naive_starts(text, quote)
    for i, start in enumerate(starts):
        assert gold_span(text, quote, doc_id="d", occurrence=i) == LocatedSpan("d", start, start + len(quote))
    with pytest.raises(ValueError, match="not found" if not starts else f"occurs only {len(starts)} time"):
        gold_span(text, quote, doc_id="d", occurrence=len(starts))
    if len(starts) > 1:
        with pytest.raises(ValueError, match=f"found {len(starts)} times"):
            gold_span(text, quote, doc_id="d")


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="ab \n\t", max_size=40), data=st.data())
def test_normalized_match_lies_on_the_original_text(text: str, data: st.DataObject) -> None:
    """A normalized match covers original text that normalizes to the quote, from a non-blank character to one."""
    flat = " ".join(text.split())
    if not flat:
        return
    i = data.draw(st.integers(0, len(flat) - 1))
    j = data.draw(st.integers(i + 1, len(flat)))
    quote = flat[i:j].replace(" ", data.draw(st.sampled_from([" ", "\n ", "\t"])))
    if not quote.strip():
        return
    span = gold_span(text, quote, doc_id="d", occurrence=0, normalize_whitespace=True)
    covered = text[span.start:span.end]
    assert " ".join(covered.split()) == " ".join(quote.split())
    assert not covered[0].isspace() and not covered[-1].isspace()
