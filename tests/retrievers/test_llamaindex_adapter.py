"""The adapter's reads of llama-index-core (``retrievers/_llamaindex.py``), checked against the installed core: a
core release that moves ``VectorStoreIndex._embed_model`` or ``VectorIndexRetriever._index``/``._filters`` fails
here, as does a core whose ``VectorIndexRetriever`` builds its store query, or tells the nodes to fetch, in another
way than :func:`~llama_index_sac.retrievers._llamaindex.dense_search` assumes."""

from __future__ import annotations

import asyncio

import llama_index.core
import pytest
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.callbacks import CallbackManager, CBEventType, LlamaDebugHandler
from llama_index.core.indices.vector_store.retrievers import VectorIndexRetriever
from llama_index.core.schema import (
    IndexNode,
    MetadataMode,
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)
from llama_index.core.vector_stores import FilterOperator, MetadataFilter, MetadataFilters
from llama_index.core.vector_stores.types import VectorStoreQueryResult

from llama_index_sac import NumpyVectorStore
from llama_index_sac.retrievers._llamaindex import (
    DenseSearch,
    adense_search,
    dense_retriever,
    dense_search,
    document_of,
    embed_model_of,
    index_of,
    node_id_of,
    text_of,
)
from tests.conftest import FakeEmbedding


def _index(model: FakeEmbedding) -> VectorStoreIndex:
    nodes = [TextNode(text="The Receiving Party keeps copies.", id_="a"), TextNode(text="Notices in writing.", id_="b")]
    return VectorStoreIndex(nodes, storage_context=StorageContext.from_defaults(vector_store=NumpyVectorStore()),
                            embed_model=model)


def test_the_pinned_core_is_the_one_checked() -> None:
    assert llama_index.core.__version__.startswith("0.14.")


def test_the_embedding_model_of_an_index_is_the_one_it_was_built_with() -> None:
    model = FakeEmbedding()
    index = _index(model)
    assert embed_model_of(index) is model
    assert embed_model_of(VectorStoreIndex.from_vector_store(index.vector_store, embed_model=model)) is model
    with pytest.raises(TypeError, match="^index must be a VectorStoreIndex, got str$"):
        embed_model_of("index")  # type: ignore[arg-type]


def test_the_index_and_filters_of_a_vector_index_retriever_are_those_it_was_made_with() -> None:
    index = _index(FakeEmbedding())
    recent = MetadataFilters(filters=[MetadataFilter(key="year", value=2020, operator=FilterOperator.GTE)])
    filtered, plain = index.as_retriever(similarity_top_k=2, filters=recent), index.as_retriever()
    assert isinstance(filtered, VectorIndexRetriever) and isinstance(plain, VectorIndexRetriever)
    found, filters = index_of(filtered)
    assert found is index and filters is recent
    assert index_of(plain) == (index, None)
    with pytest.raises(TypeError, match="^retriever must be a VectorIndexRetriever, got VectorStoreIndex$"):
        index_of(index)  # type: ignore[arg-type]


# -- the dense searches of DocumentAwareRetriever: index.as_retriever's hits, straight from the store -------------


def _documents_index(store: NumpyVectorStore | None = None) -> VectorStoreIndex:
    """Six chunks of three documents (SOURCE relationships), over ``store`` (None: LlamaIndex's default, which keeps
    no text)."""
    nodes = []
    for doc in ("nda-a.txt", "nda-b.txt", "msa-c.txt"):
        for i, text in enumerate(("The Receiving Party keeps copies of Confidential Information.",
                                  "Notices are given in writing to the addresses above.")):
            node = TextNode(text=f"{doc}: {text}", id_=f"{doc}#{i}", metadata={"year": 2019 + i})
            node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=doc)
            nodes.append(node)
    context = StorageContext.from_defaults(vector_store=store) if store is not None else None
    return VectorStoreIndex(nodes, storage_context=context, embed_model=FakeEmbedding())


def _pairs(hits: list[NodeWithScore]) -> list[tuple[str, float | None]]:
    return [(hit.node.node_id, hit.score) for hit in hits]


@pytest.mark.parametrize("store", ["numpy", "simple"])
def test_dense_search_gives_the_hits_of_as_retriever_with_and_without_filters(store: str) -> None:
    index = _documents_index(NumpyVectorStore() if store == "numpy" else None)
    assert index.vector_store.stores_text is (store == "numpy")  # "simple": the retriever's own path
    bundle = QueryBundle("who keeps copies?", embedding=FakeEmbedding().get_query_embedding("who keeps copies?"))
    only_b = MetadataFilters(filters=[MetadataFilter(key="ref_doc_id", value=["nda-b.txt"],
                                                     operator=FilterOperator.IN)])
    for kwargs in ({"similarity_top_k": 4}, {"similarity_top_k": 3, "filters": only_b}, {"similarity_top_k": 10}):
        expected = _pairs(index.as_retriever(**kwargs).retrieve(bundle))
        assert expected and _pairs(dense_search(index, bundle, **kwargs)) == expected
        assert _pairs(DenseSearch(index, **kwargs).retrieve(bundle)) == expected
        assert _pairs(asyncio.run(adense_search(index, bundle, **kwargs))) == expected
    assert {hit.node.ref_doc_id for hit in dense_search(index, bundle, similarity_top_k=3, filters=only_b)} == {
        "nda-b.txt"}


