"""Evaluate any LlamaIndex retriever by character spans: precision@k, recall@k, DRM@k (and hit rate, MRR).

Two ways in:

* :class:`RetrievalQualityEvaluator` runs a retriever over a list of :class:`~llama_index_sac.BenchmarkQuery`
  (sync :meth:`~RetrievalQualityEvaluator.evaluate_dataset` and async
  :meth:`~RetrievalQualityEvaluator.aevaluate_dataset`, one shared async body) and returns per-query records plus
  aggregates (per dataset, then the unweighted mean over datasets). It retrieves once per query at the retriever's
  own top-k and scores every requested ``k`` from that one ranking, so the retriever's ``similarity_top_k`` must be
  at least ``max(ks)`` (fewer results are scored as they are; ``n_retrieved`` records how many).
* Adapters for LlamaIndex's own ``RetrieverEvaluator``: :class:`SpanPrecisionMetric`, :class:`SpanRecallMetric`
  and :class:`DRMMetric` (``BaseRetrievalMetric`` subclasses). ``RetrieverEvaluator`` hands a metric only node ids
  and texts, so (decision) the adapters carry a ``node_id -> LocatedSpan`` map (:func:`node_locations` of the
  indexed nodes) and the gold spans travel as ``expected_ids`` encoded by :func:`gold_span_id`
  (``"<doc_id>#<start>-<end>"``). A value that is undefined (DRM with nothing retrieved, anything for a query
  without gold) is ``NaN`` with ``metadata["defined"] = False``, since LlamaIndex's result type holds a float.

What a node must carry: the id of its document and its character offsets into it. The document id is the node's
SOURCE relationship (``node.ref_doc_id``; LlamaIndex node parsers set it), or else the metadata key named by
``doc_id_metadata_key`` (e.g. ``"file_path"`` for nodes that lost their relationships in a vector database); the
offsets are ``node.start_char_idx`` / ``node.end_char_idx``, relative to the original document. A node missing
either raises :class:`NodeLocationError` naming the node and what is missing; nothing is guessed by searching text.
"""

from __future__ import annotations

import asyncio
import math
import time
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from llama_index.core.async_utils import asyncio_run
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.bridge.pydantic import BaseModel, ConfigDict, Field, field_validator
from llama_index.core.evaluation.retrieval.metrics_base import BaseRetrievalMetric, RetrievalMetricResult
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle
from tqdm.auto import tqdm

from llama_index_sac.evaluation.metrics import (
    DEFAULT_KS,
    LocatedSpan,
    QueryScores,
    aggregate,
    check_ks,
    check_located_spans,
    document_retrieval_mismatch,
    score_query,
    span_precision,
    span_recall,
)


class EvaluationQuery(Protocol):
    """What the evaluator reads of a query: :class:`~llama_index_sac.BenchmarkQuery` or any object with
    these attributes (a protocol, so the library layer does not import the benchmark's datasets)."""

    @property
    def query_id(self) -> str: ...

    @property
    def dataset(self) -> str: ...

    @property
    def query(self) -> str: ...

    @property
    def gold(self) -> Sequence[LocatedSpan]: ...

__all__ = [
    "DRMMetric",
    "EvaluationQuery",
    "EvaluationResult",
    "NodeLocationError",
    "QueryRecord",
    "RetrievalQualityEvaluator",
    "SpanPrecisionMetric",
    "SpanRecallMetric",
    "gold_span_id",
    "locate_node",
    "parse_gold_span_id",
]


class NodeLocationError(ValueError):
    """A retrieved node lacks its document id or character offsets, so span metrics cannot be computed."""


