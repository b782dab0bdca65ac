"""Which clause of a located document comes first: :func:`order_within_documents`.

The document prior and the fused score decide WHICH DOCUMENT holds each place of the answer; inside a document the
query names, the full query is a poor judge of the clause, because the phrase naming the document ("Consider the
Non-Disclosure Agreement between CEII and NDA; ...") matches the document's summary, which every chunk of the
document embeds alike. The question alone (the query without the phrases naming documents,
:meth:`~.document_index.DocumentIndex.locate`) says which
clause, in the dense space as in words (the "query translator" of arXiv 2508.13107).

So the places a located document won in the fused ranking are refilled, best first, by that document's chunks in
the order of their clause score::

    clause(chunk) = (1 - question_weight) * dense(query, chunk) + question_weight * dense(question, chunk)
                    + lexical_weight * lexical(chunk)

over the document's candidates: the chunks the retriever already holds plus the top chunks of the document for the
question embedding (one dense query filtered to the document). A chunk's score that the store did not return (the
full query's for a chunk only the question found, or the question's for one only the query found) is the lowest
that the store returned for that document (the store returns each document's best, so about the most it can score).
Each place keeps its fused score, so scores stay in order, and every place stays with its document: the
document-level result (DRM) is the fused ranking's, only the order of each located document's own chunks changes.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from llama_index.core.schema import NodeWithScore

from llama_index_sac.retrievers._llamaindex import document_of, node_id_of

__all__ = ["order_within_documents"]


def _by_document(hits: Iterable[NodeWithScore], chosen: Collection[str],
                 known: Mapping[str, str | None]) -> dict[str, dict[str, NodeWithScore]]:
    """document id -> node id -> the node's first hit, for the ``chosen`` documents (each present, maybe empty);
    ``known``: node id -> document id, read from the node when missing."""
    out: dict[str, dict[str, NodeWithScore]] = {doc: {} for doc in chosen}
    for hit in hits:
        node_id = node_id_of(hit.node)
        doc = (known[node_id] if node_id in known else document_of(hit.node)) or ""
        if doc in out:
            out[doc].setdefault(node_id, hit)
    return out


def _lowest(hits: Mapping[str, NodeWithScore]) -> float | None:
    return min((hit.score or 0.0 for hit in hits.values()), default=None)


def order_within_documents(ranked: list[NodeWithScore], candidates: Iterable[NodeWithScore],
                           question_hits: Iterable[NodeWithScore], documents: Collection[str],
                           question_weight: float, lexical: Mapping[str, float],
                           lexical_weight: float, *, known: Mapping[str, str | None] | None = None
                           ) -> list[NodeWithScore]:
    """``ranked`` (the fused answer, best first) with each place held by a chunk of one of ``documents`` refilled by
    that document's chunks in clause order (module docstring); places of other documents unchanged.

    Args:
        ranked: the fused top-k. candidates: every chunk the retriever holds, each with its dense score for the
            full query (the first hit of a node counts). question_hits: chunks with their dense score for the
            question (the question's filtered queries). documents: the located document ids. question_weight: in
            [0, 1]. lexical: node id -> the unit lexical score (missing: 0). lexical_weight: its weight.
        known: node id -> document id (``ref_doc_id``) of nodes already read, so they are not read again; any
            other node's is read from the node.

    Returns:
        A new list of the same length; each place keeps its fused ``score``."""
    chosen = set(documents)
    if not chosen:
        return list(ranked)
    known = known or {}
    places = []
    for hit in ranked:
        node_id = node_id_of(hit.node)
        places.append(known[node_id] if node_id in known else document_of(hit.node))
    if not any(doc in chosen for doc in places):
        return list(ranked)
    dense, question = _by_document(candidates, chosen, known), _by_document(question_hits, chosen, known)
    extra = lexical
    queue: dict[str, list[NodeWithScore]] = {}
    for doc in chosen:
        found, asked = dense[doc], question[doc]
        floor, question_floor = _lowest(found) or 0.0, _lowest(asked)
        pool = {**asked, **found}  # the node as the query found it, else as the question did
        clause: dict[str, float] = {}
        for node_id in pool:
            full = (found[node_id].score or 0.0) if node_id in found else floor
            alone = (asked[node_id].score or 0.0) if node_id in asked else question_floor
            alone = full if alone is None else alone  # no question query: the full query's
            clause[node_id] = ((1.0 - question_weight) * full + question_weight * alone
                               + lexical_weight * extra.get(node_id, 0.0))
        queue[doc] = [pool[node_id] for node_id in sorted(clause, key=lambda n: (-clause[n], n))]
    out: list[NodeWithScore] = []
    taken = {doc: 0 for doc in chosen}
    for hit, place in zip(ranked, places):
        doc = place or ""
        if doc in chosen and taken[doc] < len(queue[doc]):
            out.append(NodeWithScore(node=queue[doc][taken[doc]].node, score=hit.score))
            taken[doc] += 1
        else:
            out.append(hit)
    return out
