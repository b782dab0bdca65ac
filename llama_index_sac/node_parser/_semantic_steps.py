"""Steps 3 to 6 of :class:`~llama_index_sac.node_parser.semantic.SemanticNodeParser` on one document's units and
vectors: window vectors and distances, breakpoints, the size cap, merging small chunks, closing whitespace gaps.
The semantic module's docstring states the rules; every step here is ``O(k log k)`` or better in the number ``k`` of
units (times the embedding dimension), adversarial documents included.
"""

from __future__ import annotations

import heapq

import numpy as np

from llama_index_sac.spans import Span

__all__ = ["DocumentGeometry", "breakpoints", "cap_group", "close_gaps", "merge_small"]

_EPS = 1e-9


def _normalize_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(np.dot(a, b) / (na * nb))


class DocumentGeometry:
    """The units of one document with their vectors: windows, distances, chunk centroids."""

    def __init__(self, units: list[Span], vectors: np.ndarray, weights: np.ndarray, buffer_size: int) -> None:
        self.units = units
        n = len(units)
        weighted = _normalize_rows(vectors) * weights[:, None]
        self.prefix = np.vstack([np.zeros((1, vectors.shape[1])), np.cumsum(weighted, axis=0)])
        lo = np.clip(np.arange(n) - buffer_size, 0, n)
        hi = np.clip(np.arange(n) + buffer_size + 1, 0, n)
        self.windows = _normalize_rows(self.prefix[hi] - self.prefix[lo])
        # forward windows (unit i and the buffer_size units after it): what the running-chunk method compares
        self.forward = _normalize_rows(self.prefix[hi] - self.prefix[np.arange(n)])
        self.weighted = weighted
        if n > 1:
            self.distances = 1.0 - np.einsum("ij,ij->i", self.windows[:-1], self.windows[1:])
        else:
            self.distances = np.zeros(0)

    def centroid(self, lo: int, hi: int) -> np.ndarray:
        """Length-weighted sum of the unit vectors ``lo..hi`` (inclusive)."""
        return self.prefix[hi + 1] - self.prefix[lo]  # type: ignore[no-any-return]

    def span(self, lo: int, hi: int) -> Span:
        return (self.units[lo][0], self.units[hi][1])

    def length(self, lo: int, hi: int) -> int:
        return self.units[hi][1] - self.units[lo][0]


def breakpoints(geo: DocumentGeometry, method: str, amount: float, number_of_chunks: int | None = None) -> list[int]:
    """Indices ``k`` such that a chunk ends after unit ``k``."""
    d = geo.distances
    if d.size == 0:
        return []
    if number_of_chunks is not None:
        scores = d if method != "gradient" else np.diff(d, prepend=d[0])
        # the number_of_chunks - 1 largest scores that are real shifts (> 0); ties go to the earlier cut
        shifts = [k for k in range(scores.size) if scores[k] > _EPS]
        order = sorted(shifts, key=lambda k: (-round(float(scores[k]), 9), k))
        return sorted(int(k) for k in order[: number_of_chunks - 1])
    if method == "threshold":
        cuts: list[int] = []
        centroid = geo.weighted[0].copy()
        for k in range(d.size):
            if _cos(geo.forward[k + 1], centroid) < amount - _EPS:
                cuts.append(k)
                centroid = geo.weighted[k + 1].copy()
            else:
                centroid += geo.weighted[k + 1]
        return cuts
    scores = d
    if method == "percentile":
        threshold = float(np.percentile(d, amount))
    elif method == "standard_deviation":
        threshold = float(np.mean(d) + amount * np.std(d))
    elif method == "interquartile":
        q25, q75 = np.percentile(d, [25, 75])
        threshold = float(np.mean(d) + amount * (q75 - q25))
    elif method == "gradient":
        if d.size < 2:
            return []
        scores = np.diff(d, prepend=d[0])  # the rise of the distance INTO cut k (see the module docstring)
        threshold = float(np.percentile(scores, amount))
    else:  # pragma: no cover - the field validator refuses other names
        raise ValueError(f"unknown breakpoint method {method!r}")
    return [int(k) for k in np.nonzero(scores > threshold + _EPS)[0]]


