"""How the document prior and the question's words meet the chunk scores: :func:`fuse`
(``score + prior_weight * prior + lexical``) and :func:`lexical_bonus` (``lexical_weight`` times the question's BM25
over the candidates, :mod:`.chunk_lexical`), shared by :class:`~llama_index_sac.retrievers.DocumentAwareRetriever`
and :class:`~llama_index_sac.retrievers.DocumentAwarePostprocessor`, and :func:`with_document` (a query's filters
narrowed to some documents)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from llama_index.core.schema import MetadataMode, NodeWithScore
from llama_index.core.vector_stores import FilterCondition, FilterOperator, MetadataFilter, MetadataFilters

from llama_index_sac.retrievers.chunk_lexical import lexical_scores, question_tokens

__all__ = ["fuse", "lexical_bonus", "with_document"]


def _unique(hits: Iterable[NodeWithScore]) -> dict[str, NodeWithScore]:
    seen: dict[str, NodeWithScore] = {}
    for hit in hits:
        seen.setdefault(hit.node.node_id, hit)
    return seen


def lexical_bonus(hits: Iterable[NodeWithScore], query: str, lexical_weight: float,
                  locator_names: Iterable[str] = (), scope: Collection[str] | None = None, *,
                  stem: bool = True) -> dict[str, float]:
    """node id -> ``lexical_weight * lexical`` for each distinct candidate (a node once): the BM25 of the question
    (``query`` without its locator clause and ``locator_names``,
    :func:`~llama_index_sac.retrievers.chunk_lexical.question_tokens`) against the candidates' text (no metadata),
    divided by the best candidate's (:func:`~llama_index_sac.retrievers.chunk_lexical.lexical_scores`). ``scope``:
    only the candidates of these document ids are scored (None or empty: every candidate). ``stem``: compare
    Snowball stems (the default). Empty with ``lexical_weight`` 0."""
    if lexical_weight <= 0:
        return {}
    seen = _unique(hits)
    if scope:
        seen = {node_id: hit for node_id, hit in seen.items() if hit.node.ref_doc_id in scope}
    texts = [hit.node.get_content(metadata_mode=MetadataMode.NONE) for hit in seen.values()]
    scores = lexical_scores(question_tokens(query, locator_names), texts, stem=stem)
    return {node_id: lexical_weight * float(s) for node_id, s in zip(seen, scores) if s > 0}


def fuse(hits: Iterable[NodeWithScore], prior: Mapping[str, float], prior_weight: float,
         top_k: int | None, bonus: Mapping[str, float] | None = None) -> list[NodeWithScore]:
    """``score + prior_weight * prior(document of the chunk) + bonus(node id)`` for each hit (a node once, its first
    hit), best first (ties by node id), the top ``top_k`` (all with None), each a new ``NodeWithScore`` with the fused
    score. ``bonus``: e.g. :func:`lexical_bonus` (None: nothing added)."""
    extra = bonus or {}
    fused = []
    for node_id, hit in _unique(hits).items():
        added = prior_weight * prior.get(hit.node.ref_doc_id or "", 0.0) + extra.get(node_id, 0.0)
        fused.append((-((hit.score or 0.0) + added), node_id, hit))
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