def locate_node(node: BaseNode, doc_id_metadata_key: str | None = None) -> LocatedSpan:
    """The ``(doc_id, start, end)`` of a node: SOURCE document id (or ``metadata[doc_id_metadata_key]``) and
    ``start_char_idx``/``end_char_idx``.

    Raises:
        NodeLocationError: naming the node id and what is missing, and how to provide it.
    """
    doc_id = node.ref_doc_id
    if doc_id is None and doc_id_metadata_key is not None:
        value = node.metadata.get(doc_id_metadata_key)
        doc_id = str(value) if value not in (None, "") else None
    start, end = getattr(node, "start_char_idx", None), getattr(node, "end_char_idx", None)
    missing = []
    if doc_id is None:
        where = "no SOURCE relationship (node.ref_doc_id is None)"
        if doc_id_metadata_key is not None:
            where += f" and no metadata[{doc_id_metadata_key!r}]"
        missing.append(f"a document id: {where}")
    if start is None or end is None:
        missing.append("character offsets: start_char_idx/end_char_idx are None")
    if missing:
        raise NodeLocationError(
            f"node {node.node_id!r} cannot be scored, it lacks " + "; and ".join(missing) + ". Span metrics need "
            "every retrieved node to name its document and its [start, end) character range in it: parse documents "
            "with a node parser that records offsets (every llama_index_sac parser, LlamaIndex's SentenceSplitter), "
            "keep the SOURCE relationship or pass doc_id_metadata_key, and use a vector store that keeps them."
        )
    assert doc_id is not None and start is not None and end is not None
    if not isinstance(start, int) or not isinstance(end, int) or start < 0 or end < start:
        raise NodeLocationError(f"node {node.node_id!r} has invalid offsets start_char_idx={start!r}, end={end!r}")
    return LocatedSpan(doc_id, start, end)


@dataclass
class QueryRecord:
    """The outcome of one query: the ranked retrieved chunks, their scores per ``k`` (``None``: ineligible)."""

    query_id: str
    dataset: str
    query: str
    gold: list[LocatedSpan]
    retrieved: list[LocatedSpan]
    scores: dict[int, QueryScores] | None
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "query_id": self.query_id,
            "dataset": self.dataset,
            "query": self.query,
            "gold": [list(span) for span in self.gold],
            "retrieved": [list(span) for span in self.retrieved],
            "scores": None if self.scores is None else {str(k): s.as_dict() for k, s in self.scores.items()},
            "seconds": self.seconds,
        }


@dataclass
class EvaluationResult:
    """Per-query records and their aggregates (see :func:`llama_index_sac.evaluation.metrics.aggregate`)."""

    ks: list[int]
    records: list[QueryRecord]
    aggregates: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def overall(self, metric: str, k: int) -> float | None:
        """Overall (unweighted mean over datasets) value of ``metric`` at ``k``."""
        return self.aggregates["overall"][k][metric]


