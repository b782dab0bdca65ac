"""What the retrievers need from LlamaIndex that its public API does not give, in one place: a
``VectorStoreIndex``'s embedding model, and the index and filters a ``VectorIndexRetriever`` was made with.

These read private attributes of llama-index-core (``VectorStoreIndex._embed_model``,
``VectorIndexRetriever._index`` and ``._filters``); ``tests/retrievers/test_llamaindex_adapter.py`` checks them
against the installed core, so a core release that moves them fails that test, not a user's query.
"""

from __future__ import annotations

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.indices.vector_store import VectorStoreIndex
from llama_index.core.indices.vector_store.retrievers import VectorIndexRetriever
from llama_index.core.vector_stores import MetadataFilters

__all__ = ["embed_model_of", "index_of"]


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
