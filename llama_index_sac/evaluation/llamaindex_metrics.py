"""Span metrics for LlamaIndex's own ``RetrieverEvaluator``: :class:`SpanPrecisionMetric`,
:class:`SpanRecallMetric` and :class:`DRMMetric` (``BaseRetrievalMetric`` subclasses).

``RetrieverEvaluator`` hands a metric only node ids and texts, so (decision) the metrics carry a
``node_id -> LocatedSpan`` map (:func:`~llama_index_sac.evaluation.locations.node_locations` of the indexed nodes)
and the gold spans travel as ``expected_ids`` encoded by :func:`gold_span_id` (``"<doc_id>#<start>-<end>"``). A value
that is undefined (DRM with nothing retrieved, anything for a query without gold) is ``NaN`` with
``metadata["defined"] = False``, since LlamaIndex's result type holds a float.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from llama_index.core.bridge.pydantic import Field, field_validator
from llama_index.core.evaluation.retrieval.metrics_base import BaseRetrievalMetric, RetrievalMetricResult

from llama_index_sac.evaluation.evaluator import NodeLocationError
from llama_index_sac.evaluation.metrics import (
    LocatedSpan,
    check_located_spans,
    document_retrieval_mismatch,
    span_precision,
    span_recall,
)

__all__ = ["DRMMetric", "SpanPrecisionMetric", "SpanRecallMetric", "gold_span_id", "parse_gold_span_id"]


def gold_span_id(span: LocatedSpan | tuple[str, int, int]) -> str:
    """Encode a gold span as an ``expected_ids`` entry for ``RetrieverEvaluator``: ``"<doc_id>#<start>-<end>"``.

    Raises:
        TypeError: ``span`` is not a ``(doc_id, start, end)`` triple of a string and two ints.
        ValueError: an empty document id, ``start < 0`` or ``end < start``.
    """
    if isinstance(span, (str, bytes)) or not isinstance(span, Sequence) or len(span) != 3:
        raise TypeError(f"span must be a (doc_id, start, end) triple, got {span!r}")
    doc_id, start, end = check_located_spans([span], "gold_span_id:")[0]
    return f"{doc_id}#{start}-{end}"


def parse_gold_span_id(value: str) -> LocatedSpan:
    """Inverse of :func:`gold_span_id`.

    Raises:
        TypeError: ``value`` is not a string.
        ValueError: naming ``value`` when it is not of the form ``"<doc_id>#<start>-<end>"`` with
            ``start <= end`` (a reversed span such as ``"d1#9-2"`` is refused, not scored as an empty one).
    """
    if not isinstance(value, str):
        raise TypeError(f"expected id {value!r} must be a string '<doc_id>#<start>-<end>', got {type(value).__name__}")
    doc_id, sep, rng = value.rpartition("#")
    start, dash, end = rng.partition("-")
    if not sep or not dash or not doc_id or not start.isdigit() or not end.isdigit():
        raise ValueError(f"expected id {value!r} is not a gold span id of the form '<doc_id>#<start>-<end>'")
    if int(start) > int(end):
        raise ValueError(f"expected id {value!r} is a reversed gold span id: start {int(start)} > end {int(end)}")
    return LocatedSpan(doc_id, int(start), int(end))


def _id_list(ids: Any, what: str) -> list[str]:
    """``ids`` (a list of ids or None) as a list; ``TypeError`` naming ``what`` for a string or non-string ids."""
    if ids is None:
        return []
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
        raise TypeError(f"{what} must be a list of ids, got {type(ids).__name__} {ids!r}")
    bad = [i for i in ids if not isinstance(i, str)]
    if bad:
        raise TypeError(f"{what} must hold string ids, got {bad[0]!r}")
    return list(ids)


class _SpanMetric(BaseRetrievalMetric):
    node_locations: dict[str, LocatedSpan] = Field(
        description="node_id -> (doc_id, start, end) of every indexed node (see node_locations())."
    )
    k: int | None = Field(default=None, ge=1, description="Score the top k retrieved ids only (None: all).")

    @field_validator("node_locations", mode="before")
    @classmethod
    def _check_locations(cls, locations: Any) -> Any:
        if isinstance(locations, Mapping):
            for node_id, span in locations.items():
                if isinstance(span, (str, bytes)) or not isinstance(span, Sequence) or len(span) != 3:
                    raise ValueError(f"node_locations[{node_id!r}] must be a (doc_id, start, end) triple, got {span!r}")
                try:
                    check_located_spans([span], f"node_locations[{node_id!r}]")
                except TypeError as exc:  # reported by pydantic as a ValidationError naming the field
                    raise ValueError(str(exc)) from exc
        return locations

    @field_validator("k", mode="before")
    @classmethod
    def _check_k(cls, k: Any) -> Any:
        if isinstance(k, bool):
            raise ValueError(f"k must be an int or None, got the bool {k!r}")
        return k

    def _spans(
        self, expected_ids: list[str] | None, retrieved_ids: list[str] | None
    ) -> tuple[list[LocatedSpan], list[LocatedSpan]]:
        gold = [parse_gold_span_id(e) for e in _id_list(expected_ids, "expected_ids")]
        retrieved = _id_list(retrieved_ids, "retrieved_ids")
        ranked = retrieved[: self.k] if self.k else retrieved
        unknown = [node_id for node_id in ranked if node_id not in self.node_locations]
        if unknown:
            raise NodeLocationError(
                f"retrieved node id(s) {unknown[:3]} are not in node_locations: build the map from the indexed nodes "
                "with node_locations(nodes or vector store) from llama_index_sac.evaluation.locations"
            )
        return gold, [self.node_locations[node_id] for node_id in ranked]

    @staticmethod
    def _result(value: float | None, **metadata: Any) -> RetrievalMetricResult:
        if value is None:
            return RetrievalMetricResult(score=math.nan, metadata={"defined": False, **metadata})
        return RetrievalMetricResult(score=value, metadata={"defined": True, **metadata})

    @abstractmethod
    def _score(self, gold: list[LocatedSpan], retrieved: list[LocatedSpan]) -> float | None:
        """The metric's value for one query with at least one non-empty gold span (None: undefined)."""

    def compute(
        self,
        query: str | None = None,
        expected_ids: list[str] | None = None,
        retrieved_ids: list[str] | None = None,
        expected_texts: list[str] | None = None,
        retrieved_texts: list[str] | None = None,
        **kwargs: Any,
    ) -> RetrievalMetricResult:
        """Score one query: ``expected_ids`` are gold span ids (:func:`gold_span_id`), ``retrieved_ids`` node ids
        in rank order. A query without a non-empty gold span is ineligible (NaN, ``defined=False``)."""
        gold, retrieved = self._spans(expected_ids, retrieved_ids)
        if not any(span.end > span.start for span in gold):
            return self._result(None, reason="no gold span: ineligible")
        return self._result(self._score(gold, retrieved))


