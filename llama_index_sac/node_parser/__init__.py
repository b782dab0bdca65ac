"""Node parsers that cut documents into chunks with exact character offsets."""

from llama_index_sac.node_parser.base import SpanNodeParser
from llama_index_sac.node_parser.hybrid import HybridNodeParser
from llama_index_sac.node_parser.recursive import (
    DEFAULT_SEPARATORS,
    LEGAL_SEPARATORS,
    RecursiveCharacterNodeParser,
    recursive_chunk_spans,
)
from llama_index_sac.node_parser.semantic import SemanticNodeParser

__all__ = [
    "DEFAULT_SEPARATORS",
    "HybridNodeParser",
    "LEGAL_SEPARATORS",
    "RecursiveCharacterNodeParser",
    "SemanticNodeParser",
    "SpanNodeParser",
    "recursive_chunk_spans",
]