class RetrievalQualityEvaluator(BaseModel):
    """Score a LlamaIndex retriever on queries with gold spans: precision@k, recall@k, DRM@k, hit rate, MRR.

    Works with any ``BaseRetriever`` whose nodes carry a document id and character offsets (see the module
    docstring). Per-query ``QueryBundle.embedding`` may be supplied (precomputed query embeddings) through
    ``query_embeddings``; retrievers that do not embed ignore it.

    Example::

        evaluator = RetrievalQualityEvaluator(retriever=index.as_retriever(similarity_top_k=64))
        result = evaluator.evaluate_dataset(benchmark.queries)
        result.overall("drm", 8), result.overall("precision", 8)     # unweighted means over the datasets

    Args:
        retriever: the retriever to evaluate; its ``similarity_top_k`` should be at least ``max(ks)``.
        ks: the ``k`` values to score (positive ints); default :data:`DEFAULT_KS` (1, 2, 4, ..., 64).
        doc_id_metadata_key: metadata key holding the document id of a node without a SOURCE relationship;
            ``None`` (default): the SOURCE relationship only.
        workers: queries in flight at once in the async path (an int >= 1); default 4.

    Raises:
        ValueError: a pydantic ``ValidationError`` for a ``k`` below 1 or not an int, or ``workers < 1``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    retriever: BaseRetriever = Field(description="The retriever to evaluate; its top-k should be >= max(ks).")
    ks: list[int] = Field(default_factory=lambda: list(DEFAULT_KS), min_length=1, description="k values to score.")
    doc_id_metadata_key: str | None = Field(
        default=None, description="Metadata key holding the document id when a node has no SOURCE relationship."
    )
    workers: int = Field(default=4, ge=1, description="Queries in flight at once in the async path.")

    @field_validator("ks", mode="before")
    @classmethod
    def _check_ks(cls, ks: Any) -> list[int]:
        try:
            return check_ks(ks)  # ints only (pydantic would read True as 1), each >= 1
        except TypeError as exc:  # pydantic reports ValueErrors as a ValidationError naming the field
            raise ValueError(str(exc)) from exc

    @field_validator("workers", mode="before")
    @classmethod
    def _check_workers(cls, workers: Any) -> Any:
        if isinstance(workers, bool):
            raise ValueError(f"workers must be an int, got the bool {workers!r}")
        return workers

    @classmethod
    def class_name(cls) -> str:
        return "RetrievalQualityEvaluator"

    def _record(self, query: EvaluationQuery, nodes: Sequence[NodeWithScore], seconds: float) -> QueryRecord:
        retrieved = [locate_node(n.node, self.doc_id_metadata_key) for n in nodes]
        return QueryRecord(
            query_id=query.query_id,
            dataset=query.dataset,
            query=query.query,
            gold=list(query.gold),
            retrieved=retrieved,
            scores=score_query(retrieved, query.gold, self.ks),
            seconds=seconds,
        )

    async def aevaluate(self, query: EvaluationQuery, query_embedding: Sequence[float] | None = None) -> QueryRecord:
        """Retrieve for one query and score it (the body every other method shares)."""
        bundle = QueryBundle(query_str=query.query, embedding=list(query_embedding) if query_embedding else None)
        start = time.perf_counter()
        nodes = await self.retriever.aretrieve(bundle)
        return self._record(query, nodes, time.perf_counter() - start)

    def evaluate(self, query: EvaluationQuery, query_embedding: Sequence[float] | None = None) -> QueryRecord:
        """Sync :meth:`aevaluate`."""
        return asyncio_run(self.aevaluate(query, query_embedding))

    async def aevaluate_dataset(
        self,
        queries: Sequence[EvaluationQuery],
        query_embeddings: Mapping[str, Sequence[float]] | None = None,
        show_progress: bool = False,
        desc: str = "Retrieving",
    ) -> EvaluationResult:
        """Evaluate every query (``workers`` at a time) and aggregate; records keep the order of ``queries``.

        Args:
            queries: the queries with their gold spans (:class:`~llama_index_sac.BenchmarkQuery` or alike).
            query_embeddings: maps ``query_id`` to a precomputed query embedding, handed to the retriever in the
                ``QueryBundle``; ``None``: the retriever embeds the query itself.
            show_progress: show a progress bar over the queries.
            desc: the progress bar's label.

        Returns:
            The per-query records (in the order of ``queries``) and their aggregates.

        Raises:
            NodeLocationError: a retrieved node has no document id or offsets.
        """
        semaphore = asyncio.Semaphore(self.workers)
        bar = tqdm(total=len(queries), desc=desc, disable=not show_progress, unit="query")
        start = time.perf_counter()

        async def one(query: EvaluationQuery) -> QueryRecord:
            async with semaphore:
                embedding = query_embeddings.get(query.query_id) if query_embeddings else None
                record = await self.aevaluate(query, embedding)
                bar.update(1)
                return record

        try:
            records = list(await asyncio.gather(*(one(q) for q in queries)))
        finally:
            bar.close()
        return EvaluationResult(
            ks=list(self.ks),
            records=records,
            aggregates=aggregate(({"dataset": r.dataset, "scores": r.scores} for r in records), self.ks),
            seconds=time.perf_counter() - start,
        )

    def evaluate_dataset(
        self,
        queries: Sequence[EvaluationQuery],
        query_embeddings: Mapping[str, Sequence[float]] | None = None,
        show_progress: bool = False,
        desc: str = "Retrieving",
    ) -> EvaluationResult:
        """Sync :meth:`aevaluate_dataset`."""
        return asyncio_run(self.aevaluate_dataset(queries, query_embeddings, show_progress, desc))


# -- adapters for LlamaIndex's RetrieverEvaluator ----------------------------------------------------------------


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
