"""Document-aware retrieval: use the per-document summaries at query time too.

SAC embeds each document's summary with every chunk, which makes chunks of different contracts distinguishable in
the dense space. Users ask about ONE contract ("Consider the NDA between X and Y; ...", "In the Acme MSA, ..."); the
summary and the document's own names identify it. :class:`DocumentAwareRetriever` adds a document-level signal to
the dense chunk score:

1. **Document prior** (:class:`DocumentIndex`). Two BM25 matches (bm25s), each normalised per query by its maximum
   over the documents: the query's words against each document's summary, and the query's capitalised words
   against the document's *distinctive names* (:mod:`.document_names`: the capitalised words of the
   whole text that few legal documents contain, e.g. "Motorola", "CEII", "Seeed"; a 150-character summary has room
   for a few names only). ``prior(d) = (1 - name_weight) * summary_match + name_weight * names_match``, in [0, 1]
   (0 for every document when nothing matches). Soft: it re-weighs, it never removes a document.
2. **Candidates.** The dense top ``candidate_top_k`` chunks from the vector store, plus the dense top
   ``similarity_top_k`` chunks of each of the ``focus_documents`` documents with the highest prior (one query
   filtered to each document's id), so the chunks of the document the query names are scored even when the
   unfiltered dense ranking misses them, and enough of them to fill the answer.
3. **Fusion.** ``score(chunk) = dense_score(chunk) + prior_weight * prior(document of chunk)``; the top
   ``similarity_top_k`` are returned, each ``NodeWithScore.score`` being the fused score.

The defaults (``prior_weight``, ``focus_documents``, ``name_weight``) were chosen by leave-one-dataset-out over
LegalBench-RAG's four datasets, never on the queries they are scored on (``bench/tune_document_retrieval.py``).
The names' ``max_document_frequency`` (2%) is not held out: it was set before those runs, in a
document-identification exploration on the same benchmark (disclosed there).

Works over any LlamaIndex vector store whose dense scores are cosine similarities (NumpyVectorStore, Qdrant's
default) or monotone in them, and that filters on the document id key (``ref_doc_id`` by default; every store
LlamaIndex writes keeps it). The document index is built from what the store already holds (the summaries and the
chunks' text; no model call); :meth:`DocumentIndex.persist` saves it beside a ``StorageContext``'s ``persist_dir``.

The weights are in cosine units. LlamaIndex's Chroma store reports ``exp(-distance)``: ``exp(cosine - 1)`` in a
collection created with ``metadata={"hnsw:space": "cosine"}`` (what ``llama-sac ingest`` and ``docs/production.md``
create), whose differences are 0.5 to 0.7 times the cosine's for cosines of 0.3 to 0.7, so there the prior weighs
about 1.5 times more. In Chroma's default ``l2`` space (squared distance, ``2 - 2 cosine`` for the unit vectors of
all-MiniLM-L6-v2) it is ``exp(2 cosine - 2)``, whose differences are 0.5 to 1.1 times the cosine's over the same
range: another scale again, so create Chroma collections in cosine space.

A document the prior picks that has no chunk in the store (an index built from another store, or stale) is reported
with a :class:`StaleDocumentIndexWarning`; its prior then changes nothing.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import math
import os
import tempfile
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks import CallbackManager
from llama_index.core.indices.vector_store import VectorStoreIndex
from llama_index.core.indices.vector_store.retrievers import VectorIndexRetriever
from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore, QueryBundle
from llama_index.core.vector_stores import MetadataFilters
from llama_index.core.vector_stores.types import BasePydanticVectorStore

from llama_index_sac._json_io import PersistedFileError, read_json
from llama_index_sac._util import require_extra
from llama_index_sac._warn import caller_stacklevel
from llama_index_sac.documents import reconstruct_text
from llama_index_sac.embeddings.default import default_embedding_model, embedding_from_identity, is_default_model
from llama_index_sac.embeddings.model import embedding_identity
from llama_index_sac.evaluation.locations import stored_nodes
from llama_index_sac.retrievers.document_names import (
    DEFAULT_MAX_DOCUMENT_FREQUENCY,
    distinctive_names,
    query_tokens,
    word_tokens,
)
from llama_index_sac.retrievers.fusion import fuse, with_document
from llama_index_sac.summarizers.terms import TermStatistics

__all__ = ["DocumentAwareRetriever", "DocumentIndex", "StaleDocumentIndexWarning"]

_FORMAT = "llama-index-sac/document-index/v2"
_FORMATS = ("llama-index-sac/document-index/v1", _FORMAT)  # v1: summaries only
#: Defaults (see the module docstring: chosen without the test queries).
DEFAULT_PRIOR_WEIGHT = 0.3
DEFAULT_FOCUS_DOCUMENTS = 2
DEFAULT_CANDIDATE_TOP_K = 100
DEFAULT_NAME_WEIGHT = 0.5
#: The most name occurrences (the sum of every document's counts) a :class:`DocumentIndex` accepts: its name index
#: holds one token per occurrence, so the counts are checked before anything is allocated.
MAX_NAME_OCCURRENCES = 1 << 24
#: The largest file :meth:`DocumentIndex.load` reads, in bytes.
LOAD_MAX_BYTES = 1 << 30
#: File name of :meth:`DocumentIndex.persist` in a ``persist_dir`` (beside LlamaIndex's ``docstore.json``...).
PERSIST_FNAME = "document_index.json"


class StaleDocumentIndexWarning(UserWarning):
    """A document of the :class:`DocumentIndex` that the query's prior picked has no chunk in the vector store: the
    index was built from another store or collection, or not rebuilt after documents were removed. Rebuild it with
    :meth:`DocumentIndex.from_source` from the store the retriever reads."""


def _bm25(rows: list[list[str]]) -> Any:
    bm25s = require_extra("bm25s", "bm25", "DocumentIndex")
    quiet = logging.getLogger("bm25s")
    if quiet.level == logging.DEBUG:  # bm25s sets its own logger to DEBUG on import: a line per index otherwise
        quiet.setLevel(logging.WARNING)
    index = bm25s.BM25()
    index.index([row or ["\x00"] for row in rows], show_progress=False)  # an empty row would be dropped
    return index


def _normalised(index: Any, tokens: list[str], n: int) -> np.ndarray:
    if not tokens:
        return np.zeros(n, dtype=np.float64)
    scores = np.asarray(index.get_scores(tokens), dtype=np.float64)
    top = float(scores.max()) if scores.size else 0.0
    return scores / top if top > 0 else np.zeros_like(scores)


def _document_texts(nodes: Iterable[BaseNode]) -> dict[str, str]:
    """Each document's text rebuilt from its chunks by :func:`~llama_index_sac.documents.reconstruct_text`; when a
    document's chunks lack exact offsets (or disagree), their texts joined by newlines in the order seen."""
    chunks: dict[str, list[BaseNode]] = {}
    for node in nodes:
        if node.ref_doc_id is not None:
            chunks.setdefault(node.ref_doc_id, []).append(node)
    texts = {}
    for doc_id, members in chunks.items():
        try:
            texts[doc_id] = reconstruct_text(doc_id, members)[0]
        except ValueError:
            texts[doc_id] = "\n".join(n.get_content(metadata_mode=MetadataMode.NONE) for n in members)
    return texts


