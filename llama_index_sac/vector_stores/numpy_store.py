"""``NumpyVectorStore``: an in-memory LlamaIndex vector store that keeps the embeddings in one numpy matrix.

LlamaIndex's ``SimpleVectorStore`` rebuilds a Python list of all embeddings and converts it to an array on EVERY query,
so a query costs ``O(N * d)`` Python work. This store keeps a row-normalised ``float32`` matrix, so a query is one
matrix-vector product plus ``numpy.argpartition``.

Two ways in: :meth:`NumpyVectorStore.add` (LlamaIndex's: each node carries ``node.embedding``, a list of floats) and
:meth:`NumpyVectorStore.add_matrix` (nodes plus a precomputed ``(n, dim)`` matrix; the nodes need no ``embedding``, so
no Python float list is ever made: 1.5 KiB per 384-dimension row instead of about 12 KiB). Both normalise each row once
(in ``float32``: the same bits either way); the rows of several calls are joined into one matrix lazily, at the next
query after an ``add``/``delete``.

Scores are cosine similarities, as with ``SimpleVectorStore``'s default mode. Equal scores are ordered by document
id (``ref_doc_id``), then by the chunk's ``start_char_idx`` (then insertion order), also where they straddle the
``k``-th place: the order does not depend on the order the nodes were added in, and a client store's results sorted
by ``(-score, document id, start)`` come in the same order. ``node_ids``, ``doc_ids`` and metadata ``filters``
restrict the candidates as in ``SimpleVectorStore`` (its own filter function is reused; an empty id list means no
restriction); other query modes raise ``NotImplementedError`` rather than being ignored.
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
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
    VectorStoreQueryResult,
)

__all__ = ["NumpyVectorStore"]


#: Keys under which LlamaIndex's stores write a node's document id (filters on them select documents).
_DOC_KEYS = ("ref_doc_id", "doc_id", "document_id")

#: Rows normalised at a time: ``np.linalg.norm`` squares its input into a temporary of the same size, so a whole
#: matrix would need its own size again for a moment; by blocks, a few MiB. Each row's norm is the same either way.
_NORM_ROWS = 4096


def _normalise(matrix: np.ndarray) -> np.ndarray:
    """Divide each row of a C-contiguous float32 ``matrix`` by its Euclidean norm (zero rows stay zero), in place, in
    float32, by blocks of rows (the values are those of the whole-matrix ``matrix / norms``)."""
    for start in range(0, matrix.shape[0], _NORM_ROWS):
        block = matrix[start : start + _NORM_ROWS]
        norms = np.linalg.norm(block, axis=1, keepdims=True)
        np.divide(block, np.where(norms == 0, 1.0, norms), out=block)
    return matrix


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of dtype {value.dtype}"
    return type(value).__name__


class NumpyVectorStore(BasePydanticVectorStore):
    """In-memory dense vector store with exact cosine top-k (numpy), storing the nodes themselves.

    Use it wherever LlamaIndex takes a vector store::

        index = VectorStoreIndex(nodes, storage_context=StorageContext.from_defaults(vector_store=NumpyVectorStore()))

    or, with vectors already in a matrix (no ``node.embedding`` needed)::

        store = NumpyVectorStore()
        store.add_matrix(nodes, vectors)  # float32 (len(nodes), dim)
        index = VectorStoreIndex.from_vector_store(store, embed_model=embed_model)

    Raises:
        ValueError: on ``add`` of a node without an embedding, or embeddings of different dimensions.
        NotImplementedError: for a query mode other than the default (dense).
    """

    stores_text: bool = True
    _nodes: dict[str, BaseNode] = PrivateAttr(default_factory=dict)
    # normalised float32 row blocks in insertion order, with the node id of each row (a later row of an id wins)
    _blocks: list[tuple[list[str], np.ndarray]] = PrivateAttr(default_factory=list)
    _ids: list[str] = PrivateAttr(default_factory=list)
    _matrix: np.ndarray | None = PrivateAttr(default=None)
    _rows_of: dict[str, np.ndarray] | None = PrivateAttr(default=None)
    _tie_rank: np.ndarray | None = PrivateAttr(default=None)

    @classmethod
    def class_name(cls) -> str:
        return "NumpyVectorStore"

    @property
    def client(self) -> None:
        return None

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restore a pickled store whole: LlamaIndex's ``BaseComponent.__setstate__`` re-runs ``__init__`` with the
        public fields only, which would leave an unpickled store empty."""
        super().__setstate__(state)
        for key, value in (state.get("__pydantic_private__") or {}).items():
            setattr(self, key, value)

    def add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
        """Store ``nodes`` (each with ``node.embedding``, a list of floats); returns their ids.

        Raises:
            ValueError: a node without an embedding, or embeddings of different dimensions."""
        if not nodes:
            return []
        for node in nodes:
            if node.embedding is None:
                raise ValueError(f"node {node.node_id!r} has no embedding: embed it before adding it to the store")
        if len({len(node.embedding or ()) for node in nodes}) > 1:
            raise ValueError("embeddings of different dimensions in one NumpyVectorStore")
        matrix = np.asarray([node.embedding for node in nodes], dtype=np.float32).reshape(len(nodes), -1)
        return self._add_block(nodes, _normalise(matrix))

    def add_matrix(self, nodes: Sequence[BaseNode], matrix: np.ndarray, *, copy: bool = True) -> list[str]:
        """Store ``nodes`` with their vectors given as the rows of ``matrix`` (``node.embedding`` is neither read nor
        set); returns their ids. Queries score them exactly as :meth:`add` of the same vectors would.

        Args:
            nodes: the nodes, ``n`` of them (a later node with an id already stored replaces it, as in :meth:`add`).
            matrix: real-valued array of shape ``(n, dim)``, row ``i`` the vector of ``nodes[i]`` (cast to float32).
            copy: False lets the store take a C-contiguous float32 ``matrix`` over and normalise its rows IN PLACE
                (no second copy of a large matrix; the caller must not use it afterwards). True (default) leaves
                ``matrix`` untouched.

        Raises:
            TypeError: ``matrix`` is not a numpy array of real numbers, or a node is not a ``BaseNode``.
            ValueError: ``matrix`` is not 2-D with one row per node, or its ``dim`` differs from the stored vectors'.
        """
        if not isinstance(matrix, np.ndarray) or not (np.issubdtype(matrix.dtype, np.floating)
                                                      or np.issubdtype(matrix.dtype, np.integer)):
            raise TypeError(f"matrix must be a numpy array of real numbers, got {_describe(matrix)}")
        for node in nodes:
            if not isinstance(node, BaseNode):
                raise TypeError(f"nodes must be LlamaIndex BaseNode objects, got {type(node).__name__}")
        if matrix.ndim != 2 or matrix.shape[0] != len(nodes):
            raise ValueError(f"matrix must have shape (len(nodes), dim) = ({len(nodes)}, dim), got {matrix.shape}")
        if not nodes:
            return []
        owned = not copy and matrix.dtype == np.float32 and matrix.flags.c_contiguous and matrix.flags.writeable
        rows = matrix if owned else np.array(matrix, dtype=np.float32, order="C")
        return self._add_block(nodes, _normalise(rows))

    def _add_block(self, nodes: Sequence[BaseNode], normalised: np.ndarray) -> list[str]:
        if self._blocks and self._blocks[0][1].shape[1] != normalised.shape[1]:
            raise ValueError(f"embeddings of different dimensions in one NumpyVectorStore: {normalised.shape[1]} "
                             f"added to {self._blocks[0][1].shape[1]}")
        ids = [node.node_id for node in nodes]
        for node_id, node in zip(ids, nodes):
            self._nodes[node_id] = node
        self._blocks.append((ids, normalised))
        self._matrix = None
        return list(ids)

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Remove every node whose source document is ``ref_doc_id``."""
        doomed = [node_id for node_id, node in self._nodes.items() if node.ref_doc_id == ref_doc_id]
        for node_id in doomed:
            del self._nodes[node_id]
        if doomed:
            self._matrix = None
            if not self._nodes:
                self._blocks = []

    def get_nodes(self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None) -> list[BaseNode]:
        """The stored nodes (all, those of ``node_ids``, and/or those ``filters`` keep: the same metadata view as
        :meth:`query`, document-id keys included), in insertion order."""
        wanted = set(node_ids) if node_ids is not None else None
        keep = build_metadata_filter_fn(self._metadata, filters)
        return [node for node_id, node in self._nodes.items()
                if (wanted is None or node_id in wanted) and keep(node_id)]

    def _ensure_matrix(self) -> np.ndarray:
        """The matrix of the stored nodes' normalised vectors, row ``i`` for ``self._ids[i]`` (insertion order)."""
        if self._matrix is None:
            ids = list(self._nodes)
            if len(self._blocks) == 1 and self._blocks[0][0] == ids:
                matrix = self._blocks[0][1]  # one block, nothing deleted or replaced: no copy
            else:
                dim = self._blocks[0][1].shape[1] if self._blocks else 0
                where: dict[str, tuple[int, int]] = {}
                for b, (block_ids, _) in enumerate(self._blocks):
                    for r, node_id in enumerate(block_ids):
                        where[node_id] = (b, r)
                matrix = np.empty((len(ids), dim), dtype=np.float32)
                picks: list[tuple[list[int], list[int]]] = [([], []) for _ in self._blocks]
                for i, node_id in enumerate(ids):
                    b, r = where[node_id]
                    picks[b][0].append(i)
                    picks[b][1].append(r)
                for (out_rows, in_rows), (_, block) in zip(picks, self._blocks):
                    if out_rows:
                        matrix[out_rows] = block[in_rows]
            self._blocks = [(ids, matrix)] if ids else []
            self._ids = ids
            self._matrix = matrix
            self._rows_of = None
            self._tie_rank = None
        return self._matrix

    def _tie_ranks(self) -> np.ndarray:
        """Row ``i``'s place in the order (document id, start offset, row): how equal scores are ordered."""
        if self._tie_rank is None:
            keys = []
            for i, node_id in enumerate(self._ids):
                node = self._nodes[node_id]
                start = getattr(node, "start_char_idx", None)
                keys.append((node.ref_doc_id or "", -1 if start is None else int(start), i))
            order = sorted(range(len(keys)), key=keys.__getitem__)
            rank = np.empty(len(keys), dtype=np.int64)
            rank[order] = np.arange(len(keys), dtype=np.int64)
            self._tie_rank = rank
        return self._tie_rank

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
        """The rows a query may return, ascending, or ``None`` for all of them."""
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
            rows = self._doc_rows()  # each document's rows, ascending: no scan of the whole store
            found = [rows[doc] for doc in doc_ids if doc in rows]
            if len(found) == 1:
                return found[0]
            return np.sort(np.concatenate(found)) if found else np.zeros(0, dtype=np.int64)
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
        return None if mask.all() else np.flatnonzero(mask)

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """Exact cosine top-``query.similarity_top_k`` for ``query.query_embedding``."""
        if query.mode != VectorStoreQueryMode.DEFAULT:
            raise NotImplementedError(f"NumpyVectorStore supports the default (dense) mode only, not {query.mode}")
        if query.query_embedding is None:
            raise ValueError("the query has no embedding")
        matrix = self._ensure_matrix()
        if not self._ids:
            return VectorStoreQueryResult(nodes=[], similarities=[], ids=[])
        q = np.asarray(query.query_embedding, dtype=np.float32)
        norm = float(np.linalg.norm(q))
        unit = q / norm if norm else q
        # a filter scores only the rows it allows (a document filter: a few hundred rows of a large index)
        rows = self._candidates(query)
        if rows is None:
            scores = matrix @ unit
        elif len(rows) and int(rows[-1]) - int(rows[0]) + 1 == len(rows):  # one run of rows (a document): a view
            scores = matrix[int(rows[0]):int(rows[-1]) + 1] @ unit
        else:
            scores = matrix[rows] @ unit
        k = min(query.similarity_top_k, len(scores))
        if k <= 0:
            return VectorStoreQueryResult(nodes=[], similarities=[], ids=[])
        if k < len(scores):  # the k best, and every row tied with the k-th: the tie rule picks among them
            cut = scores[np.argpartition(-scores, k - 1)[:k]].min()
            top = np.flatnonzero(scores >= cut)
        else:
            top = np.arange(len(scores))
        absolute = top if rows is None else rows[top]
        chosen = np.lexsort((self._tie_ranks()[absolute], -scores[top]))[:k]  # by score, then document and offset
        top = top[chosen]
        every_id, every_node = self._ids, self._nodes  # once: a private attribute of a pydantic model costs a call
        ids = [every_id[i] for i in absolute[chosen].tolist()]
        return VectorStoreQueryResult(
            nodes=[every_node[i] for i in ids], similarities=scores[top].tolist(), ids=ids
        )
