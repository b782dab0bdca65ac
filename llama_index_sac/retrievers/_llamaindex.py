"""What the retrievers need from LlamaIndex that its public API does not give, in one place: a
``VectorStoreIndex``'s embedding model, the index and filters a ``VectorIndexRetriever`` was made with, and a
``VectorIndexRetriever`` that does not hash the nodes it returns (:func:`dense_retriever`), its hits for a query
with an embedding straight from the store (:func:`dense_search`, :func:`adense_search`), and a node's id, document id
and text as the ranking reads them for every candidate, without the properties' cost (:func:`node_id_of`,
:func:`document_of`, :func:`text_of`).

These read private attributes of llama-index-core (``VectorStoreIndex._embed_model``, ``._callback_manager``,
``._object_map``, ``VectorIndexRetriever._index``, ``._filters`` and ``._kwargs``), call one private method
(``VectorIndexRetriever._build_vector_store_query``) and override another (``._determine_nodes_to_fetch``);
``tests/retrievers/test_llamaindex_adapter.py`` checks them against the installed core, so a core release that
moves them fails that test, not a user's query.
"""

from __future__ import annotations

from typing import Any, TypeGuard

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.indices.vector_store import VectorStoreIndex
from llama_index.core.indices.vector_store.retrievers import VectorIndexRetriever
from llama_index.core.schema import (
    BaseNode,
    MetadataMode,
    NodeRelationship,
    NodeWithScore,
    ObjectType,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)
from llama_index.core.vector_stores import MetadataFilters
from llama_index.core.vector_stores.types import VectorStoreQueryResult

__all__ = ["DenseSearch", "adense_search", "dense_retriever", "dense_search", "document_of", "embed_model_of",
           "index_of", "node_id_of", "text_of"]

_NODE_ID, _SOURCE_NODE, _REF_DOC_ID = BaseNode.node_id, BaseNode.source_node, BaseNode.ref_doc_id
_GET_CONTENT = TextNode.get_content


def node_id_of(node: BaseNode) -> str:
    """``node.node_id``: the ``id_`` field itself unless the node's class redefines ``node_id``."""
    return node.id_ if type(node).node_id is _NODE_ID else node.node_id


def document_of(node: BaseNode) -> str | None:
    """``node.ref_doc_id`` (the id of the node's SOURCE relation, None without one), read from the relation itself
    unless the node's class redefines ``ref_doc_id`` or ``source_node``: the property (deprecated in llama-index-core)
    costs three times more, and the ranking reads it for every candidate.

    Raises:
        ValueError: the SOURCE relation is a list (as ``ref_doc_id`` does)."""
    kind = type(node)
    if kind.ref_doc_id is _REF_DOC_ID and kind.source_node is _SOURCE_NODE:
        relation = node.relationships.get(NodeRelationship.SOURCE)
        if relation is None:
            return None
        if isinstance(relation, RelatedNodeInfo):
            return relation.node_id
    return node.ref_doc_id


def text_of(node: BaseNode) -> str:
    """``node.get_content(metadata_mode=MetadataMode.NONE)``: a text node's ``text`` without formatting its metadata
    first, unless its class redefines ``get_content``."""
    if type(node).get_content is _GET_CONTENT:
        return node.text  # type: ignore[attr-defined, no-any-return]
    return node.get_content(metadata_mode=MetadataMode.NONE)


class _UnhashedRetriever(VectorIndexRetriever):
    """A ``VectorIndexRetriever`` that tells the nodes to fetch from the docstore by their type alone.

    llama-index-core asks each node a text-keeping store returns for ``as_related_node_info().node_type``, which also
    computes the node's hash (a sha256 of its text and metadata, summary included) and drops it: most of the time of
    a query over a few hundred chunks. ``get_type()`` is the same type without the hash, so the same nodes are
    fetched and the same hits returned."""

    def _determine_nodes_to_fetch(self, query_result: VectorStoreQueryResult) -> list[str]:
        if query_result.nodes:
            return [node.node_id for node in query_result.nodes if node.get_type() != ObjectType.TEXT]
        return super()._determine_nodes_to_fetch(query_result)


def dense_retriever(index: VectorStoreIndex, **kwargs: Any) -> BaseRetriever:
    """``index.as_retriever(**kwargs)``: the same ``VectorIndexRetriever`` (same store query, same hits, same
    callbacks), without hashing every node it returns (:class:`_UnhashedRetriever`); an index class that overrides
    ``as_retriever`` gets its own."""
    if type(index).as_retriever is not VectorStoreIndex.as_retriever:
        return index.as_retriever(**kwargs)
    return _UnhashedRetriever(index, node_ids=list(index.index_struct.nodes_dict.values()),
                              callback_manager=index._callback_manager, object_map=index._object_map, **kwargs)