def cap_group(geo: DocumentGeometry, lo: int, hi: int, limit: int | None) -> list[tuple[int, int]]:
    """Cut the group of units ``lo..hi`` into chunks within ``limit`` characters at the weakest links."""
    if limit is None or geo.length(lo, hi) <= limit:
        return [(lo, hi)]
    out: list[tuple[int, int]] = []
    p = lo
    while p <= hi:
        if geo.length(p, hi) <= limit:
            out.append((p, hi))
            break
        q = p  # every unit fits on its own (step 1), so the chunk p..p always does
        while q + 1 <= hi and geo.length(p, q + 1) <= limit:
            q += 1
        candidates = [k for k in range(p, q + 1) if 2 * geo.length(p, k) >= limit] or [q]
        # rounded: floating-point noise must not beat a real tie (identical sentences), which goes to the longer chunk
        best = max(candidates, key=lambda k: (round(float(geo.distances[k]), 9), k))
        out.append((p, best))
        p = best + 1
    return out


def merge_small(
    geo: DocumentGeometry, chunks: list[tuple[int, int]], min_size: int, limit: int | None
) -> list[tuple[int, int]]:
    """Merge chunks shorter than ``min_size`` into their more similar neighbour, smallest first.

    Rule: the smallest fragment (ties: the earlier one) that fits within ``limit`` together with a neighbour merges
    into the neighbour whose centroid is more similar (ties: the previous one); repeat until no fragment can merge.
    A fragment that fits with neither neighbour never can later (merges only make its neighbours longer), so a heap
    of the fragments keyed by ``(length, position)`` makes these merges in ``O(k log k)`` for ``k`` chunks."""
    if min_size <= 0 or len(chunks) < 2:
        return chunks
    n = len(chunks)
    lo_of = [lo for lo, _ in chunks]
    hi_of = [hi for _, hi in chunks]
    prev = list(range(-1, n - 1))
    nxt = [*range(1, n), -1]
    alive = [True] * n
    heap = [(geo.length(lo, hi), i) for i, (lo, hi) in enumerate(chunks) if geo.length(lo, hi) < min_size]
    heapq.heapify(heap)

    def fits(i: int, j: int) -> bool:
        return limit is None or geo.length(min(lo_of[i], lo_of[j]), max(hi_of[i], hi_of[j])) <= limit

    while heap:
        length, i = heapq.heappop(heap)
        if not alive[i] or geo.length(lo_of[i], hi_of[i]) != length:
            continue  # merged since it was pushed
        options = [j for j in (prev[i], nxt[i]) if j != -1 and fits(i, j)]
        if not options:
            continue
        own = geo.centroid(lo_of[i], hi_of[i])
        # most similar neighbour; on a tie the previous one (a fragment usually ends what came before)
        j = max(options, key=lambda j: (round(_cos(own, geo.centroid(lo_of[j], hi_of[j])), 9), -j))
        a, b = min(i, j), max(i, j)
        hi_of[a] = hi_of[b]
        alive[b] = False
        nxt[a] = nxt[b]
        if nxt[b] != -1:
            prev[nxt[b]] = a
        merged = geo.length(lo_of[a], hi_of[a])
        if merged < min_size:
            heapq.heappush(heap, (merged, a))
    return [(lo_of[i], hi_of[i]) for i in range(n) if alive[i]]


def close_gaps(text_length: int, spans: list[Span], limit: int | None) -> list[Span]:
    """Give each whitespace gap the recursive fallback left (before, between or after the chunks) to the chunk
    before it, else to the chunk after it, when that keeps the size limit; a gap that fits nowhere stays out."""
    out = list(spans)

    def fits(start: int, end: int) -> bool:
        return limit is None or end - start <= limit

    for i in range(len(out) + 1):
        gap_start = out[i - 1][1] if i > 0 else 0
        gap_end = out[i][0] if i < len(out) else text_length
        if gap_end <= gap_start:
            continue
        if i > 0 and fits(out[i - 1][0], gap_end):
            out[i - 1] = (out[i - 1][0], gap_end)
        elif i < len(out) and fits(gap_start, out[i][1]):
            out[i] = (gap_start, out[i][1])
    return out
