"""Document-aware retrieval: use the per-document summaries at query time too.

SAC embeds each document's summary with every chunk, which makes chunks of different contracts distinguishable in
the dense space. Users ask about ONE contract ("Consider the NDA between X and Y; ..."), and the summaries already
name it (type, parties, date, key terms). :class:`DocumentAwareRetriever` adds a document-level signal computed from
those summaries to the dense chunk score:

1. **Document prior.** A BM25 match of the query against each document's summary (:class:`DocumentIndex`, bm25s),
   normalised per query to ``prior(d) = bm25(q, d) / max_d' bm25(q, d')`` in [0, 1] (0 for every document when no
   summary matches a query word). Soft: it re-weighs, it never removes a document.
2. **Candidates.** The dense top ``candidate_top_k`` chunks from the vector store, plus the dense top chunks of the
   ``focus_documents`` documents with the highest prior (one query filtered to those documents' ids), so the chunks
   of the document the query names are scored even when the unfiltered dense ranking misses them.
3. **Fusion.** ``score(chunk) = dense_score(chunk) + prior_weight * prior(document of chunk)``; the top
   ``similarity_top_k`` are returned, each ``NodeWithScore.score`` being the fused score.

Hard routing to the top documents and scoring the summary's similarity at query time instead of embedding it with the
chunk were both worse than plain SAC in a first experiment here (issue 15); this retriever does neither. The default
``prior_weight`` and ``focus_documents`` were chosen on the built-in synthetic contracts and by leave-one-dataset-out
over LegalBench-RAG, never on the test queries (``bench/tune_document_retrieval.py``, ``docs/results.md``).

Works over any LlamaIndex vector store whose dense scores are cosine similarities (NumpyVectorStore, Chroma with
``hnsw:space=cosine``, Qdrant's default) and that filters on the document id key (``ref_doc_id`` by default; every
store LlamaIndex writes keeps it). The document index is built from the summaries that
:class:`~llama_index_sac.augmentation.SummaryAugmentationTransformation` already wrote (no LLM or embedding call) and
is saved with :meth:`DocumentIndex.save`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.indices.vector_store import VectorStoreIndex
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle
from llama_index.core.vector_stores import FilterOperator, MetadataFilter, MetadataFilters

from llama_index_sac._util import require_extra
from llama_index_sac.evaluation.locations import stored_nodes
from llama_index_sac.summarizers.terms import stop_words

__all__ = ["DocumentAwareRetriever", "DocumentIndex"]

_WORD_RE = re.compile(r"(?u)\b\w[\w\-']*\w\b|\b\w\b")
_FORMAT = "llama-index-sac/document-index/v1"
#: Defaults (see the module docstring: chosen without the test queries).
DEFAULT_PRIOR_WEIGHT = 0.1
DEFAULT_FOCUS_DOCUMENTS = 2
DEFAULT_CANDIDATE_TOP_K = 100


def _tokens(text: str) -> list[str]:
    stop = stop_words()
    return [t for t in _WORD_RE.findall(text.lower()) if t not in stop]


class DocumentIndex:
    """The per-document summaries, with a BM25 index over them (``bm25s``, the ``bm25`` extra).

    Args:
        summaries: document id -> summary text (the SAC ``document_summary``; empty texts are kept, they never match).

    Raises:
        TypeError: ``summaries`` is not a mapping of str to str.
        ValueError: no document.
    """

    def __init__(self, summaries: Mapping[str, str]) -> None:
        if not isinstance(summaries, Mapping):
            raise TypeError(f"summaries must be a mapping document id -> summary, got {type(summaries).__name__}")
        for doc_id, summary in summaries.items():
            if not isinstance(doc_id, str) or not isinstance(summary, str):
                raise TypeError(f"summaries[{doc_id!r}] must map a str id to a str summary, got {summary!r:.60}")
        if not summaries:
            raise ValueError("DocumentIndex needs at least one document")
        self.doc_ids: list[str] = list(summaries)
        self.summaries: dict[str, str] = dict(summaries)
        self._position = {doc_id: i for i, doc_id in enumerate(self.doc_ids)}
        bm25s = require_extra("bm25s", "bm25", "DocumentIndex")
        self._bm25 = bm25s.BM25()
        corpus = [_tokens(self.summaries[d]) or ["\x00"] for d in self.doc_ids]  # an empty row would be dropped
        self._bm25.index(corpus, show_progress=False)

    @classmethod
    def from_nodes(cls, nodes: Iterable[BaseNode | NodeWithScore], summary_key: str = "document_summary",
                   ) -> DocumentIndex:
        """The summaries carried by ``nodes`` (SAC chunks): one per ``ref_doc_id``, the first seen.

        Raises:
            ValueError: no node carries ``summary_key``."""
        summaries: dict[str, str] = {}
        for item in nodes:
            node = item.node if isinstance(item, NodeWithScore) else item
            doc_id = node.ref_doc_id
            summary = node.metadata.get(summary_key)
            if doc_id is not None and isinstance(summary, str) and doc_id not in summaries:
                summaries[doc_id] = summary
        if not summaries:
            raise ValueError(f"no node carries metadata[{summary_key!r}] with a document id: were the nodes "
                             "augmented by SummaryAugmentationTransformation?")
        return cls(summaries)

    @classmethod
    def from_source(cls, source: Any, summary_key: str = "document_summary") -> DocumentIndex:
        """The summaries stored in a vector store (Chroma/Qdrant read in pages, any store keeping nodes), a
        docstore or a ``VectorStoreIndex`` (see :func:`~llama_index_sac.evaluation.locations.stored_nodes`)."""
        return cls.from_nodes(stored_nodes(source), summary_key)

    # -- persistence -----------------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the summaries as JSON (the BM25 index is rebuilt on :meth:`load`, in milliseconds)."""
        out = Path(path).expanduser()
        out.write_text(json.dumps({"format": _FORMAT, "summaries": self.summaries}, ensure_ascii=False),
                       encoding="utf-8")
        return out

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> DocumentIndex:
        """Read a file written by :meth:`save`. Raises ``ValueError`` naming the file when it is not one."""
        try:
            data = json.loads(Path(path).expanduser().read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path}: not a document index file ({exc})") from exc
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise ValueError(f"{path}: not a {_FORMAT} file")
        return cls(data["summaries"])

    def __len__(self) -> int:
        return len(self.doc_ids)

    # -- scores ----------------------------------------------------------------------------------------------
    def prior(self, query: str) -> np.ndarray:
        """``bm25(query, d) / max_d bm25`` for every document (in ``doc_ids`` order), shape ``(len(self),)``."""
        tokens = _tokens(query)
        if not tokens:
            return np.zeros(len(self.doc_ids), dtype=np.float64)
        scores = np.asarray(self._bm25.get_scores(tokens), dtype=np.float64)
        top = float(scores.max()) if scores.size else 0.0
        return scores / top if top > 0 else np.zeros_like(scores)

    def prior_of(self, query: str) -> dict[str, float]:
        """:meth:`prior` as ``{doc_id: prior}`` for the documents with a positive prior."""
        values = self.prior(query)
        return {self.doc_ids[i]: float(values[i]) for i in np.flatnonzero(values > 0)}


