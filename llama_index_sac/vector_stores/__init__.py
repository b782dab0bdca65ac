"""Vector stores: :class:`NumpyVectorStore`, exact cosine top-k in memory."""

from llama_index_sac.vector_stores.numpy_store import (
    NumpyVectorStore,
)

__all__ = [
    "NumpyVectorStore",
]
