"""Retrieval evaluation (library): span metrics, DRM, the evaluator and its LlamaIndex metric adapters, node
locations and gold spans. The benchmark runner and its reports are in :mod:`llama_index_sac.apps.benchmark`."""

from llama_index_sac.evaluation.confusion import confused_pairs
from llama_index_sac.evaluation.evaluator import (
    EvaluationResult,
    NodeLocationError,
    QueryRecord,
    RetrievalQualityEvaluator,
    locate_node,
)
from llama_index_sac.evaluation.llamaindex_metrics import DRMMetric, SpanPrecisionMetric, SpanRecallMetric, gold_span_id
from llama_index_sac.evaluation.locations import gold_span, node_locations, stored_nodes
from llama_index_sac.evaluation.metrics import (
    DEFAULT_KS,
    LocatedSpan,
    QueryScores,
    aggregate,
    document_retrieval_mismatch,
    hit_rate,
    reciprocal_rank,
    score_query,
    span_precision,
    span_recall,
)

__all__ = [
    "DEFAULT_KS",
    "DRMMetric",
    "EvaluationResult",
    "LocatedSpan",
    "NodeLocationError",
    "QueryRecord",
    "QueryScores",
    "RetrievalQualityEvaluator",
    "SpanPrecisionMetric",
    "SpanRecallMetric",
    "aggregate",
    "confused_pairs",
    "document_retrieval_mismatch",
    "gold_span",
    "gold_span_id",
    "hit_rate",
    "locate_node",
    "node_locations",
    "reciprocal_rank",
    "score_query",
    "span_precision",
    "span_recall",
    "stored_nodes",
]
