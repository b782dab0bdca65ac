"""Recursive character splitting with exact spans, and the ``RecursiveCharacterNodeParser``.

The algorithm is the recursive splitter users know from LangChain (split by the first separator of a hierarchy that
occurs in the text, merge the pieces greedily up to ``chunk_size``, split over-long pieces with the finer separators),
recast so that it only ever chooses *cut points*: every chunk is the slice ``text[start:end]`` of the original text,
so offsets are exact by construction and never searched for.

Choices this module makes (and its tests pin):

* A separator ends the piece it closes (a sentence's ``". "`` stays with its sentence). For a regex separator the
  matched characters end the previous piece and a look-ahead part starts the next one, which is how the legal preset
  keeps a heading such as ``"ARTICLE 5"`` at the start of its chunk.
* Greedy merge: from a chunk's start, the chunk ends at the furthest piece boundary that keeps it within
  ``chunk_size`` (measured by the length function on the exact slice). With character length this is one
  ``str.rfind`` per chunk, which is why this splitter is fast on long lines.
* Overlap: the next chunk starts at the earliest boundary that lies at most ``chunk_overlap`` before the previous
  end and still lets the next piece fit, preferring whole pieces of the level being merged and falling back to the
  finer levels (words, then characters) when no whole piece fits in the overlap; a whitespace-only overlap is not
  used. No overlap is added where the next piece is itself too long (the first sub-chunk of an over-long piece
  does not overlap the chunk before it); so overlap is "up to" ``chunk_overlap``, never more.
* The last separator ``""`` cuts at character level, never inside a surrogate pair, a ``\\r\\n`` pair or before a
  combining mark / zero-width joiner / variation selector, unless a single such cluster is longer than ``chunk_size``
  (the size limit is the hard guarantee).
* Whitespace-only chunks are never emitted: such a run is appended to the previous chunk (or prepended to the next)
  when that keeps the size limit, otherwise it is left out. Only whitespace is ever left out, so every
  non-whitespace character is covered (P-COVER) and, in the common case, chunks concatenate back to the text.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from typing import Any

from llama_index.core.bridge.pydantic import Field, field_serializer, model_validator

from llama_index_sac.node_parser.base import SpanNodeParser, callable_identity
from llama_index_sac.spans import Span

__all__ = [
    "DEFAULT_SEPARATORS",
    "LEGAL_SEPARATORS",
    "RecursiveCharacterNodeParser",
    "recursive_chunk_spans",
]

#: Default hierarchy: paragraphs, lines, sentences, words, characters.
DEFAULT_SEPARATORS: list[str] = ["\n\n", "\n", ". ", " ", ""]

#: Regex separators (use with ``is_separator_regex=True``) that follow contract structure before paragraphs and
#: sentences. In order: ARTICLE headings; Section / § headings; SCHEDULE, EXHIBIT, ANNEX, APPENDIX headings; numbered
#: clause headings such as ``1.1`` / ``12.3.4``; numbered paragraphs ``1.`` / ``12.``; lettered or roman
#: sub-clauses ``(a)`` / ``(iv)``; blank lines; line breaks; sentence ends; spaces; characters. Each heading pattern
#: consumes the line break(s) before the heading (they end the previous chunk) and looks ahead at the heading (it
#: starts the next chunk).
LEGAL_SEPARATORS: list[str] = [
    r"\n+(?=[ \t]*(?:ARTICLE|Article)[ \t]+(?:[0-9]+|[IVXLC]+)\b)",
    r"\n+(?=[ \t]*(?:SECTION|Section|§)[ \t]*[0-9]+)",
    r"\n+(?=[ \t]*(?:SCHEDULE|Schedule|EXHIBIT|Exhibit|ANNEX|Annex|APPENDIX|Appendix)\b)",
    r"\n+(?=[ \t]*[0-9]{1,3}(?:\.[0-9]{1,3})+\.?[ \t])",
    r"\n+(?=[ \t]*[0-9]{1,3}\.[ \t])",
    r"\n+(?=[ \t]*\((?:[a-z]{1,2}|[ivxlc]{1,5}|[0-9]{1,3})\)[ \t])",
    r"\n[ \t]*\n\s*",
    r"\n",
    r"(?<=[.;:!?])[ \t]+",
    r" ",
    "",
]

_JOINERS = {"\u200d", "\u034f"}


def _is_grapheme_boundary(text: str, i: int) -> bool:
    """True when cutting between ``text[i-1]`` and ``text[i]`` does not break a user-perceived character."""
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


class _Splitter:
    """One run of the recursive algorithm over one text (holds the text and settings, emits spans in order)."""

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

    # -- piece boundaries of one level -------------------------------------------------------------------------
    def boundaries(self, level: int, s: int, e: int) -> list[int] | None:
        """Sorted piece ends in ``(s, e]`` for ``level``; ``None`` when the fast character path applies."""
        sep, pattern = self.separators[level], self.patterns[level]
        if pattern is not None:
            matches = pattern.finditer(self.text, s, min(e + 256, len(self.text)))  # look-ahead may see past e
            ends = sorted({m.end() for m in matches if s < m.end() < e})
        elif sep == "":
            ends = [i for i in range(s + 1, e) if _is_grapheme_boundary(self.text, i)]
        elif self.length is None:
            return None
        else:
            ends, pos, width = [], self.text.find(sep, s, e), len(sep)
            while pos != -1:
                if pos + width < e:
                    ends.append(pos + width)
                pos = self.text.find(sep, pos + 1, e)  # overlapping occurrences, as rfind sees them
        ends.append(e)
        return ends

    def occurs(self, level: int, s: int, e: int) -> bool:
        sep, pattern = self.separators[level], self.patterns[level]
        if pattern is not None:
            return any(s < m.end() < e for m in pattern.finditer(self.text, s, min(e + 256, len(self.text))))
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
            if self.fits(p, e):
                self.out.append((p, e))
                return
            b = self.furthest(ends, sep, s, p, e)
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

    # The fast path (``ends is None``) searches the text directly; its piece ends are those of the generic path:
    # the ends of every occurrence of ``sep`` (overlapping ones included) that starts at or after the segment start
    # ``s``, plus ``e``. So ``length_function=len`` and the fast path cut identically (a test pins it).
    def furthest(self, ends: list[int] | None, sep: str, s: int, p: int, e: int) -> int | None:
        """Furthest piece end ``b`` in ``(p, e]`` with ``text[p:b]`` within size, or ``None``."""
        if ends is None:  # character length, plain separator: one rfind over the window
            limit = min(p + self.size, e)
            pos = self.text.rfind(sep, max(s, p - len(sep) + 1), limit)
            return None if pos == -1 else pos + len(sep)
        lo = bisect_right(ends, p)
        if lo == len(ends) or not self.fits(p, ends[lo]):
            return None
        if self.length is None:
            return ends[bisect_right(ends, p + self.size) - 1]
        lo = _last_true(lo, len(ends) - 1, lambda i: self.fits(p, ends[i]))
        return ends[lo]

    def next_end(self, ends: list[int] | None, sep: str, s: int, p: int, e: int) -> int:
        """Smallest piece end after ``p`` (``e`` if none)."""
        if ends is None:
            pos = self.text.find(sep, max(s, p - len(sep) + 1), e)
            return e if pos == -1 or pos + len(sep) >= e else pos + len(sep)
        return ends[bisect_right(ends, p)]

    def boundaries_between(self, ends: list[int] | None, sep: str, s: int, lo: int, hi: int) -> list[int]:
        """Piece ends ``q`` with ``lo <= q < hi`` in increasing order."""
        if ends is not None:
            return ends[bisect_left(ends, lo) : bisect_left(ends, hi)]
        found, width = [], len(sep)
        pos = self.text.find(sep, max(lo - width, s), hi)
        while pos != -1 and pos + width < hi:
            if pos + width >= lo:
                found.append(pos + width)
            pos = self.text.find(sep, pos + 1, hi)
        return found

    def overlap_start(self, level: int, ends: list[int] | None, s: int, p: int, b: int, e: int) -> int:
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
            if self.fits(p, e):
                self.out.append((p, e))
                return
            b = self.furthest_char(p, e)
            self.out.append((p, b))
            if not self.overlap:
                p = b
                continue
            q = b
            for cand in range(max(p + 1, b - self.overlap) if self.length is None else p + 1, b):
                if _is_grapheme_boundary(self.text, cand) and self.within_overlap(cand, b):
                    q = cand
                    break
            p = q

    def furthest_char(self, p: int, e: int) -> int:
        if self.length is None:
            b = min(p + self.size, e)
        else:
            b = _last_true(p + 1, e, lambda c: self.fits(p, c))  # p + 1: one character always goes
        cut = b
        while cut > p + 1 and not _is_grapheme_boundary(self.text, cut):
            cut -= 1
        return cut if _is_grapheme_boundary(self.text, cut) else b


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


def _absorb_whitespace(text: str, spans: list[Span], fits: Callable[[int, int], bool]) -> list[Span]:
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


def recursive_chunk_spans(
    text: str,
    *,
    chunk_size: int,
    chunk_overlap: int = 0,
    separators: Sequence[str] = DEFAULT_SEPARATORS,
    is_separator_regex: bool = False,
    length_function: Callable[[str], int] | None = None,
) -> list[Span]:
    """Split ``text`` recursively and return the chunks as ``(start, end)`` spans into ``text``.

    Args:
        text: the document text (Python ``str``; offsets are code-point indices).
        chunk_size: the maximum chunk length, in characters or in the unit of ``length_function``.
        chunk_overlap: the maximum length shared by consecutive chunks (same unit); ``0 <= overlap < size``.
        separators: the hierarchy, coarsest first. Include ``""`` last to guarantee the size limit at character
            level (without it, a piece with no separator is still cut by characters).
        is_separator_regex: treat separators as regular expressions (matched text ends the previous piece).
        length_function: ``None`` for characters (fast path), else a callable measuring a string, e.g. a
            tokenizer's token count.

    Returns:
        Spans in document order with strictly increasing starts and ends; ``text[start:end]`` is never empty or
        whitespace-only, and, measured by the length function, never longer than ``chunk_size`` (a single
        character always counts as fitting, so a tokenizer that gives one character more than ``chunk_size``
        tokens cannot make the split fail).

    Raises:
        ValueError: for a non-positive ``chunk_size``, ``chunk_overlap`` outside ``[0, chunk_size)``, an empty
            separator list, or an invalid regular expression.
    """
    if chunk_size <= 0:
        raise ValueError(f"chunk_size must be > 0, got {chunk_size}")
    if chunk_overlap < 0 or chunk_overlap >= chunk_size:
        raise ValueError(
            f"chunk_overlap must satisfy 0 <= chunk_overlap < chunk_size ({chunk_size}), got {chunk_overlap}"
        )
    if not separators:
        raise ValueError("separators must not be empty")
    patterns: list[re.Pattern[str] | None] = []
    for sep in separators:
        if is_separator_regex and sep != "":
            try:
                patterns.append(re.compile(sep))
            except re.error as exc:
                raise ValueError(f"invalid separator regex {sep!r}: {exc}") from exc
        else:
            patterns.append(None)
    if not text.strip():
        return []
    splitter = _Splitter(text, separators, patterns, chunk_size, chunk_overlap, length_function)
    splitter.split(0, len(text), 0)
    return _absorb_whitespace(text, splitter.out, splitter.fits)


class RecursiveCharacterNodeParser(SpanNodeParser):
    """Recursive character splitting as a LlamaIndex node parser, with exact offsets.

    Splits by the first separator of ``separators`` that occurs in the text, merges the pieces greedily up to
    ``chunk_size``, and splits any piece that is still too long with the finer separators (see the module docstring
    for the exact rules). The SAC paper (Reuter et al., 2025, arXiv 2510.06999, section 3) and LegalBench-RAG
    (Pipitone & Alami, 2024, arXiv 2408.10343) use this method with 500 characters and no overlap, the defaults here.

    Guarantees, for every document: ``node.text == document.text[node.start_char_idx:node.end_char_idx]``; no chunk
    longer than ``chunk_size`` by ``length_function``; no empty or whitespace-only chunk; starts and ends strictly
    increase; a document that fits gives exactly one node; an empty or blank document gives none; consecutive
    chunks share at most ``chunk_overlap``.

    Example::

        parser = RecursiveCharacterNodeParser(chunk_size=500, chunk_overlap=0)
        nodes = parser.get_nodes_from_documents([Document(text=contract_text)])
        spans = parser.chunk_indices(contract_text)   # [(0, 497), (497, 990), ...]

    Raises:
        ValueError (pydantic ``ValidationError``): ``chunk_size <= 0``, ``chunk_overlap < 0`` or
            ``>= chunk_size``, an empty separator list, an invalid separator regex.
    """

    chunk_size: int = Field(default=500, gt=0, description="Maximum chunk length, in characters (or in the unit of "
                            "length_function).")
    chunk_overlap: int = Field(default=0, ge=0, description="Maximum length shared by consecutive chunks, same unit "
                               "as chunk_size; must be < chunk_size.")
    separators: list[str] = Field(default_factory=lambda: list(DEFAULT_SEPARATORS), min_length=1,
                                  description="Separator hierarchy, coarsest first; '' cuts at character level.")
    is_separator_regex: bool = Field(default=False, description="Treat separators as regular expressions.")
    length_function: Callable[[str], int] | None = Field(
        default=None,
        description="Length of a string in the unit of chunk_size; None measures characters. Serialized by name "
        "(module.qualname, plus a code hash for lambdas) so the ingestion cache tells settings apart.",
    )

    @field_serializer("length_function")
    def _serialize_length_function(self, fn: Callable[[str], int] | None) -> str | None:
        return callable_identity(fn)

    @model_validator(mode="after")
    def _check_settings(self) -> RecursiveCharacterNodeParser:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})"
            )
        if self.is_separator_regex:
            for sep in self.separators:
                try:
                    re.compile(sep)
                except re.error as exc:
                    raise ValueError(f"invalid separator regex {sep!r}: {exc}") from exc
        return self

    @classmethod
    def class_name(cls) -> str:
        return "RecursiveCharacterNodeParser"

    @classmethod
    def from_defaults(
        cls,
        chunk_size: int = 500,
        chunk_overlap: int = 0,
        separators: Sequence[str] | None = None,
        is_separator_regex: bool = False,
        length_function: Callable[[str], int] | None = None,
        include_metadata: bool = True,
        include_prev_next_rel: bool = True,
        **kwargs: Any,
    ) -> RecursiveCharacterNodeParser:
        """Build a parser; ``separators=None`` means :data:`DEFAULT_SEPARATORS`."""
        return cls(
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            separators=list(separators) if separators is not None else list(DEFAULT_SEPARATORS),
            is_separator_regex=is_separator_regex,
            length_function=length_function,
            include_metadata=include_metadata,
            include_prev_next_rel=include_prev_next_rel,
            **kwargs,
        )

    @classmethod
    def legal(cls, chunk_size: int = 500, chunk_overlap: int = 0, **kwargs: Any) -> RecursiveCharacterNodeParser:
        """The contract-structure preset: :data:`LEGAL_SEPARATORS` (regex) before paragraphs and sentences."""
        return cls(
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            separators=list(LEGAL_SEPARATORS),
            is_separator_regex=True,
            **kwargs,
        )

    def _length(self, text: str) -> int:
        return len(text) if self.length_function is None else self.length_function(text)

    def _size_limit(self) -> int:
        return self.chunk_size

    def _chunk_indices(self, text: str, reserve: int = 0) -> list[Span]:
        size = self.chunk_size - reserve
        return recursive_chunk_spans(
            text,
            chunk_size=size,
            chunk_overlap=min(self.chunk_overlap, size - 1),
            separators=self.separators,
            is_separator_regex=self.is_separator_regex,
            length_function=self.length_function,
        )
