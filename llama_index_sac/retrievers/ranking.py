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
from typing import NamedTuple

from llama_index.core.schema import NodeWithScore

from llama_index_sac.constants import COSINE_SPAN, ScoreScale
from llama_index_sac.retrievers._llamaindex import document_of, node_id_of, text_of
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
    """node id -> the node's first hit, in the order of first hits."""
    seen: dict[str, NodeWithScore] = {}
    for hit in hits:
        seen.setdefault(node_id_of(hit.node), hit)
    return seen


class _Pool(NamedTuple):
    """Distinct candidates, read once per ranking: node id -> the node's first hit, in the order of first hits, and
    node id -> the node's document id (None: none)."""

    hits: dict[str, NodeWithScore]
    documents: dict[str, str | None]

    @classmethod
    def of(cls, hits: Iterable[NodeWithScore]) -> _Pool:
        first = _unique(hits)
        return cls(first, {node_id: document_of(hit.node) for node_id, hit in first.items()})

    def then(self, other: _Pool) -> _Pool:
        """The pool of ``self``'s hits followed by ``other``'s (a node already in ``self`` keeps its hit)."""
        hits, documents = dict(self.hits), dict(self.documents)
        for node_id, hit in other.hits.items():
            if node_id not in hits:
                hits[node_id] = hit
                documents[node_id] = other.documents[node_id]
        return _Pool(hits, documents)

    def within(self, documents: Collection[str]) -> list[NodeWithScore]:
        """The first hits of the nodes of ``documents``, in order (a node without a document counts as in "")."""
        return [hit for node_id, hit in self.hits.items() if (self.documents[node_id] or "") in documents]


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
    raw = [hit.score for hit in hits]
    scores = [float(s or 0.0) for s in raw]
    if scale == "auto":
        scale = "as-is" if all(abs(s) <= 1.0 + COSINE_TOLERANCE for s in scores) else "band"
    if scale == "as-is":
        if None not in raw:
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
    return _lexical_units(_Pool.of(hits), query, locator_names, scope, stem=stem)


def _lexical_units(pool: _Pool, query: str, locator_names: Collection[str], scope: Collection[str] | None, *,
                   stem: bool = True) -> dict[str, float]:
    """:func:`lexical_units` of the candidates in ``pool``."""
    node_ids = list(pool.hits)
    if scope:
        wanted = set(scope)
        node_ids = [node_id for node_id in node_ids if pool.documents[node_id] in wanted]
    texts = [text_of(pool.hits[node_id].node) for node_id in node_ids]
    scores = lexical_scores(question_tokens(query, locator_names), texts, stem=stem)
    return {node_id: s for node_id, s in zip(node_ids, scores.tolist()) if s > 0}


def fuse(hits: Iterable[NodeWithScore], prior: Mapping[str, float], prior_weight: float, top_k: int | None,
         lexical: Mapping[str, float] | None = None, lexical_weight: float = 0.0) -> list[NodeWithScore]:
    """``score + prior_weight * prior(document of the chunk) + lexical_weight * lexical(node id)`` for each hit (a
    node once, its first hit), best first (ties by node id), the top ``top_k`` (all with None), each a new
    ``NodeWithScore`` with the fused score. ``lexical``: unit scores (:func:`lexical_units`; missing: 0)."""
    return _fuse(_Pool.of(hits), prior, prior_weight, top_k, lexical, lexical_weight)


def _fuse(pool: _Pool, prior: Mapping[str, float], prior_weight: float, top_k: int | None,
          lexical: Mapping[str, float] | None, lexical_weight: float) -> list[NodeWithScore]:
    """:func:`fuse` of the candidates in ``pool``."""
    units = lexical or {}
    documents = pool.documents
    fused = [(hit.score or 0.0) + (prior_weight * prior.get(documents[node_id] or "", 0.0)
                                   + lexical_weight * units.get(node_id, 0.0)) for node_id, hit in pool.hits.items()]
    # best first, ties by node id; the ids are distinct, so the hit itself is never compared
    order = sorted(zip([-f for f in fused], pool.hits, pool.hits.values()))[:top_k]
    return [NodeWithScore(node=hit.node, score=-negative) for negative, _, hit in order]


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
    pool = _Pool.of(hits)
    asked = _Pool.of(question_hits)
    lexical: dict[str, float] = {}
    if options.lexical_weight > 0 and (prior or options.prior_weight == 0):  # no document named: the order given
        names = frozenset().union(*(document_index.names_of(d) for d in located))
        scope = located if options.lexical_scope == "located" else None
        question = document_index.locate(query).question
        if units is lexical_units:  # the candidates as already read
            lexical = _lexical_units(pool.then(asked), question, names, scope)
        else:
            lexical = units([*hits, *question_hits], question, names, scope)
    ranked = _fuse(pool, prior, options.prior_weight, top_k, lexical, options.lexical_weight)
    if not question_hits:
        return ranked
    chosen = set(located)  # only the located documents' hits matter to their clause order
    return order_within_documents(ranked, pool.within(chosen), asked.within(chosen), located,
                                  options.question_weight, lexical, options.lexical_weight,
                                  known={**asked.documents, **pool.documents})
