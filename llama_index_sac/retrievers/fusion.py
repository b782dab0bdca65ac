"""How the document prior meets the chunk scores: :func:`fuse` (``score + prior_weight * prior``), shared by
:class:`~llama_index_sac.retrievers.DocumentAwareRetriever` and
:class:`~llama_index_sac.retrievers.DocumentAwarePostprocessor`, and :func:`with_document` (a query's filters
narrowed to some documents)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from llama_index.core.schema import NodeWithScore
from llama_index.core.vector_stores import FilterCondition, FilterOperator, MetadataFilter, MetadataFilters

__all__ = ["fuse", "with_document"]


def fuse(hits: Iterable[NodeWithScore], prior: Mapping[str, float], prior_weight: float,
         top_k: int | None) -> list[NodeWithScore]:
    """``score + prior_weight * prior(document of the chunk)`` for each hit (a node once, its first hit), best
    first (ties by node id), the top ``top_k`` (all with None), each a new ``NodeWithScore`` with the fused score."""
    seen: dict[str, NodeWithScore] = {}
    for hit in hits:
        seen.setdefault(hit.node.node_id, hit)
    fused = []
    for node_id, hit in seen.items():
        bonus = prior_weight * prior.get(hit.node.ref_doc_id or "", 0.0)
        fused.append((-((hit.score or 0.0) + bonus), node_id, hit))
    fused.sort(key=lambda item: (item[0], item[1]))
    return [NodeWithScore(node=hit.node, score=-negative) for negative, _, hit in fused[:top_k]]


def with_document(filters: MetadataFilters | None, key: str, doc_ids: list[str]) -> MetadataFilters:
    """``filters`` AND the chunk's document among ``doc_ids`` (flat when ``filters`` is an AND list)."""
    only = MetadataFilter(key=key, value=doc_ids, operator=FilterOperator.IN)
    if filters is None:
        return MetadataFilters(filters=[only])
    if filters.condition in (None, FilterCondition.AND):
        return MetadataFilters(filters=[*filters.filters, only], condition=FilterCondition.AND)
    return MetadataFilters(filters=[filters, only], condition=FilterCondition.AND)


