"""llama-index-sac: Summary-Augmented Chunking (SAC) for reliable retrieval over similar legal documents.

Reuter et al., "Towards Reliable Retrieval in RAG Systems for Large Legal Datasets", NLLP 2025, arXiv 2510.06999.
"""

from llama_index_sac.node_parser import (
    DEFAULT_SEPARATORS,
    LEGAL_SEPARATORS,
    RecursiveCharacterNodeParser,
    SpanNodeParser,
)
from llama_index_sac.sentences import sentence_spans

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_SEPARATORS",
    "LEGAL_SEPARATORS",
    "RecursiveCharacterNodeParser",
    "SpanNodeParser",
    "__version__",
    "sentence_spans",
]
