"""Retrieval quality metrics over character spans: precision@k, recall@k, DRM@k, hit rate, MRR, and aggregation.

Every function here is pure and works on plain values, so the evaluator, the LlamaIndex metric adapters, the CLI and
the tests share one definition.

Spans. A :class:`LocatedSpan` is a half-open range ``[start, end)`` of Python string indices (code points) in one
document, named by its document id (for LegalBench-RAG: the corpus file path, e.g. ``"cuad/foo.txt"``).

Definitions (per query, over the top-``k`` retrieved chunks, in rank order):

* **precision@k** = ``|R ∩ G| / |R|`` and **recall@k** = ``|R ∩ G| / |G|``, where ``R`` is the union of the
  retrieved spans per document and ``G`` the union of the gold spans per document, in characters (Pipitone & Alami,
  "LegalBench-RAG", arXiv 2408.10343, §4 "Evaluation metrics"; also the SAC paper, Reuter et al., arXiv 2510.06999,
  §4). Taking unions means an overlap between two chunks, or the same chunk returned twice, is never counted twice,
  so both values lie in ``[0, 1]``. With non-overlapping chunks and non-overlapping gold spans this equals
  LegalBench-RAG's ``run_benchmark.py`` (which sums pairwise overlaps).
* **DRM@k** (Document-Level Retrieval Mismatch, SAC paper §3) = share of the top-``k`` retrieved chunks whose
  document id is not one of the query's gold documents. Attribution is by the chunk's document id, never by
  searching its text.
* **hit_rate@k** = 1 when at least one top-``k`` chunk shares a character with a gold span, else 0; **MRR@k** =
  ``1 / rank`` of the first such chunk (1-based), 0 when there is none. Character-level versions of LlamaIndex's
  ``HitRate``/``MRR``.

Conventions for degenerate input (the LegalBench-RAG code returns precision 0 for an empty retrieval,
LlamaIndex's ``RetrieverEvaluator`` raises instead, run-llama/llama_index#13926):

* Zero-length spans carry no characters and are ignored everywhere: dropped from the gold set, and a zero-length
  retrieved chunk keeps its rank position (it was returned) but counts in no metric, not even DRM's denominator.
* Nothing retrieved (no non-empty chunk in the top ``k``): precision 0, recall 0, hit rate 0, MRR 0 (precision has no
  natural value here; 0 is the documented convention, as LegalBench-RAG does), and DRM undefined (``None``): it is
  left out of the DRM mean and the number of such queries is reported (``drm_undefined``).
* A query with no (non-empty) gold span is *ineligible*: :func:`score_query` returns ``None`` and it is left out of
  every mean (counted as ``ineligible``). The LegalBench-RAG loader rejects such a query as an input error instead.
* A mean over zero values is ``None`` and a :class:`UserWarning` is emitted (never ``NaN``, never an exception).

Aggregation (both papers): the mean over the eligible queries of each dataset, then the unweighted mean of the
dataset means ("overall"), so a large dataset does not outweigh a small one.

Bad input gets one error naming the argument, never a silent value: a span that is not a ``(doc_id, start, end)``
triple of a non-empty ``str`` and two ints (bools refused) with ``0 <= start <= end`` (``TypeError`` for a wrong type
or shape, ``ValueError`` for wrong values); a single span or a string where a list of spans is expected; a string
where a collection of document ids is expected (``"d1"`` would otherwise be read as the ids ``"d"`` and ``"1"``);
``k`` values that are not positive ints; a mean over values that are not numbers or are NaN/infinite.
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from llama_index_sac._warn import caller_stacklevel
from llama_index_sac.spans import Span, intersection_length, merge_spans, spans_length

__all__ = [
    "DEFAULT_KS",
    "METRIC_NAMES",
    "LocatedSpan",
    "QueryScores",
    "aggregate",
    "check_ks",
    "check_located_spans",
    "document_retrieval_mismatch",
    "hit_rate",
    "mean_or_none",
    "reciprocal_rank",
    "score_query",
    "span_precision",
    "span_recall",
]

#: The k values the CLI reports by default (the SAC paper's figure uses 1..64 in powers of two).
DEFAULT_KS: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)

#: Metric names in :class:`QueryScores` and in the aggregates, in report order.
METRIC_NAMES: tuple[str, ...] = ("drm", "precision", "recall", "hit_rate", "mrr")


class LocatedSpan(NamedTuple):
    """A half-open character span ``[start, end)`` in the document ``doc_id``."""

    doc_id: str
    start: int
    end: int

    @property
    def length(self) -> int:
        return self.end - self.start


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_located_spans(spans: Iterable[Any], what: str) -> list[LocatedSpan]:
    """``spans`` as a list of :class:`LocatedSpan` after checking every one; ``what`` names the argument in errors.

    Raises:
        TypeError: ``spans`` is a single span, a string or not iterable; a span is not a ``(doc_id, start, end)``
            sequence of three items; its bounds are not ints (bools refused).
        ValueError: an empty or non-string document id; ``start < 0`` or ``end < start``.
    """
    if isinstance(spans, (str, bytes)) or not isinstance(spans, Iterable):
        raise TypeError(f"{what} must be a list of (doc_id, start, end) spans, got {type(spans).__name__} {spans!r}")
    if isinstance(spans, tuple) and len(spans) == 3 and isinstance(spans[0], str):
        raise TypeError(f"{what} must be a list of (doc_id, start, end) spans, got the single span {spans!r}: wrap it "
                        "in a list")
    out: list[LocatedSpan] = []
    for i, span in enumerate(spans):
        if isinstance(span, (str, bytes)) or not isinstance(span, Sequence) or len(span) != 3:
            raise TypeError(f"{what}[{i}] is {span!r}: each span must be a (doc_id, start, end) triple")
        doc_id, start, end = span
        if not isinstance(doc_id, str) or not doc_id:
            raise ValueError(f"{what} span {tuple(span)!r}: the document id must be a non-empty string")
        if not _is_int(start) or not _is_int(end):
            raise TypeError(f"{what} span {tuple(span)!r}: start and end must be ints")
        if start < 0 or end < start:
            raise ValueError(f"{what} span {tuple(span)!r}: must satisfy 0 <= start <= end")
        out.append(LocatedSpan(doc_id, start, end))
    return out


_check = check_located_spans


def check_ks(ks: Iterable[int], what: str = "ks") -> list[int]:
    """The ``k`` values sorted and deduplicated; ``TypeError`` unless an iterable of ints (bools refused),
    ``ValueError`` when empty or one is below 1."""
    if isinstance(ks, (str, bytes)) or not isinstance(ks, Iterable):
        raise TypeError(f"{what} must be an iterable of positive ints, got {type(ks).__name__} {ks!r}")
    values = list(ks)
    if not all(_is_int(k) for k in values):
        raise TypeError(f"{what} must be positive ints, got {values!r}")
    if not values or min(values) < 1:
        raise ValueError(f"k values must be positive integers; got {sorted(set(values))!r}")
    return sorted(set(values))


def _check_doc_ids(doc_ids: Iterable[str], what: str) -> set[str]:
    if isinstance(doc_ids, (str, bytes)) or not isinstance(doc_ids, Collection):
        raise TypeError(
            f"{what} must be a collection of document ids (e.g. {{'cuad/a.txt'}}), got {type(doc_ids).__name__} "
            f"{doc_ids!r}"
        )
    ids = set(doc_ids)
    bad = [doc_id for doc_id in ids if not isinstance(doc_id, str)]
    if bad:
        raise TypeError(f"{what} must hold document ids as strings, got {bad[0]!r}")
    return ids


def _by_document(spans: Iterable[LocatedSpan]) -> dict[str, list[Span]]:
    grouped: dict[str, list[Span]] = defaultdict(list)
    for doc_id, start, end in spans:
        if end > start:
            grouped[doc_id].append((start, end))
    return {doc_id: merge_spans(group) for doc_id, group in grouped.items()}


def _overlap(retrieved: dict[str, list[Span]], gold: dict[str, list[Span]]) -> int:
    return sum(intersection_length(spans, gold[doc_id]) for doc_id, spans in retrieved.items() if doc_id in gold)


def span_precision(retrieved: Sequence[LocatedSpan], gold: Sequence[LocatedSpan]) -> float:
    """Character precision ``|R ∩ G| / |R|`` of the retrieved spans against the gold spans (unions per document).

    Returns 0.0 when nothing (no non-empty span) is retrieved, by convention (see the module docstring).
    Raises ``ValueError``/``TypeError`` on a malformed span.
    """
    r, g = _by_document(_check(retrieved, "retrieved")), _by_document(_check(gold, "gold"))
    total = sum(spans_length(spans) for spans in r.values())
    return _overlap(r, g) / total if total else 0.0


def span_recall(retrieved: Sequence[LocatedSpan], gold: Sequence[LocatedSpan]) -> float | None:
    """Character recall ``|R ∩ G| / |G|`` (unions per document).

    Returns ``None`` when the gold set is empty (the query is ineligible), 0.0 when nothing is retrieved.
    """
    r, g = _by_document(_check(retrieved, "retrieved")), _by_document(_check(gold, "gold"))
    total = sum(spans_length(spans) for spans in g.values())
    if not total:
        return None
    return _overlap(r, g) / total


def document_retrieval_mismatch(retrieved: Sequence[LocatedSpan], gold_doc_ids: Iterable[str]) -> float | None:
    """DRM: share of the (non-empty) retrieved chunks whose document id is not in ``gold_doc_ids`` (SAC paper §3).

    Each chunk counts once per rank position (a chunk returned twice counts twice: DRM is a share of retrieval
    slots, not of characters). Returns ``None`` when no non-empty chunk was retrieved (undefined).

    Raises:
        TypeError: ``gold_doc_ids`` is a string or not a collection of strings (``"d1"`` is not ``{"d1"}``); a
            malformed span (see :func:`check_located_spans`).
    """
    golds = _check_doc_ids(gold_doc_ids, "gold_doc_ids")
    chunks = [span for span in _check(retrieved, "retrieved") if span.end > span.start]
    if not chunks:
        return None
    return sum(1 for span in chunks if span.doc_id not in golds) / len(chunks)


def _first_hit_rank(retrieved: Sequence[LocatedSpan], gold: Sequence[LocatedSpan]) -> int | None:
    g = _by_document(_check(gold, "gold"))
    for rank, span in enumerate(_check(retrieved, "retrieved"), start=1):
        if span.end > span.start and span.doc_id in g and intersection_length([(span.start, span.end)], g[span.doc_id]):
            return rank
    return None


def hit_rate(retrieved: Sequence[LocatedSpan], gold: Sequence[LocatedSpan]) -> float:
    """1.0 when some retrieved chunk shares at least one character with a gold span, else 0.0."""
    return 0.0 if _first_hit_rank(retrieved, gold) is None else 1.0


def reciprocal_rank(retrieved: Sequence[LocatedSpan], gold: Sequence[LocatedSpan]) -> float:
    """``1 / rank`` (1-based, rank positions as retrieved) of the first chunk overlapping a gold span, else 0.0."""
    rank = _first_hit_rank(retrieved, gold)
    return 0.0 if rank is None else 1.0 / rank


@dataclass(frozen=True)
class QueryScores:
    """The metrics of one query at one ``k``. ``drm`` is ``None`` when nothing non-empty was retrieved."""

    k: int
    precision: float
    recall: float
    drm: float | None
    hit_rate: float
    mrr: float
    n_retrieved: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "precision": self.precision,
            "recall": self.recall,
            "drm": self.drm,
            "hit_rate": self.hit_rate,
            "mrr": self.mrr,
            "n_retrieved": self.n_retrieved,
        }


def score_query(
    retrieved: Sequence[LocatedSpan], gold: Sequence[LocatedSpan], ks: Iterable[int] = DEFAULT_KS
) -> dict[int, QueryScores] | None:
    """All metrics of one query at every ``k`` in ``ks``, over the ranked ``retrieved`` chunks (best first).

    ``retrieved[:k]`` is the top ``k`` (fewer when fewer were retrieved). Returns ``None`` when the query is
    ineligible (no non-empty gold span). Raises ``ValueError`` for ``k < 1``, ``TypeError`` for a ``k`` that is not
    an int, ``TypeError``/``ValueError`` for a malformed span (see :func:`check_located_spans`).
    """
    ks = check_ks(ks)
    retrieved = _check(retrieved, "retrieved")
    gold = [span for span in _check(gold, "gold") if span.end > span.start]
    if not gold:
        return None
    gold_docs = {span.doc_id for span in gold}
    out: dict[int, QueryScores] = {}
    for k in ks:
        top = retrieved[:k]
        recall = span_recall(top, gold)
        assert recall is not None  # gold is non-empty
        out[k] = QueryScores(
            k=k,
            precision=span_precision(top, gold),
            recall=recall,
            drm=document_retrieval_mismatch(top, gold_docs),
            hit_rate=hit_rate(top, gold),
            mrr=reciprocal_rank(top, gold),
            n_retrieved=len(top),
        )
    return out


def mean_or_none(values: Iterable[float | None], what: str = "metric") -> float | None:
    """Mean of the values that are not ``None``; ``None`` plus a ``UserWarning`` when there are none.

    Raises:
        TypeError: ``values`` is a string or not iterable, or holds something that is not a number or ``None``
            (bools refused).
        ValueError: a NaN or infinite value (a mean over it would be NaN or infinite).
    """
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"values for {what} must be an iterable of numbers or None, got {type(values).__name__}")
    kept = [v for v in values if v is not None]
    for v in kept:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError(f"values for {what} must be numbers or None, got {v!r}")
        if not math.isfinite(v):
            raise ValueError(f"values for {what} must be finite, got {v!r}")
    if not kept:
        warnings.warn(
            f"no eligible value to average for {what}: the mean is None", UserWarning, stacklevel=caller_stacklevel()
        )
        return None
    total = math.fsum(kept) / len(kept)
    return total


@dataclass
class _Bucket:
    values: dict[str, list[float | None]] = field(default_factory=lambda: defaultdict(list))
    n: int = 0


def aggregate(
    records: Iterable[Mapping[str, Any]], ks: Iterable[int] = DEFAULT_KS, metrics: Sequence[str] = METRIC_NAMES
) -> dict[str, Any]:
    """Aggregate per-query records: mean per dataset, then the unweighted mean over datasets ("overall").

    Each record is a mapping with ``"dataset"`` (str) and ``"scores"``: either ``None`` (ineligible query) or a
    mapping ``k -> {metric: value}`` (``QueryScores.as_dict()`` or :func:`score_query`'s result; keys may be ints or
    their strings, as after a JSON round trip).

    Returns ``{"datasets": {name: {k: summary}}, "overall": {k: summary}}`` where a dataset ``summary`` holds
    each metric's mean (``None`` when no value), ``"n_queries"`` (eligible), ``"ineligible"`` and
    ``"drm_undefined"`` (eligible queries whose DRM is ``None``); the overall summary holds the unweighted mean of
    the dataset means (datasets with a ``None`` mean left out), ``"n_datasets"`` and the summed counts.

    Raises:
        TypeError: ``records`` is not an iterable of mappings, ``ks`` not positive ints, ``metrics`` a string; a
            metric value that is not a number or ``None``.
        ValueError: an unknown metric name, a record without ``"dataset"``, a NaN value.
        KeyError: a record without scores for one of ``ks``.
    """
    ks = check_ks(ks)
    if isinstance(metrics, (str, bytes)):
        raise TypeError(f"metrics must be a list of metric names, got the string {metrics!r}")
    unknown = [m for m in metrics if m not in METRIC_NAMES]
    if unknown:
        raise ValueError(f"unknown metric name(s) {unknown}; known: {list(METRIC_NAMES)}")
    if isinstance(records, (str, bytes, Mapping)) or not isinstance(records, Iterable):
        raise TypeError(f"records must be an iterable of mappings, got {type(records).__name__}")
    per_dataset: dict[str, dict[int, _Bucket]] = {}
    ineligible: dict[str, int] = defaultdict(int)
    for i, record in enumerate(records):
        if not isinstance(record, Mapping):
            raise TypeError(f"records[{i}] must be a mapping with 'dataset' and 'scores', got {type(record).__name__}")
        if "dataset" not in record:
            raise ValueError(f"records[{i}] has no 'dataset' key (keys: {sorted(map(str, record))})")
        dataset = str(record["dataset"])
        buckets = per_dataset.setdefault(dataset, {k: _Bucket() for k in ks})
        scores = record.get("scores")
        if scores is None:
            ineligible[dataset] += 1
            continue
        if not isinstance(scores, Mapping):
            raise TypeError(f"records[{i}]['scores'] must be None or a mapping k -> scores, not {type(scores)}")
        for k in ks:
            entry = scores.get(k, scores.get(str(k)))
            if entry is None:
                raise KeyError(f"record {record.get('query_id', '?')!r} has no scores for k={k}")
            if isinstance(entry, QueryScores):
                entry = entry.as_dict()
            buckets[k].n += 1
            for metric in metrics:
                buckets[k].values[metric].append(entry[metric])
    datasets: dict[str, dict[int, dict[str, Any]]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # one warning per dataset below, not one per metric
        for dataset, buckets_by_k in per_dataset.items():
            datasets[dataset] = {}
            for k, bucket in buckets_by_k.items():
                summary: dict[str, Any] = {m: mean_or_none(bucket.values[m], m) for m in metrics}
                summary["n_queries"] = bucket.n
                summary["ineligible"] = ineligible[dataset]
                summary["drm_undefined"] = sum(1 for v in bucket.values.get("drm", []) if v is None)
                datasets[dataset][k] = summary
    for dataset, by_k in datasets.items():
        if by_k and by_k[ks[0]]["n_queries"] == 0:
            warnings.warn(
                f"dataset {dataset!r} has no eligible query ({ineligible[dataset]} ineligible): its means are None",
                UserWarning,
                stacklevel=caller_stacklevel(),
            )
    overall: dict[int, dict[str, Any]] = {}
    for k in ks:
        summary = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            for metric in metrics:
                summary[metric] = mean_or_none([datasets[d][k][metric] for d in datasets], metric)
        summary["n_datasets"] = sum(1 for d in datasets if datasets[d][k]["n_queries"])
        for count in ("n_queries", "ineligible", "drm_undefined"):
            summary[count] = sum(datasets[d][k][count] for d in datasets)
        overall[k] = summary
    if not any(overall[k]["n_queries"] for k in ks):
        warnings.warn(
            "no eligible query in any dataset: every overall mean is None", UserWarning, stacklevel=caller_stacklevel()
        )
    return {"datasets": datasets, "overall": overall}
