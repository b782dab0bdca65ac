"""Retrievers: :class:`DocumentAwareRetriever` and its :class:`DocumentIndex`, the same ranking as a node
postprocessor (:class:`DocumentAwarePostprocessor`), their options (:class:`DocumentPriorOptions`,
:class:`RankingOptions`); a document's distinctive names; the question's lexical score over the candidate chunks."""

from llama_index_sac.constants import DEFAULT_MAX_DOCUMENT_FREQUENCY
from llama_index_sac.retrievers.chunk_lexical import lexical_scores, question_text, question_tokens
from llama_index_sac.retrievers.document_aware import DocumentAwareRetriever, StaleDocumentIndexWarning
from llama_index_sac.retrievers.document_index import DocumentIndex
from llama_index_sac.retrievers.document_names import (
    distinctive_names,
    name_pairs,
    name_tokens,
    query_tokens,
    word_tokens,
)
from llama_index_sac.retrievers.options import DocumentPriorOptions, RankingOptions
from llama_index_sac.retrievers.postprocessor import DocumentAwarePostprocessor

__all__ = [
    "DEFAULT_MAX_DOCUMENT_FREQUENCY",
    "DocumentAwarePostprocessor",
    "DocumentAwareRetriever",
    "DocumentIndex",
    "DocumentPriorOptions",
    "RankingOptions",
    "StaleDocumentIndexWarning",
    "distinctive_names",
    "lexical_scores",
    "name_pairs",
    "name_tokens",
    "query_tokens",
    "question_text",
    "question_tokens",
    "word_tokens",
]
