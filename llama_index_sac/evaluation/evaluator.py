"""Evaluate any LlamaIndex retriever by character spans: precision@k, recall@k, DRM@k (and hit rate, MRR).

:class:`RetrievalQualityEvaluator` runs a retriever over a list of :class:`~llama_index_sac.BenchmarkQuery` (sync
:meth:`~RetrievalQualityEvaluator.evaluate_dataset` and async :meth:`~RetrievalQualityEvaluator.aevaluate_dataset`,
one shared async body) and returns per-query records plus aggregates (per dataset, then the unweighted mean over
datasets). It retrieves once per query at the retriever's own top-k and scores every requested ``k`` from that one
ranking, so the retriever's ``similarity_top_k`` must be at least ``max(ks)`` (fewer results are scored as they are;
``n_retrieved`` records how many). The same metrics for LlamaIndex's own ``RetrieverEvaluator`` are in
:mod:`~llama_index_sac.evaluation.llamaindex_metrics`.

What a node must carry: the id of its document and its character offsets into it. The document id is the node's
SOURCE relationship (``node.ref_doc_id``; LlamaIndex node parsers set it), or else the metadata key named by
``doc_id_metadata_key`` (e.g. ``"file_path"`` for nodes that lost their relationships in a vector database); the
offsets are ``node.start_char_idx`` / ``node.end_char_idx``, relative to the original document. A node missing
either raises :class:`NodeLocationError` naming the node and what is missing; nothing is guessed by searching text.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from llama_index.core.async_utils import asyncio_run
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.bridge.pydantic import BaseModel, ConfigDict, Field, field_validator
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle
from tqdm.auto import tqdm

from llama_index_sac.evaluation.metrics import (
    DEFAULT_KS,
    LocatedSpan,
    QueryScores,
    aggregate,
    check_ks,
    score_query,
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
    "EvaluationQuery",
    "EvaluationResult",
    "NodeLocationError",
    "QueryRecord",
    "RetrievalQualityEvaluator",
    "locate_node",
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
