"""Node parsers that cut documents into chunks with exact character offsets."""

from llama_index_sac.node_parser.base import SpanNodeParser
from llama_index_sac.node_parser.recursive import (
    DEFAULT_SEPARATORS,
    LEGAL_SEPARATORS,
    RecursiveCharacterNodeParser,
    recursive_chunk_spans,
)

__all__ = [
    "DEFAULT_SEPARATORS",
    "LEGAL_SEPARATORS",
    "RecursiveCharacterNodeParser",
    "SpanNodeParser",
    "recursive_chunk_spans",
]
