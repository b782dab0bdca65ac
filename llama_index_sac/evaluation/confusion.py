"""Which documents steal retrievals from which: the most-confused (gold document, wrong document) pairs of a run.

A metric over per-query records (``QueryRecord.as_dict()`` of a ``RetrievalQualityEvaluator``, or the records of a
saved results file): it needs no model and no benchmark, only the gold and retrieved spans.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["confused_pairs"]


def confused_pairs(records: Iterable[Mapping[str, Any]], k: int, top: int = 20) -> list[dict[str, Any]]:
    """Count, among the top-``k`` retrieved chunks of every eligible query, each (gold document, wrong document) pair.

    A query with several gold documents is labelled by all of them (``"a.txt + b.txt"``); an empty retrieved span
    (``end <= start``) is not counted; ineligible queries (``scores`` is ``None``) are skipped.

    Args:
        records: per-query mappings with ``query_id``, ``gold`` and ``retrieved`` (lists of ``(doc_id, start, end)``
            character spans, retrieved in rank order) and ``scores`` (``None`` for an ineligible query).
        k: how many top-ranked chunks of each query are looked at (a positive int).
        top: how many pairs are returned (a non-negative int).

    Returns:
        The ``top`` most frequent pairs, most chunks first (ties by gold then wrong document name), each
        ``{"gold": str, "retrieved": str, "chunks": int, "queries": int}``: ``chunks`` wrong-document chunks over
        ``queries`` distinct queries.

    Raises:
        TypeError: ``k`` or ``top`` is not an int.
        ValueError: ``k < 1`` or ``top < 0``.
    """
    for name, value, low in (("k", k, 1), ("top", top, 0)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if value < low:
            raise ValueError(f"{name} must be >= {low}, got {value}")
    chunks: Counter[tuple[str, str]] = Counter()
    queries: dict[tuple[str, str], set[str]] = defaultdict(set)
    for record in records:
        if record.get("scores") is None:
            continue
        gold_docs = sorted({span[0] for span in record["gold"]})
        label = " + ".join(gold_docs)
        for doc_id, start, end in record["retrieved"][:k]:
            if end > start and doc_id not in gold_docs:
                chunks[(label, doc_id)] += 1
                queries[(label, doc_id)].add(record["query_id"])
    ordered = sorted(chunks.items(), key=lambda item: (-item[1], item[0]))[:top]
    return [
        {"gold": gold, "retrieved": stolen, "chunks": count, "queries": len(queries[(gold, stolen)])}
        for (gold, stolen), count in ordered
    ]