class DocumentAwareRetriever(BaseRetriever):
    """Dense chunk retrieval re-weighed by a BM25 match of the query against each document's summary (module
    docstring). A LlamaIndex ``BaseRetriever``: use it wherever a retriever goes (query engines, evaluators).

    Args:
        index: the ``VectorStoreIndex`` of the SAC chunks (any vector store that keeps the document id key).
        document_index: the summaries (:meth:`DocumentIndex.from_nodes` / ``from_source`` / ``load``).
        similarity_top_k: chunks returned.
        candidate_top_k: dense candidates fetched (at least ``similarity_top_k``).
        prior_weight: weight of the document prior (in cosine units; 0 gives plain dense retrieval).
        focus_documents: how many top-prior documents also get a filtered dense query (0: none).
        doc_id_key: the metadata key the store filters document ids on.

    Raises:
        ValueError: a count below 1 (``focus_documents`` below 0) or a negative ``prior_weight``.
    """

    def __init__(self, index: VectorStoreIndex, document_index: DocumentIndex, *, similarity_top_k: int = 10,
                 candidate_top_k: int = DEFAULT_CANDIDATE_TOP_K, prior_weight: float = DEFAULT_PRIOR_WEIGHT,
                 focus_documents: int = DEFAULT_FOCUS_DOCUMENTS, doc_id_key: str = "ref_doc_id",
                 callback_manager: CallbackManager | None = None) -> None:
        for name, value, low in (("similarity_top_k", similarity_top_k, 1), ("candidate_top_k", candidate_top_k, 1),
                                 ("focus_documents", focus_documents, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
        if isinstance(prior_weight, bool) or not isinstance(prior_weight, (int, float)) or not prior_weight >= 0:
            raise ValueError(f"prior_weight must be a number >= 0, got {prior_weight!r}")
        if not isinstance(document_index, DocumentIndex):
            raise TypeError(f"document_index must be a DocumentIndex, got {type(document_index).__name__}")
        super().__init__(callback_manager=callback_manager)
        self.index = index
        self.document_index = document_index
        self.similarity_top_k = similarity_top_k
        self.candidate_top_k = max(candidate_top_k, similarity_top_k)
        self.prior_weight = float(prior_weight)
        self.focus_documents = focus_documents
        self.doc_id_key = doc_id_key

    def _dense(self, query: QueryBundle, top_k: int, doc_ids: list[str] | None = None) -> list[NodeWithScore]:
        filters = None
        if doc_ids is not None:
            filters = MetadataFilters(filters=[MetadataFilter(key=self.doc_id_key, value=doc_ids,
                                                              operator=FilterOperator.IN)])
        return self.index.as_retriever(similarity_top_k=top_k, filters=filters).retrieve(query)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if query_bundle.embedding is None:  # embed once, for both dense queries
            model = self.index._embed_model
            query_bundle.embedding = model.get_agg_embedding_from_queries(query_bundle.embedding_strs)
        prior = self.document_index.prior_of(query_bundle.query_str) if self.prior_weight > 0 else {}
        candidates = {hit.node.node_id: hit for hit in self._dense(query_bundle, self.candidate_top_k)}
        if self.focus_documents and prior:
            focus = sorted(prior, key=lambda d: (-prior[d], d))[: self.focus_documents]
            for hit in self._dense(query_bundle, self.candidate_top_k, focus):
                candidates.setdefault(hit.node.node_id, hit)
        fused = []
        for node_id, hit in candidates.items():
            bonus = self.prior_weight * prior.get(hit.node.ref_doc_id or "", 0.0)
            fused.append((-((hit.score or 0.0) + bonus), node_id, hit))
        fused.sort(key=lambda item: (item[0], item[1]))
        return [NodeWithScore(node=hit.node, score=-negative) for negative, _, hit in fused[: self.similarity_top_k]]