def test_dense_search_over_a_text_keeping_store_emits_no_retrieve_event_of_its_own() -> None:
    index = _documents_index(NumpyVectorStore())
    handler = LlamaDebugHandler()
    index._callback_manager = CallbackManager([handler])
    bundle = QueryBundle("notices", embedding=FakeEmbedding().get_query_embedding("notices"))
    index.as_retriever(similarity_top_k=2).retrieve(bundle)
    assert len(handler.get_event_pairs(CBEventType.RETRIEVE)) == 1  # LlamaIndex's retriever: one event
    dense_search(index, bundle, similarity_top_k=2)
    assert len(handler.get_event_pairs(CBEventType.RETRIEVE)) == 1  # the search: none more


def test_the_nodes_to_fetch_are_those_of_llamaindex_without_hashing() -> None:
    index = _documents_index(NumpyVectorStore())
    text = TextNode(text="kept", id_="t")
    link = IndexNode(text="a link", id_="i", index_id="other")
    result = VectorStoreQueryResult(nodes=[text, link], similarities=[0.5, 0.4], ids=["t", "i"])
    ours, theirs = dense_retriever(index, similarity_top_k=2), index.as_retriever(similarity_top_k=2)
    assert isinstance(ours, VectorIndexRetriever) and isinstance(theirs, VectorIndexRetriever)
    assert type(ours) is not type(theirs)
    assert ours._determine_nodes_to_fetch(result) == theirs._determine_nodes_to_fetch(result) == ["i"]


def test_an_index_class_with_its_own_as_retriever_gets_its_own() -> None:
    class Custom(VectorStoreIndex):
        def as_retriever(self, **kwargs: object) -> VectorIndexRetriever:
            return VectorIndexRetriever(self, similarity_top_k=1)  # one hit, whatever is asked

    plain = _documents_index(NumpyVectorStore())
    index = Custom(nodes=None, index_struct=plain.index_struct, storage_context=plain.storage_context,
                   embed_model=FakeEmbedding())
    bundle = QueryBundle("notices", embedding=FakeEmbedding().get_query_embedding("notices"))
    assert type(dense_retriever(index, similarity_top_k=4)) is VectorIndexRetriever
    assert len(dense_search(index, bundle, similarity_top_k=4)) == 1
    assert len(dense_search(plain, bundle, similarity_top_k=4)) == 4


# -- a node's id, document id and text as the ranking reads them ---------------------------------------------------


def _sourced(node_id: str, doc: str | None, text: str = "the text") -> TextNode:
    node = TextNode(id_=node_id, text=text, metadata={"title": "Shown to embedders"})
    if doc is not None:
        node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=doc)
    return node


def test_node_id_document_and_text_are_the_properties_values() -> None:
    node = _sourced("nda#3", "nda.txt", "Clause 3. Copies.")
    assert (node_id_of(node), document_of(node), text_of(node)) == ("nda#3", "nda.txt", "Clause 3. Copies.")
    assert text_of(node) == node.get_content(metadata_mode=MetadataMode.NONE)
    assert "Shown to embedders" in node.get_content(metadata_mode=MetadataMode.ALL)  # the metadata stays out
    orphan = _sourced("loose#0", None)
    assert document_of(orphan) is None and orphan.ref_doc_id is None  # no SOURCE relation: no document
    other = _sourced("nda#4", "nda.txt")
    other.relationships[NodeRelationship.PARENT] = RelatedNodeInfo(node_id="nda#0")
    assert document_of(other) == "nda.txt"  # only the SOURCE relation names the document
    listed = _sourced("bad#0", None)
    listed.relationships[NodeRelationship.SOURCE] = [RelatedNodeInfo(node_id="a"), RelatedNodeInfo(node_id="b")]
    with pytest.raises(ValueError, match="single RelatedNodeInfo"):
        _ = listed.ref_doc_id
    with pytest.raises(ValueError, match="single RelatedNodeInfo"):
        document_of(listed)  # the property's error, not a silent None


def test_a_node_class_that_redefines_them_is_asked() -> None:
    class Renamed(TextNode):
        @property  # type: ignore[misc]
        def node_id(self) -> str:
            return "renamed:" + self.id_

        @property
        def ref_doc_id(self) -> str | None:
            return "always.txt"

        def get_content(self, metadata_mode: MetadataMode = MetadataMode.NONE) -> str:
            return self.text.upper()

    node = Renamed(id_="x#0", text="lower")
    node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id="source.txt")
    assert (node_id_of(node), document_of(node), text_of(node)) == ("renamed:x#0", "always.txt", "LOWER")
    image = IndexNode(id_="i#0", text="an index node", index_id="other")
    image.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id="i.txt")
    assert (node_id_of(image), document_of(image), text_of(image)) == ("i#0", "i.txt", "an index node")