class SpanPrecisionMetric(_SpanMetric):
    """Character precision ``|R ∩ G| / |R|`` for ``RetrieverEvaluator`` (0 when nothing retrieved; NaN,
    ``defined=False`` when the gold set is empty: ineligible)."""

    metric_name: ClassVar[str] = "span_precision"

    def _score(self, gold: list[LocatedSpan], retrieved: list[LocatedSpan]) -> float | None:
        return span_precision(retrieved, gold)


class SpanRecallMetric(_SpanMetric):
    """Character recall ``|R ∩ G| / |G|`` for ``RetrieverEvaluator`` (NaN, ``defined=False`` without gold)."""

    metric_name: ClassVar[str] = "span_recall"

    def _score(self, gold: list[LocatedSpan], retrieved: list[LocatedSpan]) -> float | None:
        return span_recall(retrieved, gold)


class DRMMetric(_SpanMetric):
    """DRM: share of retrieved chunks from a non-gold document, for ``RetrieverEvaluator`` (NaN, ``defined=False``
    when nothing is retrieved or there is no gold span)."""

    metric_name: ClassVar[str] = "drm"

    def _score(self, gold: list[LocatedSpan], retrieved: list[LocatedSpan]) -> float | None:
        return document_retrieval_mismatch(retrieved, {span.doc_id for span in gold if span.end > span.start})
