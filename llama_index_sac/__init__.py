"""llama-index-sac: Summary-Augmented Chunking (SAC) for reliable retrieval over similar legal documents.

Reuter et al., "Towards Reliable Retrieval in RAG Systems for Large Legal Datasets", NLLP 2025, arXiv 2510.06999.
"""

from llama_index_sac.augmentation import SummaryAugmentationTransformation
from llama_index_sac.datasets import load_legalbenchrag, synthetic_contracts
from llama_index_sac.embeddings import EmbedLimitWarning, default_embedding_model
from llama_index_sac.evaluation import (
    DRMMetric,
    RetrievalQualityEvaluator,
    SpanPrecisionMetric,
    SpanRecallMetric,
)
from llama_index_sac.ingestion import (
    SACIngestionPipeline,
    SettingsChangedWarning,
    SummaryFailureWarning,
    failed_documents,
)
from llama_index_sac.node_parser import (
    DEFAULT_SEPARATORS,
    LEGAL_SEPARATORS,
    HybridNodeParser,
    RecursiveCharacterNodeParser,
    SemanticNodeParser,
    SpanNodeParser,
)
from llama_index_sac.sentences import sentence_spans
from llama_index_sac.summarizers import (
    BaseSummarizer,
    ExtractiveSummarizer,
    LLMSummarizer,
    LLMUnavailableError,
    SummarizationError,
    SummaryCache,
    SummaryResult,
    TermStatistics,
)
from llama_index_sac.summarizers.cache import CacheWriteWarning, SummaryCacheError
from llama_index_sac.vector_store import NumpyVectorStore

__version__ = "0.1.0"

__all__ = [
    "BaseSummarizer",
    "CacheWriteWarning",
    "SACIngestionPipeline",
    "SettingsChangedWarning",
    "SummaryCacheError",
    "SummaryFailureWarning",
    "SummaryResult",
    "TermStatistics",
    "failed_documents",
    "EmbedLimitWarning",
    "ExtractiveSummarizer",
    "LLMSummarizer",
    "LLMUnavailableError",
    "NumpyVectorStore",
    "SummarizationError",
    "SummaryAugmentationTransformation",
    "SummaryCache",
    "DEFAULT_SEPARATORS",
    "HybridNodeParser",
    "LEGAL_SEPARATORS",
    "RecursiveCharacterNodeParser",
    "SemanticNodeParser",
    "SpanNodeParser",
    "__version__",
    "default_embedding_model",
    "DRMMetric",
    "RetrievalQualityEvaluator",
    "SpanPrecisionMetric",
    "SpanRecallMetric",
    "load_legalbenchrag",
    "synthetic_contracts",
    "sentence_spans",
]
