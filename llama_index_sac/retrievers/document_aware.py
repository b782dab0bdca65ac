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
   ``similarity_top_k`` chunks of each of the ``focus_documents`` documents with the highest prior (the whole
   prior, before ``outside_prior`` acts outside the named documents; one query filtered to each document's id),
   so the chunks of the document the query names are scored even when the unfiltered dense ranking misses them,
   and enough of them to fill the answer.
   A query that names no document (:mod:`.locator`) has no prior, no lexical score and no clause order: it ranks
   as the wrapped retrieval of the same chunks.
3. **Fusion.** ``score(chunk) = dense_score(chunk) + prior_weight * prior(document of chunk) + lexical_weight *
   lexical(chunk)``; the top ``similarity_top_k`` are returned, each ``NodeWithScore.score`` being the fused score.
   ``lexical`` (:mod:`.chunk_lexical`) is the BM25 of the question (the query without what locates the document:
   the phrases naming documents, :meth:`DocumentIndex.locate`, and the distinctive names of the top-prior
   documents) against the candidates' text, divided by the best candidate's: it picks the clause inside the
   document the prior picked.
4. **Clause order** (:mod:`.clause_order`). The places each located document won keep their document; they are
   refilled by that document's chunks in the order of ``(1 - question_weight) * dense(query) + question_weight *
   dense(question) + lexical_weight * lexical``, the question embedded alone and searched in each located document
   (one more embedding and one filtered dense query per located document, only when the query names a
   document). The lexical score's document frequencies then count those hits as candidates too.

Works over any LlamaIndex vector store whose dense scores are cosine similarities (NumpyVectorStore, Qdrant's
default) or monotone in them, and that filters on the document id key (``ref_doc_id`` by default; every store
LlamaIndex writes keeps it). The document index is built from what the store already holds (the summaries and the
chunks' text; no model call); :meth:`DocumentIndex.persist` saves it beside a ``StorageContext``'s ``persist_dir``.

The weights are in cosine units. LlamaIndex's Chroma store reports ``exp(-distance)``: ``exp(cosine - 1)`` in a
collection created with ``metadata={"hnsw:space": "cosine"}`` (what ``llama-sac ingest`` and ``docs/production.md``
create), whose differences are smaller than the cosine's, so there the prior weighs more; in Chroma's default ``l2``
space (``exp(2 cosine - 2)`` for unit vectors) the scale differs again, so create Chroma collections in cosine space.

A document the prior picks that has no chunk in the store (an index built from another store, or stale) is reported
with a :class:`StaleDocumentIndexWarning`; its prior then changes nothing.
"""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks import CallbackManager
from llama_index.core.indices.vector_store import VectorStoreIndex
from llama_index.core.indices.vector_store.retrievers import VectorIndexRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.vector_stores import FilterCondition, FilterOperator, MetadataFilter, MetadataFilters
from llama_index.core.vector_stores.types import BasePydanticVectorStore

from llama_index_sac._warn import caller_stacklevel
from llama_index_sac.constants import DEFAULT_FOCUS_DOCUMENTS, DEFAULT_SIMILARITY_TOP_K
from llama_index_sac.embeddings.default import default_embedding_model
from llama_index_sac.retrievers._llamaindex import DenseSearch, embed_model_of, index_of
from llama_index_sac.retrievers.document_index import DocumentIndex
from llama_index_sac.retrievers.options import RankingOptions, options_from
from llama_index_sac.retrievers.ranking import located_documents, rank

_Hits = list[NodeWithScore]

__all__ = ["DocumentAwareRetriever", "StaleDocumentIndexWarning", "with_document"]


def with_document(filters: MetadataFilters | None, key: str, doc_ids: list[str]) -> MetadataFilters:
    """``filters`` AND the chunk's document among ``doc_ids`` (flat when ``filters`` is an AND list)."""
    only = MetadataFilter(key=key, value=doc_ids, operator=FilterOperator.IN)
    if filters is None:
        return MetadataFilters(filters=[only])
    if filters.condition in (None, FilterCondition.AND):
        return MetadataFilters(filters=[*filters.filters, only], condition=FilterCondition.AND)
    return MetadataFilters(filters=[filters, only], condition=FilterCondition.AND)


class StaleDocumentIndexWarning(UserWarning):
    """A document of the :class:`DocumentIndex` that the query's prior picked has no chunk in the vector store: the
    index was built from another store or collection, or not rebuilt after documents were removed. Rebuild it with
    :meth:`DocumentIndex.from_source` from the store the retriever reads."""


class DocumentAwareRetriever(BaseRetriever):
    """Retrieval re-weighed by the document prior of :class:`DocumentIndex` (module docstring), a LlamaIndex
    ``BaseRetriever``. It wraps a ``VectorStoreIndex`` (or a ``VectorIndexRetriever``, its ``filters`` kept): dense
    candidates plus a query filtered to each focus document (AND those filters); or any other ``BaseRetriever`` (BM25,
    fusion): its results re-weighed by the prior, in the units of its scores, no focus documents. The ranking is
    :func:`~llama_index_sac.retrievers.ranking.rank`, the postprocessor's.

    Args:
        index: what retrieves the candidates (above).
        document_index: the summaries and names (:meth:`DocumentIndex.from_nodes`, ``from_source``, ``load``).
        similarity_top_k: chunks returned, >= 1.
        options: the ranking's options (:class:`~llama_index_sac.retrievers.options.RankingOptions`; None: the
            defaults). ``focus_documents`` None resolves to 2 over a vector index and 0 otherwise.
        doc_id_key: the metadata key the store filters document ids on.
        filters: metadata filters of every dense query (default: the ``VectorIndexRetriever``'s).
        callback_manager: LlamaIndex's callback manager.
        **option_values: single ranking options (``prior_weight=0.5``...), set over ``options``.

    Raises:
        ValueError: ``similarity_top_k`` below 1, a bad or unknown option (one line naming it),
            ``focus_documents`` above 0 for a retriever that cannot be filtered; at retrieval, a blank query without
            an embedding.
        TypeError: ``document_index`` is not a :class:`DocumentIndex`, ``options`` not ``RankingOptions``, or
            ``index`` neither an index nor a retriever.

    Warns:
        StaleDocumentIndexWarning: a focus document has no chunk in the store (module docstring).
    """

    def __init__(self, index: VectorStoreIndex | BaseRetriever | None, document_index: DocumentIndex, *,
                 similarity_top_k: int = DEFAULT_SIMILARITY_TOP_K, options: RankingOptions | None = None,
                 doc_id_key: str = "ref_doc_id", filters: MetadataFilters | None = None,
                 callback_manager: CallbackManager | None = None, **option_values: Any) -> None:
        wrapped: BaseRetriever | None = None
        if isinstance(index, VectorIndexRetriever):
            index, own_filters = index_of(index)
            filters = own_filters if filters is None else filters
        if isinstance(index, BaseRetriever):
            wrapped, index = index, None
        elif not isinstance(index, VectorStoreIndex):
            raise TypeError(f"index must be a VectorStoreIndex or a BaseRetriever, got {type(index).__name__}")
        if isinstance(similarity_top_k, bool) or not isinstance(similarity_top_k, int) or similarity_top_k < 1:
            raise ValueError(f"similarity_top_k must be an int >= 1, got {similarity_top_k!r}")
        chosen = options_from(RankingOptions, options, option_values)
        if chosen.focus_documents is None:
            chosen = chosen.model_copy(update={"focus_documents": DEFAULT_FOCUS_DOCUMENTS if wrapped is None else 0})
        if wrapped is not None and chosen.focus_documents:
            raise ValueError(f"focus_documents={chosen.focus_documents} needs a vector index to filter by document; "
                             f"{type(wrapped).__name__} cannot be: pass focus_documents=0 (or the VectorStoreIndex)")
        if not isinstance(document_index, DocumentIndex):
            raise TypeError(f"document_index must be a DocumentIndex, got {type(document_index).__name__}")
        super().__init__(callback_manager=callback_manager)
        self.index: VectorStoreIndex | None = index
        self.retriever = wrapped
        self.document_index = document_index
        self.similarity_top_k = similarity_top_k
        #: The ranking's options, ``focus_documents`` resolved.
        self.options: RankingOptions = chosen
        self.candidate_top_k = max(chosen.candidate_top_k, similarity_top_k)
        self.doc_id_key = doc_id_key
        self.filters = filters

    @classmethod
    def class_name(cls) -> str:
        return "DocumentAwareRetriever"

    @classmethod
    def from_defaults(cls, source: Any, document_index: DocumentIndex | None = None, *,
                      embed_model: BaseEmbedding | None = None, similarity_top_k: int = DEFAULT_SIMILARITY_TOP_K,
                      **kwargs: Any) -> DocumentAwareRetriever:
        """The retriever with the package's defaults over ``source``: a ``VectorStoreIndex``, a vector store (read
        with ``embed_model``, default :func:`~llama_index_sac.default_embedding_model`), a ``VectorIndexRetriever``
        or any ``BaseRetriever``. ``document_index`` None: :meth:`DocumentIndex.from_source` of the index or store
        (every stored chunk read once). ``kwargs``: the constructor's other arguments.

        Raises:
            ValueError: no ``document_index`` for a retriever without a vector index, a store without summaries
                (:meth:`DocumentIndex.from_nodes`), or the constructor's errors."""
        if isinstance(source, BasePydanticVectorStore):
            model = embed_model if embed_model is not None else default_embedding_model()
            source = VectorStoreIndex.from_vector_store(source, embed_model=model)
        if document_index is None:
            index = index_of(source)[0] if isinstance(source, VectorIndexRetriever) else source
            if not isinstance(index, VectorStoreIndex):
                raise ValueError(f"a {type(source).__name__} holds no summaries to read: pass document_index= "
                                 "(DocumentIndex.from_nodes(nodes) for the SAC nodes it retrieves from, "
                                 "DocumentIndex.from_source(vector_store) or DocumentIndex.load(path))")
            document_index = DocumentIndex.from_source(index)
        return cls(source, document_index, similarity_top_k=similarity_top_k, **kwargs)

    def __getstate__(self) -> dict[str, Any]:
        """The retriever's state, as pickle takes it.

        Raises:
            TypeError: the index's vector store talks to a client (Chroma, Qdrant...): LlamaIndex drops the client
                when it pickles the store, which would leave a retriever that fails at its first query. Pickle the
                :class:`DocumentIndex` (or :meth:`DocumentIndex.persist` it) and build the retriever again over the
                store where it is unpickled."""
        store = self.index.vector_store if self.index is not None else None
        if getattr(store, "client", None) is not None:
            raise TypeError(f"a DocumentAwareRetriever over a {type(store).__name__} cannot be pickled: "
                            "the store's client does not travel; pickle its DocumentIndex and build the retriever "
                            "again over the store (DocumentAwareRetriever.from_defaults(store, document_index))")
        return dict(self.__dict__)

    # -- the searches ----------------------------------------------------------------------------------------
    def _dense(self, top_k: int, doc_ids: list[str] | None = None) -> DenseSearch:
        """The dense top ``top_k`` of the index, within ``doc_ids`` if given: ``index.as_retriever``'s store query
        and hits (:class:`._llamaindex.DenseSearch`: without a callback event per search)."""
        assert self.index is not None
        filters = self.filters if doc_ids is None else with_document(self.filters, self.doc_id_key, doc_ids)
        return DenseSearch(self.index, similarity_top_k=top_k, filters=filters)

    def _prepare(self, query_bundle: QueryBundle) -> tuple[dict[str, float], dict[str, float]]:
        """Check the query; the prior of its documents and the whole prior, which chooses the located documents
        (:meth:`DocumentIndex.priors_of`; both empty with ``prior_weight=0``)."""
        if query_bundle.embedding is None and not query_bundle.query_str.strip():
            raise ValueError("the query is empty: there is nothing to embed or to match against the documents")
        return self.document_index.priors_of(query_bundle.query_str) if self.options.prior_weight > 0 else ({}, {})

    def _focus(self, whole: dict[str, float]) -> list[str]:
        """The focus documents (by the whole prior): one dense query filtered to each (each can fill the answer)."""
        focus = self.options.focus_documents or 0
        return located_documents(whole, focus) if focus else []

    def _question(self, query_bundle: QueryBundle, prior: dict[str, float]) -> QueryBundle | None:
        """The question alone (what it asks without the names of its documents, :meth:`DocumentIndex.locate`), to
        embed and search in the located documents; None when the clause order does not use it (``question_weight``
        0, no prior, no vector index) or the query names no document."""
        if self.options.question_weight <= 0 or not prior or self.index is None:
            return None
        question = self.document_index.locate(query_bundle.query_str).question
        return None if question == query_bundle.query_str else QueryBundle(query_str=question)

    def _rank(self, hits: _Hits, prior: dict[str, float], query: str, question_hits: _Hits | None = None,
              whole: dict[str, float] | None = None) -> _Hits:
        return rank(hits, query, prior, self.document_index, self.options, self.similarity_top_k,
                    question_hits or (), whole_prior=whole)

    def _stale(self, doc_id: str, hits: list[NodeWithScore]) -> None:
        if not hits:
            warnings.warn(f"document {doc_id!r} of the document index has no chunk in the vector store: the index was "
                          "built from another store or is stale; rebuild it with DocumentIndex.from_source(store)",
                          StaleDocumentIndexWarning, stacklevel=caller_stacklevel())

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        prior, whole = self._prepare(query_bundle)
        if self.retriever is not None:
            return self._rank(list(self.retriever.retrieve(query_bundle)), prior, query_bundle.query_str, None, whole)
        assert self.index is not None
        model = embed_model_of(self.index)
        if query_bundle.embedding is None:  # embed once, for every dense query
            query_bundle.embedding = model.get_agg_embedding_from_queries(query_bundle.embedding_strs)
        hits = list(self._dense(self.candidate_top_k).retrieve(query_bundle))
        for doc_id in self._focus(whole):
            found = self._dense(self.similarity_top_k, [doc_id]).retrieve(query_bundle)
            self._stale(doc_id, found)
            hits.extend(found)
        question_hits: _Hits = []
        question = self._question(query_bundle, prior)
        if question is not None:
            if question.embedding is None:
                question.embedding = model.get_query_embedding(question.query_str)
            for doc_id in located_documents(whole, self.options.focus_documents or 0):
                question_hits.extend(self._dense(self.similarity_top_k, [doc_id]).retrieve(question))
        return self._rank(hits, prior, query_bundle.query_str, question_hits, whole)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """:meth:`_retrieve` without blocking the event loop: the wrapped retriever's and the store's async paths
        (the focus queries concurrently), the BM25 prior and the ranking in a worker thread."""
        prior, whole = await asyncio.to_thread(self._prepare, query_bundle)
        if self.retriever is not None:
            found = await self.retriever.aretrieve(query_bundle)
            return await asyncio.to_thread(self._rank, list(found), prior, query_bundle.query_str, None, whole)
        assert self.index is not None
        model = embed_model_of(self.index)
        if query_bundle.embedding is None:
            query_bundle.embedding = await model.aget_agg_embedding_from_queries(query_bundle.embedding_strs)
        focus = self._focus(whole)
        question = self._question(query_bundle, prior)
        asked = []
        if question is not None:
            if question.embedding is None:
                question.embedding = await model.aget_query_embedding(question.query_str)
            asked = [self._dense(self.similarity_top_k, [d]).aretrieve(question)
                     for d in located_documents(whole, self.options.focus_documents or 0)]
        results = await asyncio.gather(self._dense(self.candidate_top_k).aretrieve(query_bundle),
                                       *(self._dense(self.similarity_top_k, [d]).aretrieve(query_bundle)
                                         for d in focus), *asked)
        hits = list(results[0])
        for doc_id, found in zip(focus, results[1:]):
            self._stale(doc_id, found)
            hits.extend(found)
        question_hits = [hit for found in results[1 + len(focus):] for hit in found]
        return await asyncio.to_thread(self._rank, hits, prior, query_bundle.query_str, question_hits, whole)
