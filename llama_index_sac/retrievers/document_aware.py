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
3. **Fusion.** ``score(chunk) = dense_score(chunk) + prior_weight * prior(document of chunk) + lexical_weight *
   lexical(chunk)``; the top ``similarity_top_k`` are returned, each ``NodeWithScore.score`` being the fused score.
   ``lexical`` (:mod:`.chunk_lexical`) is the BM25 of the question (the query without what locates the document:
   a leading "Consider ...;" clause and the distinctive names of the top-prior documents) against the candidates'
   text, divided by the best candidate's: it picks the clause inside the document the prior picked.
4. **Clause order** (:mod:`.clause_order`). The places each located document won keep their document; they are
   refilled by that document's chunks in the order of ``(1 - question_weight) * dense(query) + question_weight *
   dense(question) + lexical_weight * lexical``, the question embedded alone and searched in each located document
   (one more embedding and one filtered dense query per located document, only when the query has a locator
   clause). The lexical score's document frequencies then count those hits as candidates too.

The defaults (``prior_weight``, ``focus_documents``, ``name_weight``; ``lexical_weight``, ``question_weight`` and the
document index's ``prior_margin``, ``require_name_match``, ``name_pairs``, ``locator_only`` and ``word_parts``) were
chosen by leave-one-dataset-out over LegalBench-RAG's four datasets, never on the queries they are scored on
(``bench/tune_document_retrieval.py``, ``bench/tune_chunk_ranking.py``).
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
import math
import warnings
from collections.abc import Mapping
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks import CallbackManager
from llama_index.core.indices.vector_store import VectorStoreIndex
from llama_index.core.indices.vector_store.retrievers import VectorIndexRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.vector_stores import MetadataFilters
from llama_index.core.vector_stores.types import BasePydanticVectorStore

from llama_index_sac._warn import caller_stacklevel
from llama_index_sac.embeddings.default import default_embedding_model, embedding_from_identity, is_default_model
from llama_index_sac.embeddings.model import embedding_identity
from llama_index_sac.retrievers.chunk_lexical import (
    DEFAULT_LEXICAL_SCOPE,
    DEFAULT_LEXICAL_WEIGHT,
    LEXICAL_SCOPES,
    question_text,
)
from llama_index_sac.retrievers.clause_order import DEFAULT_QUESTION_WEIGHT, order_within_documents
from llama_index_sac.retrievers.document_index import (  # re-exported: the import path of 0.1
    DEFAULT_NAME_WEIGHT,
    LOAD_MAX_BYTES,
    MAX_NAME_OCCURRENCES,
    PERSIST_FNAME,
    DocumentIndex,
)
from llama_index_sac.retrievers.fusion import fuse, lexical_bonus, with_document

_Hits = list[NodeWithScore]

__all__ = ["DEFAULT_CANDIDATE_TOP_K", "DEFAULT_FOCUS_DOCUMENTS", "DEFAULT_LEXICAL_WEIGHT", "DEFAULT_NAME_WEIGHT",
           "DEFAULT_PRIOR_WEIGHT", "DEFAULT_QUESTION_WEIGHT", "LOAD_MAX_BYTES", "MAX_NAME_OCCURRENCES", "PERSIST_FNAME",
           "DocumentAwareRetriever", "DocumentIndex", "StaleDocumentIndexWarning"]

#: Defaults (see the module docstring: chosen without the test queries).
DEFAULT_PRIOR_WEIGHT = 0.3
DEFAULT_FOCUS_DOCUMENTS = 2
DEFAULT_CANDIDATE_TOP_K = 100


class StaleDocumentIndexWarning(UserWarning):
    """A document of the :class:`DocumentIndex` that the query's prior picked has no chunk in the vector store: the
    index was built from another store or collection, or not rebuilt after documents were removed. Rebuild it with
    :meth:`DocumentIndex.from_source` from the store the retriever reads."""


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
            filtered to each; None: 2 for a vector index, 0 otherwise. lexical_weight: weight of the question's
            BM25 over the candidates (module docstring; same units as ``prior_weight``; 0: off). lexical_scope:
            ``"located"`` (the chunks of the located documents, :data:`~.chunk_lexical.LEXICAL_SCOPES`) or
            ``"candidates"`` (every candidate). question_weight: share of the question's dense score in the
            order of each located document's chunks (module docstring, in [0, 1]; 0: the fused order; only over
            a vector index). doc_id_key: the
            metadata key the store filters document ids on. filters: metadata filters of every dense query.

    Raises:
        ValueError: a count below 1 (``focus_documents`` below 0, or above 0 for a retriever that cannot be
            filtered), a ``prior_weight`` or ``lexical_weight`` negative or not finite, a ``question_weight``
            outside [0, 1], an unknown ``lexical_scope``; at retrieval, a blank query
            without an embedding.
        TypeError: ``document_index`` is not a :class:`DocumentIndex`, or ``index`` neither an index nor a retriever.

    Warns:
        StaleDocumentIndexWarning: a focus document has no chunk in the store (module docstring).
    """

    def __init__(self, index: VectorStoreIndex | BaseRetriever | None, document_index: DocumentIndex, *,
                 similarity_top_k: int = 10, candidate_top_k: int = DEFAULT_CANDIDATE_TOP_K,
                 prior_weight: float = DEFAULT_PRIOR_WEIGHT, focus_documents: int | None = None,
                 lexical_weight: float = DEFAULT_LEXICAL_WEIGHT, lexical_scope: str = DEFAULT_LEXICAL_SCOPE,
                 question_weight: float = DEFAULT_QUESTION_WEIGHT, doc_id_key: str = "ref_doc_id",
                 filters: MetadataFilters | None = None,
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
        for name, weight in (("prior_weight", prior_weight), ("lexical_weight", lexical_weight)):
            if (isinstance(weight, bool) or not isinstance(weight, (int, float))
                    or not (weight >= 0 and math.isfinite(weight))):
                raise ValueError(f"{name} must be a finite number >= 0, got {weight!r}")
        if (isinstance(question_weight, bool) or not isinstance(question_weight, (int, float))
                or not 0.0 <= question_weight <= 1.0):
            raise ValueError(f"question_weight must be a number in [0, 1], got {question_weight!r}")
        if lexical_scope not in LEXICAL_SCOPES:
            raise ValueError(f"lexical_scope must be one of {', '.join(LEXICAL_SCOPES)}, got {lexical_scope!r}")
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
        self.lexical_weight = float(lexical_weight)
        self.lexical_scope = lexical_scope
        self.question_weight = float(question_weight)
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
        other model is pickled as it is.

        Raises:
            TypeError: the index's vector store talks to a client (Chroma, Qdrant...): LlamaIndex drops the client
                when it pickles the store, which would leave a retriever that fails at its first query. Pickle the
                :class:`DocumentIndex` (or :meth:`DocumentIndex.persist` it) and build the retriever again over the
                store where it is unpickled."""
        state = dict(self.__dict__)
        index = state.get("index")
        store = index.vector_store if index is not None else None
        if getattr(store, "client", None) is not None:
            raise TypeError(f"a DocumentAwareRetriever over a {type(store).__name__} cannot be pickled: "
                            "the store's client does not travel; pickle its DocumentIndex and build the retriever "
                            "again over the store (DocumentAwareRetriever.from_defaults(store, document_index))")
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

    @staticmethod
    def _top(prior: Mapping[str, float], n: int) -> list[str]:
        """The ``n`` documents of highest prior (ties by id)."""
        return sorted(prior, key=lambda d: (-prior[d], d))[:n] if n else []

    def _focus(self, prior: Mapping[str, float]) -> list[str]:
        # one query per focus document: each can fill the answer (one over several returns the longest one's chunks)
        return self._top(prior, self.focus_documents)

    def _located(self, prior: Mapping[str, float]) -> list[str]:
        """The documents the prior located: the top-prior ones, as many as the focus documents and at least one."""
        return self._top(prior, max(1, self.focus_documents))

    def _question(self, query_bundle: QueryBundle, prior: Mapping[str, float]) -> QueryBundle | None:
        """The question alone, to embed and search in the located documents; None when the clause order does not
        use it (``question_weight`` 0, no prior, no vector index) or the query has no locator clause."""
        if self.question_weight <= 0 or not prior or self.index is None:
            return None
        question = question_text(query_bundle.query_str)
        return None if question == query_bundle.query_str else QueryBundle(query_str=question)

    def _lexical(self, hits: _Hits, query: str, names: frozenset[str], scope: list[str] | None) -> dict[str, float]:
        """node id -> the unit lexical score of each scored candidate."""
        return lexical_bonus(hits, query, 1.0, names, scope)

    def _rank(self, hits: _Hits, prior: Mapping[str, float], query: str,
              question_hits: _Hits | None = None) -> _Hits:
        """The fused top ``similarity_top_k`` of ``hits``, each located document's places in clause order
        (``question_hits``: the question's filtered queries); the question's words lose the names of the located
        documents."""
        located = self._located(prior)
        question_hits = question_hits or []
        unit: dict[str, float] = {}
        if self.lexical_weight > 0:
            names = frozenset().union(*(self.document_index.names_of(d) for d in located))
            scope = located if self.lexical_scope == "located" and prior else None
            unit = self._lexical([*hits, *question_hits], query, names, scope)
        bonus = {node_id: self.lexical_weight * value for node_id, value in unit.items()}
        ranked = fuse(hits, prior, self.prior_weight, self.similarity_top_k, bonus)
        if not question_hits:
            return ranked  # the clause order is the fused order
        return order_within_documents(ranked, hits, question_hits, located, self.question_weight, unit,
                                      self.lexical_weight)

    def _stale(self, doc_id: str, hits: list[NodeWithScore]) -> None:
        if not hits:
            warnings.warn(f"document {doc_id!r} of the document index has no chunk in the vector store: the index was "
                          "built from another store or is stale; rebuild it with DocumentIndex.from_source(store)",
                          StaleDocumentIndexWarning, stacklevel=caller_stacklevel())

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        prior = self._prepare(query_bundle)
        if self.retriever is not None:
            return self._rank(list(self.retriever.retrieve(query_bundle)), prior, query_bundle.query_str)
        assert self.index is not None
        if query_bundle.embedding is None:  # embed once, for every dense query
            model = self.index._embed_model
            query_bundle.embedding = model.get_agg_embedding_from_queries(query_bundle.embedding_strs)
        hits = list(self._dense(self.candidate_top_k).retrieve(query_bundle))
        for doc_id in self._focus(prior):
            found = self._dense(self.similarity_top_k, [doc_id]).retrieve(query_bundle)
            self._stale(doc_id, found)
            hits.extend(found)
        question_hits: _Hits = []
        question = self._question(query_bundle, prior)
        if question is not None:
            if question.embedding is None:
                question.embedding = self.index._embed_model.get_query_embedding(question.query_str)
            for doc_id in self._located(prior):
                question_hits.extend(self._dense(self.similarity_top_k, [doc_id]).retrieve(question))
        return self._rank(hits, prior, query_bundle.query_str, question_hits)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """:meth:`_retrieve` without blocking the event loop: the wrapped retriever's and the store's async paths
        (the focus queries concurrently), the BM25 prior and the lexical score in a worker thread."""
        prior = await asyncio.to_thread(self._prepare, query_bundle)
        if self.retriever is not None:
            found = await self.retriever.aretrieve(query_bundle)
            return await asyncio.to_thread(self._rank, list(found), prior, query_bundle.query_str)
        assert self.index is not None
        model = self.index._embed_model
        if query_bundle.embedding is None:
            query_bundle.embedding = await model.aget_agg_embedding_from_queries(query_bundle.embedding_strs)
        focus = self._focus(prior)
        question = self._question(query_bundle, prior)
        asked = []
        if question is not None:
            if question.embedding is None:
                question.embedding = await model.aget_query_embedding(question.query_str)
            asked = [self._dense(self.similarity_top_k, [d]).aretrieve(question) for d in self._located(prior)]
        results = await asyncio.gather(self._dense(self.candidate_top_k).aretrieve(query_bundle),
                                       *(self._dense(self.similarity_top_k, [d]).aretrieve(query_bundle)
                                         for d in focus), *asked)
        hits = list(results[0])
        for doc_id, found in zip(focus, results[1:]):
            self._stale(doc_id, found)
            hits.extend(found)
        question_hits = [hit for found in results[1 + len(focus):] for hit in found]
        return await asyncio.to_thread(self._rank, hits, prior, query_bundle.query_str, question_hits)
