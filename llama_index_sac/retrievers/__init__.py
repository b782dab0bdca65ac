"""Retrievers: :class:`DocumentAwareRetriever` and its :class:`DocumentIndex`, the same prior as a node postprocessor
(:class:`DocumentAwarePostprocessor`); a document's distinctive names."""

from llama_index_sac.retrievers.document_aware import (
    DocumentAwareRetriever,
    DocumentIndex,
    StaleDocumentIndexWarning,
)
from llama_index_sac.retrievers.document_names import (
    DEFAULT_MAX_DOCUMENT_FREQUENCY,
    distinctive_names,
    name_tokens,
    query_tokens,
    word_tokens,
)
from llama_index_sac.retrievers.postprocessor import DocumentAwarePostprocessor

__all__ = [
    "DEFAULT_MAX_DOCUMENT_FREQUENCY",
    "DocumentAwarePostprocessor",
    "DocumentAwareRetriever",
    "DocumentIndex",
    "StaleDocumentIndexWarning",
    "distinctive_names",
    "name_tokens",
    "query_tokens",
    "word_tokens",
]
