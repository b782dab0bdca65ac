"""The recursive splitter's engine (:class:`Splitter`, used by :func:`~llama_index_sac.node_parser.recursive.
recursive_chunk_spans`, which documents the rules) and its linear-time scanning helpers: grapheme boundaries found on
demand, single-character regex separators recognized as plain text, piece ends stored compactly.

Memory stays linear with a small constant on adversarial input (a very long line without whitespace, a long run
of spaces with the legal preset): grapheme boundaries are probed only where a cut is considered, never listed for a
whole segment, and piece ends are kept in an ``array`` of 8-byte integers, not in Python sets or lists.
"""

from __future__ import annotations

import re
import unicodedata
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence

from llama_index_sac.spans import Span

__all__ = [
    "END_ARRAY_TYPECODE",
    "Splitter",
    "absorb_whitespace",
    "ends_array",
    "first_grapheme_boundary",
    "is_grapheme_boundary",
    "last_grapheme_boundary",
    "regex_literal_char",
]

_JOINERS = {"\u200d", "\u034f"}

#: ``array`` type code of piece-end arrays: signed 64-bit, enough for any ``str`` index.
END_ARRAY_TYPECODE = "q"


def is_grapheme_boundary(text: str, i: int) -> bool:
    """True when cutting between ``text[i-1]`` and ``text[i]`` does not break a user-perceived character.

    Not a cut: inside ``\\r\\n``, inside a surrogate pair, next to a zero-width joiner or combining grapheme joiner,
    before a variation selector or skin-tone modifier, before a combining mark (categories Mn, Me, Mc). ``i <= 0``
    and ``i >= len(text)`` are boundaries."""
    if i <= 0 or i >= len(text):
        return True
    prev, cur = text[i - 1], text[i]
    if prev == "\r" and cur == "\n":
        return False
    if "\ud800" <= prev <= "\udbff" and "\udc00" <= cur <= "\udfff":
        return False
    if prev in _JOINERS or cur in _JOINERS:
        return False
    code = ord(cur)
    if 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF or 0x1F3FB <= code <= 0x1F3FF:
        return False
    return unicodedata.category(cur) not in ("Mn", "Me", "Mc")


def last_grapheme_boundary(text: str, lo: int, hi: int) -> int | None:
    """The largest grapheme boundary ``i`` with ``lo <= i <= hi``, or ``None``. Probes from ``hi`` down, so the cost
    is the distance to the answer (one probe in ordinary text)."""
    for i in range(hi, lo - 1, -1):
        if is_grapheme_boundary(text, i):
            return i
    return None


def first_grapheme_boundary(text: str, lo: int, hi: int) -> int | None:
    """The smallest grapheme boundary ``i`` with ``lo <= i < hi``, or ``None`` (cost: the distance to it)."""
    for i in range(lo, hi):
        if is_grapheme_boundary(text, i):
            return i
    return None


def ends_array(ends: Iterable[int]) -> array[int]:
    """Piece ends as an ``array`` of 8-byte ints (``bisect`` and slicing work on it as on a list)."""
    return array(END_ARRAY_TYPECODE, ends)


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v"}
_SPECIAL = set(".^$*+?{}[]|()\\")


def regex_literal_char(pattern: str) -> str | None:
    """The one character a regex separator matches when it is a single literal character (``" "``, ``r"\\n"``,
    ``r"\\."``), else ``None``.

    Such a separator cuts exactly as the same character given as a plain separator (its matches cannot overlap), so
    the splitter may search it with ``str.find``/``str.rfind`` instead of listing every match."""
    if len(pattern) == 1:
        char = pattern if pattern not in _SPECIAL else None
    elif len(pattern) == 2 and pattern[0] == "\\":
        escaped = pattern[1]
        if escaped in _ESCAPES:
            char = _ESCAPES[escaped]
        elif not escaped.isalnum() and escaped != "_":
            char = escaped
        else:
            char = None
    else:
        char = None
    if char is None:
        return None
    try:
        return char if re.fullmatch(pattern, char) is not None else None
    except re.error:
        return None


def _match_ends(pattern: re.Pattern[str], text: str, s: int, e: int) -> Iterator[int]:
    """Distinct ends in ``(s, e)`` of the matches of ``pattern`` searched from ``s`` (a look-ahead may see up to 256
    characters past ``e``), in increasing order: ``finditer`` match ends never decrease."""
    last = s
    for match in pattern.finditer(text, s, min(e + 256, len(text))):
        end = match.end()
        if end >= e:
            return
        if end > last:
            yield end
            last = end


def _occurrence_ends(text: str, sep: str, s: int, e: int) -> Iterator[int]:
    """Ends in ``(s, e)`` of every occurrence of ``sep`` starting at or after ``s``, overlapping ones included."""
    width = len(sep)
    pos = text.find(sep, s, e)
    while pos != -1 and pos + width < e:
        yield pos + width
        pos = text.find(sep, pos + 1, e)