def embed_model_of(index: VectorStoreIndex) -> BaseEmbedding:
    """The embedding model ``index`` embeds queries with.

    Raises:
        TypeError: ``index`` is not a ``VectorStoreIndex``, or holds no embedding model."""
    if not isinstance(index, VectorStoreIndex):
        raise TypeError(f"index must be a VectorStoreIndex, got {type(index).__name__}")
    model = getattr(index, "_embed_model", None)
    if not isinstance(model, BaseEmbedding):
        raise TypeError(f"this llama-index-core's VectorStoreIndex holds no embedding model where expected "
                        f"(got {type(model).__name__}): an unsupported llama-index-core version")
    return model


def index_of(retriever: VectorIndexRetriever) -> tuple[VectorStoreIndex, MetadataFilters | None]:
    """The index a ``VectorIndexRetriever`` searches and the metadata filters it was made with (None: none).

    Raises:
        TypeError: not a ``VectorIndexRetriever``, or an unsupported llama-index-core version."""
    if not isinstance(retriever, VectorIndexRetriever):
        raise TypeError(f"retriever must be a VectorIndexRetriever, got {type(retriever).__name__}")
    index, filters = getattr(retriever, "_index", None), getattr(retriever, "_filters", None)
    if not isinstance(index, VectorStoreIndex) or not (filters is None or isinstance(filters, MetadataFilters)):
        raise TypeError("this llama-index-core's VectorIndexRetriever keeps its index and filters elsewhere: an "
                        "unsupported llama-index-core version")
    return index, filters


def _hits(result: VectorStoreQueryResult) -> list[NodeWithScore] | None:
    """A store's answer as ``VectorIndexRetriever.retrieve`` returns it when every node is a text node the store
    keeps (each node once, its first hit, with its similarity; None when the store gave none); None when some node
    needs more (none kept, an ``IndexNode`` to retrieve from, an image): then only the retriever gives its hits."""
    if result.nodes is None or any(node.get_type() != ObjectType.TEXT for node in result.nodes):
        return None
    similarities = result.similarities
    seen: set[str] = set()
    hits = []
    for i, node in enumerate(result.nodes):
        if node.node_id not in seen:
            seen.add(node.node_id)
            hits.append(NodeWithScore(node=node, score=None if similarities is None else similarities[i]))
    return hits


def _direct(retriever: BaseRetriever, index: VectorStoreIndex,
            query_bundle: QueryBundle) -> TypeGuard[_UnhashedRetriever]:
    """Whether the store can be asked straight: our retriever, a query with its embedding, a store keeping text."""
    return (isinstance(retriever, _UnhashedRetriever) and query_bundle.embedding is not None
            and index.vector_store.stores_text)


def dense_search(index: VectorStoreIndex, query_bundle: QueryBundle, **kwargs: Any) -> list[NodeWithScore]:
    """The hits of ``dense_retriever(index, **kwargs).retrieve(query_bundle)``: for a query with its embedding over a
    store that keeps the nodes' text, the retriever's own store query and its hits, without the callback event,
    instrumentation spans and debug log a retrieval emits (those of the retriever that calls this one remain);
    otherwise (no embedding, a store without text, non-text nodes, an index class with its own ``as_retriever``)
    the retriever's ``retrieve``."""
    retriever = dense_retriever(index, **kwargs)
    if not _direct(retriever, index, query_bundle):
        return retriever.retrieve(query_bundle)
    result = index.vector_store.query(retriever._build_vector_store_query(query_bundle), **retriever._kwargs)
    hits = _hits(result)
    return retriever.retrieve(query_bundle) if hits is None else hits


async def adense_search(index: VectorStoreIndex, query_bundle: QueryBundle, **kwargs: Any) -> list[NodeWithScore]:
    """:func:`dense_search` through the store's and the retriever's async paths."""
    retriever = dense_retriever(index, **kwargs)
    if not _direct(retriever, index, query_bundle):
        return await retriever.aretrieve(query_bundle)
    result = await index.vector_store.aquery(retriever._build_vector_store_query(query_bundle), **retriever._kwargs)
    hits = _hits(result)
    return await retriever.aretrieve(query_bundle) if hits is None else hits


class DenseSearch:
    """``index.as_retriever(**kwargs)`` as :func:`dense_search` runs it: ``retrieve`` and ``aretrieve`` give that
    retriever's hits for a ``QueryBundle``."""

    def __init__(self, index: VectorStoreIndex, **kwargs: Any) -> None:
        self.index = index
        self.kwargs = kwargs

    def retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return dense_search(self.index, query_bundle, **self.kwargs)

    async def aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await adense_search(self.index, query_bundle, **self.kwargs)