class DocumentIndex:
    """Per-document identity for the document prior: each document's summary and its distinctive names, with a
    BM25 index over each (``bm25s``, the ``bm25`` extra).

    ``prior(query) = (1 - name_weight) * s + name_weight * n``, where ``s`` is the BM25 score of the query's words
    against the summaries and ``n`` that of its name tokens against the documents' distinctive names
    (:mod:`.document_names`), each divided by its maximum over the documents for this query (so in
    [0, 1]; 0 for every document when nothing matches). Without names (``names=None``) the prior is ``s``.

    Args:
        summaries: document id -> summary text (the SAC ``document_summary``; empty texts are kept, they never match).
        names: document id -> {distinctive name: occurrences} (:func:`~llama_index_sac.retrievers.document_names.
            distinctive_names` of the document's text), or None.
        name_weight: share of the names in the prior, in [0, 1].

    Raises:
        TypeError: ``summaries`` or ``names`` of the wrong type.
        ValueError: no document, a ``names`` id without a summary, or ``name_weight`` outside [0, 1].
    """

    def __init__(self, summaries: Mapping[str, str], names: Mapping[str, Mapping[str, int]] | None = None, *,
                 name_weight: float = DEFAULT_NAME_WEIGHT) -> None:
        if not isinstance(summaries, Mapping):
            raise TypeError(f"summaries must be a mapping document id -> summary, got {type(summaries).__name__}")
        for doc_id, summary in summaries.items():
            if not isinstance(doc_id, str) or not isinstance(summary, str):
                raise TypeError(f"summaries[{doc_id!r}] must map a str id to a str summary, got {summary!r:.60}")
        if not summaries:
            raise ValueError("DocumentIndex needs at least one document")
        if isinstance(name_weight, bool) or not isinstance(name_weight, (int, float)) or not 0 <= name_weight <= 1:
            raise ValueError(f"name_weight must be a number in [0, 1], got {name_weight!r}")
        if names is not None:
            if not isinstance(names, Mapping):
                raise TypeError(f"names must be a mapping document id -> {{name: count}}, got {type(names).__name__}")
            unknown = sorted(set(names) - set(summaries))
            if unknown:
                raise ValueError(f"names of documents without a summary: {unknown[:5]}")
            for doc_id, counts in names.items():
                if not isinstance(counts, Mapping) or not all(
                        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v > 0
                        for k, v in counts.items()):
                    raise TypeError(f"names[{doc_id!r}] must map str names to counts >= 1")
            total = sum(sum(counts.values()) for counts in names.values())
            if total > MAX_NAME_OCCURRENCES:
                raise ValueError(f"names hold {total} occurrences in all, more than {MAX_NAME_OCCURRENCES} (the "
                                 "name index keeps one token per occurrence)")
        self.doc_ids: list[str] = list(summaries)
        self.summaries: dict[str, str] = dict(summaries)
        self.names: dict[str, dict[str, int]] | None = (
            None if names is None else {d: dict(names.get(d, {})) for d in self.doc_ids})
        self.name_weight = float(name_weight)
        self._summary_bm25 = _bm25([word_tokens(self.summaries[d]) for d in self.doc_ids])
        self._names_bm25 = None if self.names is None else _bm25(
            [[name for name, count in sorted(self.names[d].items()) for _ in range(count)] for d in self.doc_ids])

    @classmethod
    def from_nodes(cls, nodes: Iterable[BaseNode | NodeWithScore], summary_key: str = "document_summary", *,
                   names: bool = True, name_weight: float = DEFAULT_NAME_WEIGHT,
                   statistics: TermStatistics | None = None,
                   max_document_frequency: float = DEFAULT_MAX_DOCUMENT_FREQUENCY) -> DocumentIndex:
        """The summaries carried by ``nodes`` (SAC chunks: per ``ref_doc_id``, the longest) and, with
        ``names``, the distinctive names of each document's text rebuilt from its chunks (offset order, overlaps
        read once; ``statistics`` and ``max_document_frequency`` as in
        :func:`~llama_index_sac.retrievers.document_names.distinctive_names`). No model call.

        Raises:
            ValueError: no node carries ``summary_key``."""
        chunks = [item.node if isinstance(item, NodeWithScore) else item for item in nodes]
        summaries: dict[str, str] = {}
        for node in chunks:  # a document's longest summary: chunks may carry it trimmed to the embedding limit
            doc_id, summary = node.ref_doc_id, node.metadata.get(summary_key)
            if doc_id is not None and isinstance(summary, str) and len(summary) >= len(summaries.get(doc_id, " ")):
                summaries[doc_id] = summary
        if not summaries:
            raise ValueError(f"no node carries metadata[{summary_key!r}] with a document id: were the nodes "
                             "augmented by SummaryAugmentationTransformation?")
        found = None
        if names:
            texts = _document_texts(node for node in chunks if node.ref_doc_id in summaries)
            found = {doc_id: dict(distinctive_names(text, statistics=statistics,
                                                    max_document_frequency=max_document_frequency))
                     for doc_id, text in texts.items()}
        return cls(summaries, found, name_weight=name_weight)

    @classmethod
    def from_source(cls, source: Any, summary_key: str = "document_summary", **options: Any) -> DocumentIndex:
        """:meth:`from_nodes` over the nodes stored in a vector store (Chroma/Qdrant read in pages, any store
        keeping nodes), a docstore or a ``VectorStoreIndex`` (see
        :func:`~llama_index_sac.evaluation.locations.stored_nodes`)."""
        return cls.from_nodes(stored_nodes(source), summary_key, **options)

    # -- persistence -----------------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the summaries, names and ``name_weight`` as JSON (the BM25 indexes are rebuilt on :meth:`load`).

        The file is written beside ``path`` under a temporary name and then renamed over it, so a crash never leaves
        a truncated index (an existing file stays as it was).

        Returns:
            The path written (``~`` expanded).

        Raises:
            OSError: the folder does not exist or cannot be written.
        """
        out = Path(path).expanduser()
        data = json.dumps({"format": _FORMAT, "summaries": self.summaries, "names": self.names,
                           "name_weight": self.name_weight}, ensure_ascii=False)
        fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(data)
            os.replace(tmp, out)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return out

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> DocumentIndex:
        """Read a file written by :meth:`save` (a summaries-only v1 file too).

        Read by the bounded reader: a regular file of at most :data:`LOAD_MAX_BYTES` bytes, nested at most 64
        levels; name counts are checked (:data:`MAX_NAME_OCCURRENCES`) before an index is built.

        Raises:
            ValueError: the file is not a document index (not a regular file, too large, not UTF-8 JSON, too deep,
                another format, bad fields, too many name occurrences); the message names the file.
            OSError: the file cannot be read (``FileNotFoundError``, ...).
        """
        try:
            data = read_json(Path(path).expanduser(), expect=None, max_bytes=LOAD_MAX_BYTES)
        except PersistedFileError as exc:
            raise ValueError(f"{path}: not a document index file ({exc.problem})") from None
        if not isinstance(data, dict) or data.get("format") not in _FORMATS:
            raise ValueError(f"{path}: not a {_FORMAT} file")
        try:
            return cls(data["summaries"], data.get("names"), name_weight=data.get("name_weight", 0.0))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{path}: bad document index ({exc})") from exc

    def persist(self, persist_dir: str | os.PathLike[str] = "./storage", fname: str = PERSIST_FNAME) -> Path:
        """:meth:`save` into ``persist_dir`` beside a ``StorageContext.persist(persist_dir)`` (created if missing)."""
        (folder := Path(persist_dir).expanduser()).mkdir(parents=True, exist_ok=True)
        return self.save(folder / fname)

    @classmethod
    def from_persist_dir(cls, persist_dir: str | os.PathLike[str] = "./storage",
                         fname: str = PERSIST_FNAME) -> DocumentIndex:
        """:meth:`load` the index :meth:`persist` wrote into ``persist_dir`` (raises as :meth:`load` does)."""
        return cls.load(Path(persist_dir).expanduser() / fname)

    def __len__(self) -> int:
        return len(self.doc_ids)

    # -- scores ----------------------------------------------------------------------------------------------
    def prior(self, query: str) -> np.ndarray:
        """The document prior of ``query`` for every document (in ``doc_ids`` order), shape ``(len(self),)``, in
        [0, 1] (class docstring)."""
        n = len(self.doc_ids)
        prior = _normalised(self._summary_bm25, word_tokens(query), n)
        if self._names_bm25 is not None and self.name_weight > 0:
            prior *= 1.0 - self.name_weight
            prior += self.name_weight * _normalised(self._names_bm25, query_tokens(query), n)
        return prior

    def prior_of(self, query: str) -> dict[str, float]:
        """:meth:`prior` as ``{doc_id: prior}`` for the documents with a positive prior."""
        values = self.prior(query)
        return {self.doc_ids[i]: float(values[i]) for i in np.flatnonzero(values > 0)}


class DocumentAwareRetriever(BaseRetriever):
    """Retrieval re-weighed by the document prior of :class:`DocumentIndex` (module docstring), a LlamaIndex
    ``BaseRetriever``. It wraps a ``VectorStoreIndex`` (or a ``VectorIndexRetriever``, its ``filters`` kept): dense
    candidates plus a query filtered to each focus document (AND those filters); or any other ``BaseRetriever`` (BM25,
    fusion): its results re-weighed by the prior, in the units of its scores, no focus documents.

    Args:
        index: what retrieves the candidates (above). document_index: the summaries (:meth:`DocumentIndex.from_nodes`
            / ``from_source`` / ``load``). similarity_top_k: chunks returned. candidate_top_k: dense candidates
            fetched (at least ``similarity_top_k``). prior_weight: weight of the prior (cosine units for a vector
            index; 0: the wrapped retrieval). focus_documents: top-prior documents that also get a dense query
            filtered to each; None: 2 for a vector index, 0 otherwise. doc_id_key: the metadata key the store filters
            document ids on. filters: metadata filters of every dense query.

    Raises:
        ValueError: a count below 1 (``focus_documents`` below 0, or above 0 for a retriever that cannot be
            filtered), a ``prior_weight`` negative or not finite; at retrieval, a blank query without an embedding.
        TypeError: ``document_index`` is not a :class:`DocumentIndex`, or ``index`` neither an index nor a retriever.

    Warns:
        StaleDocumentIndexWarning: a focus document has no chunk in the store (module docstring).
    """

    def __init__(self, index: VectorStoreIndex | BaseRetriever | None, document_index: DocumentIndex, *,
                 similarity_top_k: int = 10, candidate_top_k: int = DEFAULT_CANDIDATE_TOP_K,
                 prior_weight: float = DEFAULT_PRIOR_WEIGHT, focus_documents: int | None = None,
                 doc_id_key: str = "ref_doc_id", filters: MetadataFilters | None = None,
                 callback_manager: CallbackManager | None = None) -> None:
        wrapped: BaseRetriever | None = None
        if isinstance(index, VectorIndexRetriever):
            filters = index._filters if filters is None else filters
            index = index._index
        if isinstance(index, BaseRetriever):
            wrapped, index = index, None
        elif not isinstance(index, VectorStoreIndex):
            raise TypeError(f"index must be a VectorStoreIndex or a BaseRetriever, got {type(index).__name__}")
        if focus_documents is None:
            focus_documents = DEFAULT_FOCUS_DOCUMENTS if wrapped is None else 0
        for name, value, low in (("similarity_top_k", similarity_top_k, 1), ("candidate_top_k", candidate_top_k, 1),
                                 ("focus_documents", focus_documents, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
        if wrapped is not None and focus_documents:
            raise ValueError(f"focus_documents={focus_documents} needs a vector index to filter by document; "
                             f"{type(wrapped).__name__} cannot be: pass focus_documents=0 (or the VectorStoreIndex)")
        if (isinstance(prior_weight, bool) or not isinstance(prior_weight, (int, float))
                or not (prior_weight >= 0 and math.isfinite(prior_weight))):
            raise ValueError(f"prior_weight must be a finite number >= 0, got {prior_weight!r}")
        if not isinstance(document_index, DocumentIndex):
            raise TypeError(f"document_index must be a DocumentIndex, got {type(document_index).__name__}")
        super().__init__(callback_manager=callback_manager)
        self.index: VectorStoreIndex | None = index
        self.retriever = wrapped
        self.document_index = document_index
        self.similarity_top_k = similarity_top_k
        self.candidate_top_k = max(candidate_top_k, similarity_top_k)
        self.prior_weight = float(prior_weight)
        self.focus_documents = focus_documents
        self.doc_id_key = doc_id_key
        self.filters = filters

    @classmethod
    def from_defaults(cls, source: Any, document_index: DocumentIndex | None = None, *,
                      embed_model: BaseEmbedding | None = None, similarity_top_k: int = 10,
                      **kwargs: Any) -> DocumentAwareRetriever:
        """The retriever with the package's defaults over ``source``: a ``VectorStoreIndex``, a vector store (read
        with ``embed_model``, default :func:`~llama_index_sac.default_embedding_model`), a ``VectorIndexRetriever``
        or any ``BaseRetriever``. ``document_index`` None: :meth:`DocumentIndex.from_source` of the index or store
        (every stored chunk read once). ``kwargs``: the constructor's other options.

        Raises:
            ValueError: no ``document_index`` for a retriever without a vector index, a store without summaries
                (:meth:`DocumentIndex.from_nodes`), or the constructor's errors."""
        if isinstance(source, BasePydanticVectorStore):
            model = embed_model if embed_model is not None else default_embedding_model()
            source = VectorStoreIndex.from_vector_store(source, embed_model=model)
        if document_index is None:
            index = source._index if isinstance(source, VectorIndexRetriever) else source
            if not isinstance(index, VectorStoreIndex):
                raise ValueError(f"a {type(source).__name__} holds no summaries to read: pass document_index= "
                                 "(DocumentIndex.from_source(vector_store) or DocumentIndex.load(path))")
            document_index = DocumentIndex.from_source(index)
        return cls(source, document_index, similarity_top_k=similarity_top_k, **kwargs)

    # -- pickling -----------------------------------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        """The retriever's state with the index's default embedding model as its identity (rebuilt on unpickling by
        :func:`~llama_index_sac.embeddings.default.embedding_from_identity`), so a pickle carries no weights; any
        other model is pickled as it is."""
        state = dict(self.__dict__)
        index = state.get("index")
        if index is not None and is_default_model(index._embed_model):
            light = copy.copy(index)
            light._embed_model = embedding_identity(index._embed_model)
            state["index"] = light
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        index = state.get("index")
        if index is not None and isinstance(index._embed_model, dict):
            index._embed_model = embedding_from_identity(index._embed_model)
        self.__dict__.update(state)

    # -- the searches ----------------------------------------------------------------------------------------
    def _dense(self, top_k: int, doc_ids: list[str] | None = None) -> BaseRetriever:
        assert self.index is not None
        filters = self.filters if doc_ids is None else with_document(self.filters, self.doc_id_key, doc_ids)
        return self.index.as_retriever(similarity_top_k=top_k, filters=filters)

    def _prepare(self, query_bundle: QueryBundle) -> dict[str, float]:
        """Check the query; the prior of its documents (empty with ``prior_weight=0``)."""
        if query_bundle.embedding is None and not query_bundle.query_str.strip():
            raise ValueError("the query is empty: there is nothing to embed or to match against the documents")
        return self.document_index.prior_of(query_bundle.query_str) if self.prior_weight > 0 else {}

    def _focus(self, prior: Mapping[str, float]) -> list[str]:
        # one query per focus document: each can fill the answer (one over several returns the longest one's chunks)
        return sorted(prior, key=lambda d: (-prior[d], d))[: self.focus_documents] if self.focus_documents else []

    def _stale(self, doc_id: str, hits: list[NodeWithScore]) -> None:
        if not hits:
            warnings.warn(f"document {doc_id!r} of the document index has no chunk in the vector store: the index was "
                          "built from another store or is stale; rebuild it with DocumentIndex.from_source(store)",
                          StaleDocumentIndexWarning, stacklevel=caller_stacklevel())

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        prior = self._prepare(query_bundle)
        if self.retriever is not None:
            return fuse(self.retriever.retrieve(query_bundle), prior, self.prior_weight, self.similarity_top_k)
        assert self.index is not None
        if query_bundle.embedding is None:  # embed once, for every dense query
            model = self.index._embed_model
            query_bundle.embedding = model.get_agg_embedding_from_queries(query_bundle.embedding_strs)
        hits = list(self._dense(self.candidate_top_k).retrieve(query_bundle))
        for doc_id in self._focus(prior):
            found = self._dense(self.similarity_top_k, [doc_id]).retrieve(query_bundle)
            self._stale(doc_id, found)
            hits.extend(found)
        return fuse(hits, prior, self.prior_weight, self.similarity_top_k)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """:meth:`_retrieve` without blocking the event loop: the wrapped retriever's and the store's async paths
        (the focus queries concurrently), the BM25 prior in a worker thread."""
        prior = await asyncio.to_thread(self._prepare, query_bundle)
        if self.retriever is not None:
            found = await self.retriever.aretrieve(query_bundle)
            return fuse(found, prior, self.prior_weight, self.similarity_top_k)
        assert self.index is not None
        if query_bundle.embedding is None:
            model = self.index._embed_model
            query_bundle.embedding = await model.aget_agg_embedding_from_queries(query_bundle.embedding_strs)
        focus = self._focus(prior)
        results = await asyncio.gather(self._dense(self.candidate_top_k).aretrieve(query_bundle),
                                       *(self._dense(self.similarity_top_k, [d]).aretrieve(query_bundle)
                                         for d in focus))
        hits = list(results[0])
        for doc_id, found in zip(focus, results[1:]):
            self._stale(doc_id, found)
            hits.extend(found)
        return fuse(hits, prior, self.prior_weight, self.similarity_top_k)