class Splitter:
    """One run of the recursive algorithm over one text (holds the text and settings, emits spans in order).

    Cost: the segments one level splits are disjoint, and each is searched for its separator a bounded number of
    times, so a split costs ``O(len(text) * len(separators))`` searches, each linear (see ``_LINEAR_FORMS``). Piece
    ends are never listed for the two searches that do not need them (a plain separator or ``""`` with character
    length): memory stays near the size of the output. With a length function, the greedy merge measures slices of
    about twice a chunk (:func:`_last_true`), never the rest of the text."""

    def __init__(
        self,
        text: str,
        separators: Sequence[str],
        patterns: Sequence[re.Pattern[str] | None],
        chunk_size: int,
        chunk_overlap: int,
        length_function: Callable[[str], int] | None,
    ) -> None:
        self.text = text
        self.separators = separators
        self.patterns = patterns
        self.size = chunk_size
        self.overlap = chunk_overlap
        self.length = length_function
        self.out: list[Span] = []

    # -- measuring -------------------------------------------------------------------------------------------
    def fits(self, a: int, b: int) -> bool:
        if self.length is None:
            return b - a <= self.size
        return self.length(self.text[a:b]) <= self.size

    def within_overlap(self, a: int, b: int) -> bool:
        if self.length is None:
            return b - a <= self.overlap
        return self.length(self.text[a:b]) <= self.overlap

    def rest_fits(self, p: int, e: int) -> bool:
        """``fits(p, e)`` where it costs O(1) (character length); ``False`` with a length function, where measuring
        the rest of a long segment at every chunk would be quadratic: there the greedy step finds ``e`` itself."""
        return self.length is None and e - p <= self.size

    # -- piece boundaries of one level -------------------------------------------------------------------------
    def boundaries(self, level: int, s: int, e: int) -> Sequence[int] | None:
        """Sorted piece ends in ``(s, e]`` for ``level``; ``None`` when they are searched on demand instead (a plain
        separator or ``""``, with character length)."""
        sep, pattern = self.separators[level], self.patterns[level]
        if pattern is not None:
            ends = ends_array(_match_ends(pattern, self.text, s, e))
        elif self.length is None:
            return None
        elif sep == "":
            text = self.text
            ends = ends_array(i for i in range(s + 1, e) if is_grapheme_boundary(text, i))
        else:
            ends = ends_array(_occurrence_ends(self.text, sep, s, e))  # overlapping occurrences, as rfind sees them
        ends.append(e)
        return ends

    def occurs(self, level: int, s: int, e: int) -> bool:
        sep, pattern = self.separators[level], self.patterns[level]
        if pattern is not None:
            return next(_match_ends(pattern, self.text, s, e), None) is not None
        if sep == "":
            return True
        pos = self.text.find(sep, s, e)
        return pos != -1 and pos + len(sep) < e

    # -- the recursion ---------------------------------------------------------------------------------------
    def split(self, s: int, e: int, level: int) -> None:
        if self.fits(s, e):
            self.out.append((s, e))
            return
        while level < len(self.separators) - 1 and not self.occurs(level, s, e):
            level += 1
        if not self.occurs(level, s, e):  # only possible when the last separator is not "": cut by characters
            self.hard_cut(s, e)
            return
        ends = self.boundaries(level, s, e)
        sep = self.separators[level]
        p = s
        while p < e:
            if self.rest_fits(p, e):
                self.out.append((p, e))
                return
            b = self.furthest(ends, sep, s, p, e)  # e when the rest fits
            if b is None:  # the piece starting at p is longer than chunk_size: split it with finer separators
                piece_end = self.next_end(ends, sep, s, p, e)
                if level + 1 < len(self.separators):
                    self.split(p, piece_end, level + 1)
                else:
                    self.hard_cut(p, piece_end)
                p = piece_end
                continue
            self.out.append((p, b))
            if b >= e:
                return
            p = self.overlap_start(level, ends, s, p, b, e) if self.overlap else b

    # The on-demand path (``ends is None``) searches the text directly; its piece ends are those of the listed path:
    # the ends of every occurrence of ``sep`` (overlapping ones included) that starts at or after the segment start
    # ``s``, or every grapheme boundary for ``""``, plus ``e``. So ``length_function=len`` and the on-demand path cut
    # identically (a test pins it).
    def furthest(self, ends: Sequence[int] | None, sep: str, s: int, p: int, e: int) -> int | None:
        """Furthest piece end ``b`` in ``(p, e]`` with ``text[p:b]`` within size, or ``None``."""
        if ends is None:  # character length: one rfind (or a few boundary probes) over the window
            limit = min(p + self.size, e)
            if sep == "":
                return e if limit == e else last_grapheme_boundary(self.text, p + 1, limit)
            pos = self.text.rfind(sep, max(s, p - len(sep) + 1), limit)
            return None if pos == -1 else pos + len(sep)
        lo = bisect_right(ends, p)
        if lo == len(ends) or not self.fits(p, ends[lo]):
            return None
        if self.length is None:
            return ends[bisect_right(ends, p + self.size) - 1]
        lo = _last_true(lo, len(ends) - 1, lambda i: self.fits(p, ends[i]))
        return ends[lo]

    def next_end(self, ends: Sequence[int] | None, sep: str, s: int, p: int, e: int) -> int:
        """Smallest piece end after ``p`` (``e`` if none)."""
        if ends is None:
            if sep == "":
                q = first_grapheme_boundary(self.text, p + 1, e)
                return e if q is None else q
            pos = self.text.find(sep, max(s, p - len(sep) + 1), e)
            return e if pos == -1 or pos + len(sep) >= e else pos + len(sep)
        return ends[bisect_right(ends, p)]

    def boundaries_between(self, ends: Sequence[int] | None, sep: str, s: int, lo: int, hi: int) -> Sequence[int]:
        """Piece ends ``q`` with ``lo <= q < hi`` in increasing order."""
        if ends is not None:
            return ends[bisect_left(ends, lo) : bisect_left(ends, hi)]
        if sep == "":
            text = self.text
            return [q for q in range(max(lo, s + 1), hi) if is_grapheme_boundary(text, q)]
        found, width = [], len(sep)
        pos = self.text.find(sep, max(lo - width, s), hi)
        while pos != -1 and pos + width < hi:
            if pos + width >= lo:
                found.append(pos + width)
            pos = self.text.find(sep, pos + 1, hi)
        return found

    def overlap_start(self, level: int, ends: Sequence[int] | None, s: int, p: int, b: int, e: int) -> int:
        """Start of the chunk after ``[p, b)``: the earliest boundary ``q`` in ``(p, b)`` with ``text[q:b]`` within
        ``chunk_overlap`` and the next piece of this level still fitting after it; ``b`` (no overlap) if none.

        Boundaries of this level are preferred (whole pieces); when none qualifies (say, every sentence is longer
        than the overlap), the finer levels are tried in order (words, then characters). An overlap of whitespace
        only is never used."""
        sep = self.separators[level]
        nb = self.next_end(ends, sep, s, b, e)
        lo = max(p + 1, b - self.overlap) if self.length is None else p + 1
        for lvl in range(level, len(self.separators)):
            # this level's pieces of the segment, else a finer level's pieces inside the previous chunk [p, b)
            seg, cands = (s, ends) if lvl == level else (p, self.boundaries(lvl, p, b + 1))
            for q in self.boundaries_between(cands, self.separators[lvl], seg, lo, b):
                if self.within_overlap(q, b) and self.fits(q, nb) and not self.text[q:b].isspace():
                    return q
        return b

    def hard_cut(self, s: int, e: int) -> None:
        """Character-level chunks of ``[s, e)`` at grapheme boundaries where possible."""
        p = s
        while p < e:
            if self.rest_fits(p, e):
                self.out.append((p, e))
                return
            b = self.furthest_char(p, e)  # e when the rest fits
            self.out.append((p, b))
            if b >= e:
                return
            if not self.overlap:
                p = b
                continue
            q = b
            for cand in range(max(p + 1, b - self.overlap) if self.length is None else p + 1, b):
                if is_grapheme_boundary(self.text, cand) and self.within_overlap(cand, b):
                    q = cand
                    break
            # the chunk from q must end past b (a grapheme cluster across q + size can stop it at b): else no overlap
            p = q if q < b and self.furthest_char(q, e) > b else b

    def furthest_char(self, p: int, e: int) -> int:
        """End of the character-level chunk from ``p``: ``e`` when the rest fits, else the last grapheme boundary
        within size (the size limit itself when a single cluster is longer)."""
        if self.length is None:
            b = min(p + self.size, e)
        else:
            b = _last_true(p + 1, e, lambda c: self.fits(p, c))  # p + 1: one character always goes
        if b >= e:
            return e
        cut = last_grapheme_boundary(self.text, p + 1, b)
        return b if cut is None else cut


def _last_true(lo: int, hi: int, pred: Callable[[int], bool]) -> int:
    """Largest ``i`` in ``[lo, hi]`` with ``pred(i)``, given ``pred(lo)`` and ``pred`` true then false.

    Gallops from ``lo`` before bisecting, so the probes stay near ``lo`` (a length function is then never run on
    a slice much longer than the answer)."""
    step = 1
    while lo + step <= hi and pred(lo + step):
        lo += step
        step *= 2
    hi = min(hi, lo + step - 1)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if pred(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def absorb_whitespace(text: str, spans: list[Span], fits: Callable[[int, int], bool]) -> list[Span]:
    """Remove whitespace-only spans: join each to its neighbour when the size allows, else leave it out."""
    result: list[Span] = []
    pending: Span | None = None  # leading whitespace waiting for the next real chunk
    for start, end in spans:
        if text[start:end].strip():
            if pending is not None and pending[1] == start and fits(pending[0], end):
                start = pending[0]
            pending = None
            result.append((start, end))
            continue
        if result and result[-1][1] == start and fits(result[-1][0], end):
            result[-1] = (result[-1][0], end)
        elif pending is not None and pending[1] == start:
            pending = (pending[0], end)
        else:
            pending = (start, end)
    return result
