"""``NumpyVectorStore``: an in-memory LlamaIndex vector store that keeps the embeddings in one numpy matrix.

LlamaIndex's ``SimpleVectorStore`` rebuilds a Python list of all embeddings and converts it to an array on EVERY
query, so a query costs ``O(N * d)`` Python work: about 0.4 s per query over the 26k chunks of LegalBench-RAG-mini
here, hours for a benchmark over the full corpus. This store keeps a row-normalised ``float32`` matrix (rebuilt
lazily after ``add``/``delete``), so a query is one matrix-vector product plus ``numpy.argpartition``.

Scores are cosine similarities, as with ``SimpleVectorStore``'s default mode; ties are broken by insertion order
(stable). ``node_ids``, ``doc_ids`` and metadata ``filters`` restrict the candidates as in ``SimpleVectorStore``
(its own filter function is reused; an empty id list means no restriction); other query modes raise
``NotImplementedError`` rather than being ignored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import BaseNode
from llama_index.core.vector_stores.simple import build_metadata_filter_fn
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    FilterOperator,
    MetadataFilter,
    VectorStoreQuery,
    VectorStoreQueryMode,
    VectorStoreQueryResult,
)

__all__ = ["NumpyVectorStore"]


#: Keys under which LlamaIndex's stores write a node's document id (filters on them select documents).
_DOC_KEYS = ("ref_doc_id", "doc_id", "document_id")

class NumpyVectorStore(BasePydanticVectorStore):
    """In-memory dense vector store with exact cosine top-k (numpy), storing the nodes themselves.

    Use it wherever LlamaIndex takes a vector store::

        index = VectorStoreIndex(nodes, storage_context=StorageContext.from_defaults(vector_store=NumpyVectorStore()))

    Raises:
        ValueError: on ``add`` of a node without an embedding, or embeddings of different dimensions.
        NotImplementedError: for a query mode other than the default (dense).
    """

    stores_text: bool = True
    _nodes: dict[str, BaseNode] = PrivateAttr(default_factory=dict)
    _ids: list[str] = PrivateAttr(default_factory=list)
    _matrix: np.ndarray | None = PrivateAttr(default=None)
    _rows_of: dict[str, np.ndarray] | None = PrivateAttr(default=None)

    @classmethod
    def class_name(cls) -> str:
        return "NumpyVectorStore"

    @property
    def client(self) -> None:
        return None

    def add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
        """Store ``nodes`` (each with ``node.embedding``, a list of floats); returns their ids."""
        for node in nodes:
            if node.embedding is None:
                raise ValueError(f"node {node.node_id!r} has no embedding: embed it before adding it to the store")
            self._nodes[node.node_id] = node
        self._matrix = None
        return [node.node_id for node in nodes]

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Remove every node whose source document is ``ref_doc_id``."""
        doomed = [node_id for node_id, node in self._nodes.items() if node.ref_doc_id == ref_doc_id]
        for node_id in doomed:
            del self._nodes[node_id]
        if doomed:
            self._matrix = None

    def get_nodes(self, node_ids: list[str] | None = None, filters: Any = None) -> list[BaseNode]:
        """The stored nodes (all, or those of ``node_ids``), in insertion order; ``filters`` is not supported.

        Raises:
            NotImplementedError: ``filters`` given."""
        if filters is not None:
            raise NotImplementedError("NumpyVectorStore.get_nodes does not take filters")
        wanted = set(node_ids) if node_ids is not None else None
        return [node for node_id, node in self._nodes.items() if wanted is None or node_id in wanted]

    def _ensure_matrix(self) -> np.ndarray:
        if self._matrix is None:
            self._ids = list(self._nodes)
            vectors = [self._nodes[node_id].embedding for node_id in self._ids]
            if len({len(v) for v in vectors if v is not None}) > 1:
                raise ValueError("embeddings of different dimensions in one NumpyVectorStore")
            matrix = np.asarray(vectors, dtype=np.float32).reshape(len(self._ids), -1)
            norms = np.linalg.norm(matrix, axis=1, keepdims=True)
            self._matrix = matrix / np.where(norms == 0, 1.0, norms)
            self._rows_of = None
        return self._matrix

    def _doc_rows(self) -> dict[str, np.ndarray]:
        """Row indices of each document (``ref_doc_id``), built with the matrix."""
        if self._rows_of is None:
            rows: dict[str, list[int]] = {}
            for i, node_id in enumerate(self._ids):
                rows.setdefault(self._nodes[node_id].ref_doc_id or "", []).append(i)
            self._rows_of = {doc: np.asarray(r, dtype=np.int64) for doc, r in rows.items()}
        return self._rows_of

    def _metadata(self, node_id: str) -> dict[str, Any]:
        """What metadata filters see: the node's metadata plus its document id under the keys LlamaIndex's stores
        write (``ref_doc_id``, ``doc_id``, ``document_id``), so a filter on the document works as in Chroma/Qdrant."""
        node = self._nodes[node_id]
        doc_id = node.ref_doc_id
        return {**node.metadata, **({k: doc_id for k in _DOC_KEYS} if doc_id is not None else {})}

    def _candidates(self, query: VectorStoreQuery) -> np.ndarray | None:
        """Boolean mask of the rows a query may return, or ``None`` for all of them."""
        # An EMPTY node_ids/doc_ids list means no restriction: VectorStoreIndex.as_retriever passes node_ids=[] to
        # stores that keep the text (their nodes are not in its index struct), as other text-storing stores assume.
        if not query.node_ids and not query.doc_ids and query.filters is None:
            return None
        doc_ids = set(query.doc_ids) if query.doc_ids else None
        filters = query.filters
        if filters is not None and len(filters.filters) == 1 and isinstance(filters.filters[0], MetadataFilter):
            only = filters.filters[0]  # one filter on the document id: rows by document, no scan
            if only.key in _DOC_KEYS and only.operator in (FilterOperator.IN, FilterOperator.EQ):
                values = only.value if only.operator == FilterOperator.IN else [only.value]
                wanted = {str(v) for v in values} if isinstance(values, list) else {str(values)}
                doc_ids = wanted if doc_ids is None else doc_ids & wanted
                filters = None
        if not query.node_ids and filters is None and doc_ids is not None:
            mask = np.zeros(len(self._ids), dtype=bool)
            rows = self._doc_rows()
            for doc in doc_ids:
                if doc in rows:
                    mask[rows[doc]] = True
            return mask
        node_ids = set(query.node_ids) if query.node_ids else None
        keep = build_metadata_filter_fn(self._metadata, filters)
        mask = np.fromiter(
            (
                (node_ids is None or node_id in node_ids)
                and (doc_ids is None or self._nodes[node_id].ref_doc_id in doc_ids)
                and keep(node_id)
                for node_id in self._ids
            ),
            dtype=bool,
            count=len(self._ids),
        )
        return None if mask.all() else mask

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """Exact cosine top-``query.similarity_top_k`` for ``query.query_embedding``."""
        if query.mode != VectorStoreQueryMode.DEFAULT:
            raise NotImplementedError(f"NumpyVectorStore supports the default (dense) mode only, not {query.mode}")
        if query.query_embedding is None:
            raise ValueError("the query has no embedding")
        matrix = self._ensure_matrix()
        q = np.asarray(query.query_embedding, dtype=np.float32)
        norm = float(np.linalg.norm(q))
        unit = q / norm if norm else q
        allowed = self._candidates(query)
        # a filter scores only the rows it allows (a document filter: a few hundred rows of a large index)
        rows = None if allowed is None else np.flatnonzero(allowed)
        scores = matrix @ unit if rows is None else matrix[rows] @ unit
        k = min(query.similarity_top_k, len(scores))
        if k <= 0:
            return VectorStoreQueryResult(nodes=[], similarities=[], ids=[])
        top = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
        top = top[np.lexsort((top, -scores[top]))]  # by score, then insertion order (rows are ascending)
        index = top if rows is None else rows[top]
        ids = [self._ids[i] for i in index]
        return VectorStoreQueryResult(
            nodes=[self._nodes[i] for i in ids], similarities=[float(scores[i]) for i in top], ids=ids
        )
