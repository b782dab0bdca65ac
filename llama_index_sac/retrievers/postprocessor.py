"""The document prior as a LlamaIndex node postprocessor: :class:`DocumentAwarePostprocessor`.

Any query engine (``index.as_query_engine(node_postprocessors=[...])``, ``RetrieverQueryEngine``, chat engines) can
re-rank its retrieved chunks with the prior of :class:`~llama_index_sac.retrievers.DocumentIndex`, by the ranking of
:class:`~llama_index_sac.retrievers.DocumentAwareRetriever` (:func:`~llama_index_sac.retrievers.ranking.rank`) over
the chunks it is given: the same chunks give the same order. It cannot fetch the chunks of the documents the query
names that the retriever missed (the retriever's ``focus_documents``): retrieve generously (``similarity_top_k``) and
keep ``top_n``.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from llama_index_sac.retrievers.document_index import DocumentIndex
from llama_index_sac.retrievers.options import RankingOptions, options_from
from llama_index_sac.retrievers.ranking import rank

__all__ = ["DocumentAwarePostprocessor"]


class DocumentAwarePostprocessor(BaseNodePostprocessor):
    """Re-rank retrieved chunks by ``score + prior_weight * prior(document of the chunk) + lexical_weight *
    lexical(chunk)`` (:func:`~llama_index_sac.retrievers.ranking.rank`; the document located: the one of highest
    prior).

    Args:
        document_index: the summaries and names (:meth:`DocumentIndex.from_source`, ``load``, ``from_persist_dir``).
        options: the ranking's options (:class:`~llama_index_sac.retrievers.options.RankingOptions`; None: the
            defaults); weights in the units of the retriever's scores (cosine for a vector index).
        top_n: chunks kept (None: all, re-ordered).
        **option_values: single ranking options (``prior_weight=0.5``...), set over ``options``.

    Raises:
        TypeError: ``document_index`` is not a :class:`DocumentIndex`, ``options`` not ``RankingOptions``.
        ValueError: a bad or unknown option (one line naming it), ``focus_documents`` above 0 (nothing to filter),
            ``top_n`` below 1; at query time, no query.
    """

    options: RankingOptions = Field(default_factory=RankingOptions, description="The ranking's options.")
    top_n: int | None = Field(default=None, ge=1, description="Chunks kept after re-ranking (None: all).")

    _document_index: DocumentIndex = PrivateAttr()

    def __init__(self, document_index: DocumentIndex, *, options: RankingOptions | None = None,
                 top_n: int | None = None, **option_values: Any) -> None:
        if not isinstance(document_index, DocumentIndex):
            raise TypeError(f"document_index must be a DocumentIndex, got {type(document_index).__name__}")
        chosen = options_from(RankingOptions, options, option_values)
        if chosen.focus_documents:
            raise ValueError(f"focus_documents={chosen.focus_documents}: a postprocessor filters no query by "
                             "document; use DocumentAwareRetriever over the vector index")
        fields: dict[str, Any] = {"options": chosen.model_copy(update={"focus_documents": 0}), "top_n": top_n}
        super().__init__(**fields)
        self._document_index = document_index

    @classmethod
    def class_name(cls) -> str:
        return "DocumentAwarePostprocessor"

    @property
    def document_index(self) -> DocumentIndex:
        return self._document_index

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        if query_bundle is None:
            raise ValueError("DocumentAwarePostprocessor needs the query (query_bundle or query_str)")
        query = query_bundle.query_str
        prior, whole = self._document_index.priors_of(query) if self.options.prior_weight > 0 else ({}, {})
        return rank(nodes, query, prior, self._document_index, self.options, self.top_n, whole_prior=whole)
