"""The one ranking of document-aware retrieval: :func:`rank`, used by
:class:`~llama_index_sac.retrievers.document_aware.DocumentAwareRetriever` (sync and async) and
:class:`~llama_index_sac.retrievers.postprocessor.DocumentAwarePostprocessor`, so the same candidates give the same
order.

0. **One scale** (:func:`scaled_scores`): the candidates' scores as ``score_scale`` says, per query: a vector
   index's cosine similarity as it is (the scale the weights were chosen on), a BM25 retriever's scores mapped onto
   the spread of a cosine's (best 1, worst ``1 - COSINE_SPAN``), so ``prior_weight`` and ``lexical_weight`` mean the
   same around any retriever.
1. The **located documents** (:func:`located_documents`): the ``max(1, focus_documents)`` documents of highest prior
   (ties by id); none when no document has a positive prior. The whole prior chooses them (before the share
   ``outside_prior`` is applied outside the named documents, :meth:`~.document_index.DocumentIndex.prior`), so that
   share moves the fused score only, not which documents are searched, scored lexically and put in clause order.
2. The **lexical score** (:func:`lexical_units`): the BM25 of the question (what it asks without the phrases naming
   documents, :meth:`~.document_index.DocumentIndex.locate`, and without the located documents' distinctive names,
   :func:`~.chunk_lexical.question_tokens`) against each candidate's text, divided by the best candidate's, in
   [0, 1]; with ``lexical_scope="located"`` only the located documents' candidates are scored (every candidate when
   none is located). A query that names no document (no prior) gets none: it keeps the order of its hits.
3. **Fusion** (:func:`fuse`): ``score + prior_weight * prior(document) + lexical_weight * lexical(chunk)`` for each
   distinct chunk (its first hit), best first, ties by node id; the top ``top_k``.
4. **Clause order** (:func:`~.clause_order.order_within_documents`): with the question's own hits (its dense queries
   filtered to the located documents), each located document's places are refilled by its chunks in clause order.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

from llama_index.core.schema import MetadataMode, NodeWithScore

from llama_index_sac.constants import COSINE_SPAN, ScoreScale
from llama_index_sac.retrievers.chunk_lexical import lexical_scores, question_tokens
from llama_index_sac.retrievers.clause_order import order_within_documents
from llama_index_sac.retrievers.document_index import DocumentIndex
from llama_index_sac.retrievers.options import RankingOptions

__all__ = ["COSINE_TOLERANCE", "LexicalUnits", "fuse", "located_documents", "lexical_units", "rank", "scaled_scores"]

#: How far past [-1, 1] a cosine similarity may lie by float32 rounding and still be kept as it is by ``"auto"``.
COSINE_TOLERANCE = 1e-4

#: ``(hits, query, locator names, scope) -> node id -> unit lexical score``: :func:`lexical_units` or a stand-in.
LexicalUnits = Callable[[Sequence[NodeWithScore], str, frozenset[str], Collection[str] | None], dict[str, float]]


def _unique(hits: Iterable[NodeWithScore]) -> dict[str, NodeWithScore]:
    seen: dict[str, NodeWithScore] = {}
    for hit in hits:
        seen.setdefault(hit.node.node_id, hit)
    return seen


def scaled_scores(hits: Sequence[NodeWithScore], scale: ScoreScale) -> list[NodeWithScore]:
    """``hits`` with their scores on one scale (None counts as 0), in their order: each a new ``NodeWithScore``, or
    the hits themselves (a new list) when their scores stay as they are and none is None.

    ``"as-is"``: unchanged. ``"band"``: ``1 - COSINE_SPAN * (best - s) / (best - worst)``, the spread of a vector
    index's cosine over its candidates (:data:`~llama_index_sac.constants.COSINE_SPAN`; all equal: 1). ``"max"``: each
    divided by the largest absolute score (the best positive score 1, 0 stays 0; all 0: unchanged). ``"auto"``: as-is
    when every score lies in [-1, 1] (a similarity such as a vector index's cosine, give or take
    :data:`COSINE_TOLERANCE`), else ``"band"`` (BM25 and other unbounded scores).

    Raises:
        ValueError: an unknown ``scale``."""
    scores = [float(hit.score or 0.0) for hit in hits]
    if scale == "auto":
        scale = "as-is" if all(abs(s) <= 1.0 + COSINE_TOLERANCE for s in scores) else "band"
    if scale == "as-is":
        if all(hit.score is not None for hit in hits):
            return list(hits)
        scaled = scores
    elif scale == "band":
        low, high = min(scores, default=0.0), max(scores, default=0.0)
        scaled = [1.0 - COSINE_SPAN * (high - s) / (high - low) if high > low else 1.0 for s in scores]
    elif scale == "max":
        top = max((abs(s) for s in scores), default=0.0)
        scaled = [s / top for s in scores] if top > 0 else scores
    else:
        raise ValueError(f"score_scale must be one of 'auto', 'as-is', 'band', 'max', got {scale!r}")
    return [NodeWithScore(node=hit.node, score=s) for hit, s in zip(hits, scaled)]


def located_documents(prior: Mapping[str, float], focus_documents: int) -> list[str]:
    """The ``max(1, focus_documents)`` document ids of highest ``prior``, best first (ties by id); empty when
    ``prior`` is."""
    return sorted(prior, key=lambda d: (-prior[d], d))[:max(1, focus_documents)] if prior else []


def lexical_units(hits: Sequence[NodeWithScore], query: str, locator_names: Collection[str] = frozenset(),
                  scope: Collection[str] | None = None, *, stem: bool = True) -> dict[str, float]:
    """node id -> the unit lexical score (in (0, 1]) of each distinct candidate that holds a question word: the BM25
    of the question (``query``: what it asks, without ``locator_names``) against the candidates' text (no
    metadata), divided by the best candidate's (:func:`~.chunk_lexical.lexical_scores`). ``scope``: only the
    candidates of these document ids are scored (None or empty: every candidate). ``stem``: compare Snowball stems."""
    seen = _unique(hits)
    if scope:
        seen = {node_id: hit for node_id, hit in seen.items() if hit.node.ref_doc_id in scope}
    texts = [hit.node.get_content(metadata_mode=MetadataMode.NONE) for hit in seen.values()]
    scores = lexical_scores(question_tokens(query, locator_names), texts, stem=stem)
    return {node_id: float(s) for node_id, s in zip(seen, scores) if s > 0}


def fuse(hits: Iterable[NodeWithScore], prior: Mapping[str, float], prior_weight: float, top_k: int | None,
         lexical: Mapping[str, float] | None = None, lexical_weight: float = 0.0) -> list[NodeWithScore]:
    """``score + prior_weight * prior(document of the chunk) + lexical_weight * lexical(node id)`` for each hit (a
    node once, its first hit), best first (ties by node id), the top ``top_k`` (all with None), each a new
    ``NodeWithScore`` with the fused score. ``lexical``: unit scores (:func:`lexical_units`; missing: 0)."""
    units = lexical or {}
    fused = []
    for node_id, hit in _unique(hits).items():
        added = prior_weight * prior.get(hit.node.ref_doc_id or "", 0.0) + lexical_weight * units.get(node_id, 0.0)
        fused.append((-((hit.score or 0.0) + added), node_id, hit))
    fused.sort(key=lambda item: (item[0], item[1]))
    return [NodeWithScore(node=hit.node, score=-negative) for negative, _, hit in fused[:top_k]]


def rank(hits: Sequence[NodeWithScore], query: str, prior: Mapping[str, float], document_index: DocumentIndex,
         options: RankingOptions, top_k: int | None, question_hits: Sequence[NodeWithScore] = (), *,
         units: LexicalUnits = lexical_units, whole_prior: Mapping[str, float] | None = None) -> list[NodeWithScore]:
    """The ranked top ``top_k`` of ``hits`` (module docstring).

    Args:
        hits: the candidates, each with its score for the query (a node's first hit counts), put on one scale
            (:func:`scaled_scores`, ``options.score_scale``; ``question_hits`` on theirs).
        query: the query text. prior: document id -> prior (:meth:`DocumentIndex.prior_of`; empty: none).
        document_index: the index whose names the question loses. options: the weights (``focus_documents`` None
            counts as 0). top_k: places returned (None: every candidate).
        question_hits: the question's hits in the located documents (empty: the fused order is the clause order);
            they also count as candidates of the lexical score.
        units: the lexical score (:func:`lexical_units` by default).
        whole_prior: the prior that chooses the located documents (``prior_of(query, whole=True)``; None or
            empty: ``prior``).

    Returns:
        New ``NodeWithScore`` objects, best first, each with its fused score."""
    hits = scaled_scores(hits, options.score_scale)
    question_hits = scaled_scores(question_hits, options.score_scale) if question_hits else ()
    located = located_documents(whole_prior or prior, options.focus_documents or 0)
    lexical: dict[str, float] = {}
    if options.lexical_weight > 0 and (prior or options.prior_weight == 0):  # no document named: the order given
        names = frozenset().union(*(document_index.names_of(d) for d in located))
        scope = located if options.lexical_scope == "located" else None
        lexical = units([*hits, *question_hits], document_index.locate(query).question, names, scope)
    ranked = fuse(hits, prior, options.prior_weight, top_k, lexical, options.lexical_weight)
    if not question_hits:
        return ranked
    return order_within_documents(ranked, hits, question_hits, located, options.question_weight, lexical,
                                  options.lexical_weight)
