"""Half-open character span arithmetic.

A span is a pair ``(start, end)`` of Python string indices (code points) with ``start <= end``, meaning the
characters ``text[start:end]``. Every function here is pure and works on plain tuples, so the parsers, the
augmentation and the metrics share one definition of "how many characters do these spans cover".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

Span = tuple[int, int]

__all__ = ["Span", "merge_spans", "spans_length", "intersection_length", "validate_span"]


def validate_span(span: Sequence[int], text_length: int | None = None) -> Span:
    """Return ``span`` as an ``(start, end)`` tuple of ints after checking it.

    Raises:
        TypeError: if the bounds are not ints (bools are refused too).
        ValueError: if ``start < 0``, ``end < start`` or, when ``text_length`` is given, ``end > text_length``.
    """
    if len(span) != 2:
        raise ValueError(f"a span is a pair (start, end); got {span!r}")
    start, end = span
    if isinstance(start, bool) or isinstance(end, bool) or not isinstance(start, int) or not isinstance(end, int):
        raise TypeError(f"span bounds must be ints; got {span!r}")
    if start < 0 or end < start:
        raise ValueError(f"span must satisfy 0 <= start <= end; got {span!r}")
    if text_length is not None and end > text_length:
        raise ValueError(f"span {span!r} ends past the text, whose length is {text_length}")
    return (start, end)


def merge_spans(spans: Iterable[Span]) -> list[Span]:
    """Union of half-open spans as a sorted list of disjoint, non-touching, non-empty spans.

    Zero-length spans are dropped; overlapping or adjacent spans (``a.end >= b.start``) are fused, so no character
    is ever counted twice. ``O(n log n)`` for ``n`` spans.
    """
    ordered = sorted((s, e) for s, e in spans if e > s)
    merged: list[Span] = []
    for start, end in ordered:
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def spans_length(spans: Iterable[Span]) -> int:
    """Number of characters covered by the union of ``spans`` (each character counted once)."""
    return sum(end - start for start, end in merge_spans(spans))


def intersection_length(a: Iterable[Span], b: Iterable[Span]) -> int:
    """Number of characters covered by both the union of ``a`` and the union of ``b``.

    Linear sweep over the two merged lists; ``O((n + m) log(n + m))``.
    """
    left, right = merge_spans(a), merge_spans(b)
    i = j = total = 0
    while i < len(left) and j < len(right):
        start = max(left[i][0], right[j][0])
        end = min(left[i][1], right[j][1])
        if end > start:
            total += end - start
        if left[i][1] < right[j][1]:
            i += 1
        else:
            j += 1
    return total
