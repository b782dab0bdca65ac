"""llama-index-sac: Summary-Augmented Chunking (SAC) for reliable retrieval over similar legal documents.

Reuter et al., "Towards Reliable Retrieval in RAG Systems for Large Legal Datasets", NLLP 2025, arXiv 2510.06999.
"""

from typing import TYPE_CHECKING

from llama_index_sac.augmentation.transformation import SummaryAugmentationTransformation
from llama_index_sac.embeddings.default import default_embedding_model
from llama_index_sac.embeddings.limits import EmbedLimitWarning
from llama_index_sac.evaluation import (
    DRMMetric,
    EvaluationResult,
    LocatedSpan,
    NodeLocationError,
    QueryRecord,
    RetrievalQualityEvaluator,
    SpanPrecisionMetric,
    SpanRecallMetric,
    gold_span,
    gold_span_id,
    node_locations,
)
from llama_index_sac.ingestion.pipeline import (
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
from llama_index_sac.retrievers.document_aware import DocumentAwareRetriever, StaleDocumentIndexWarning
from llama_index_sac.retrievers.document_index import DocumentIndex
from llama_index_sac.retrievers.document_names import distinctive_names
from llama_index_sac.retrievers.postprocessor import DocumentAwarePostprocessor
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
from llama_index_sac.summarizers.cache import CacheReadWarning, CacheWriteWarning, SummaryCacheError
from llama_index_sac.vector_stores.numpy_store import NumpyVectorStore

if TYPE_CHECKING:  # what the lazy names below are, for type checkers
    from llama_index_sac.apps.benchmark.datasets import (
        BenchmarkQuery,
        RetrievalBenchmark,
        load_legalbenchrag,
        synthetic_contracts,
    )

__version__ = "0.2.0"

#: Names served lazily (PEP 562): the benchmark datasets belong to the benchmark application, so
#: ``import llama_index_sac`` does not import them; ``from llama_index_sac import synthetic_contracts`` still works.
_LAZY = {
    "load_legalbenchrag": "llama_index_sac.apps.benchmark.datasets",
    "synthetic_contracts": "llama_index_sac.apps.benchmark.datasets",
    "BenchmarkQuery": "llama_index_sac.apps.benchmark.datasets",
    "RetrievalBenchmark": "llama_index_sac.apps.benchmark.datasets",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'llama_index_sac' has no attribute {name!r}")

__all__ = [
    "BaseSummarizer",
    "CacheReadWarning",
    "CacheWriteWarning",
    "DocumentAwarePostprocessor",
    "DocumentAwareRetriever",
    "DocumentIndex",
    "SACIngestionPipeline",
    "SettingsChangedWarning",
    "StaleDocumentIndexWarning",
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
    "distinctive_names",
    "DRMMetric",
    "EvaluationResult",
    "NodeLocationError",
    "QueryRecord",
    "gold_span",
    "gold_span_id",
    "node_locations",
    "RetrievalQualityEvaluator",
    "SpanPrecisionMetric",
    "SpanRecallMetric",
    "BenchmarkQuery",
    "LocatedSpan",
    "RetrievalBenchmark",
    "load_legalbenchrag",
    "synthetic_contracts",
    "sentence_spans",
]
