"""The text of a PDF for chunking: the page texts ``pypdf`` extracts, turned into paragraphs, and where pages begin.

A PDF has no paragraphs, only lines: ``pypdf`` ends every printed line with ``"\\n"``, so a sentence wrapped over
three lines carries two line breaks, which a chunker takes for paragraph ends. :func:`pdf_text` rebuilds the text a
word processor would have had:

* **Wrapped lines are joined** with one space. A line break is a wrap when the next line's first word would not have
  fitted on the line (its length plus one plus that word's length exceeds :data:`WRAP_FRACTION` of the document's
  full line length, the 90th percentile of its line lengths, in characters), or when the next line starts with a
  lower-case letter and the line does not end with ``. : ; ! ?``. Any other line break is kept (a heading, a list
  item, a paragraph's short last line): ``"\\n"`` within a page, a blank line between pages. Blank lines within a
  page are a paragraph break (one ``"\\n\\n"``); at a page's end they count for nothing (the page break is decided
  as above).
* **End-of-line hyphenation is repaired** where the word is known: ``"cop-"`` + ``"ies"`` becomes ``"copies"`` when
  ``"copies"`` occurs elsewhere in the document (as a word, any case); otherwise the hyphen is kept and the halves
  joined without a space (``"state-"`` + ``"owned"``: ``"state-owned"``; ``"Attorney-"`` + ``"Client"``). Only a
  hyphen after a letter, followed by a line that starts with a lower-case letter, can go. A line that ends with a
  dash (hyphen, en or em dash) right after a character (``"license—"``) is joined to the next without a space.
* **Ligatures are normalised** (``"ﬁ"`` to ``"fi"``, the Unicode ligatures U+FB00 to U+FB06), so ``"ﬁle"`` is the
  word ``"file"`` for the embedder, BM25 and the summaries.
* Spaces at the start and the end of lines are dropped; nothing else is changed or left out.

The result is the document's text: chunk offsets are exact into it, and the page table gives, for each page, the
offset of its first character (an empty page begins where the next text does; a word cut by a page break belongs to
both pages: the page after it begins inside it). Linear in the length of the text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["WRAP_FRACTION", "pdf_text"]

#: A line break is a wrap when the next word would have made the line longer than this fraction of a full line.
WRAP_FRACTION = 0.9
_LIGATURES = str.maketrans({"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl",
                            "\ufb05": "st", "\ufb06": "st"})
_WORD = re.compile(r"[^\W\d_]+")
_SENTENCE_END = (".", ":", ";", "!", "?")
_HYPHENS = "-\u2010"  # hyphen-minus, hyphen
_DASHES = _HYPHENS + "\u2011\u2012\u2013\u2014"  # and non-breaking hyphen, figure, en and em dashes


def _full_width(lengths: list[int]) -> int:
    """The length of a full line: the 90th percentile of the non-blank lines' lengths (characters)."""
    if not lengths:
        return 0
    ordered = sorted(lengths)
    return ordered[min(len(ordered) - 1, (len(ordered) * 9) // 10)]


def _joiner(line: str, following: str, width: int, vocabulary: set[str], page_break: bool) -> tuple[str, str]:
    """How ``line`` continues into ``following`` (both stripped, non-empty): the (possibly shortened) line and the
    text between them."""
    if line[-1] in _DASHES and len(line) > 1 and not line[-2].isspace():  # a word broken at its dash
        if line[-1] in _HYPHENS and line[-2].isalpha() and following[0].islower():
            begin = len(line) - 2  # the word before the hyphen, scanned back (no regex: linear on any line)
            while begin > 0 and line[begin - 1].isalpha():
                begin -= 1
            head = _WORD.match(following)
            if head is not None and (line[begin:-1] + head.group(0)).lower() in vocabulary:
                return line[:-1], ""
        return line, ""
    first_word = following.split(None, 1)[0]
    if len(line) + 1 + len(first_word) > WRAP_FRACTION * width:
        return line, " "
    if following[0].islower() and not line.endswith(_SENTENCE_END):
        return line, " "
    return line, "\n\n" if page_break else "\n"


def pdf_text(pages: Sequence[str]) -> tuple[str, list[int]]:
    """One text for chunking from the text of each page of a PDF (module docstring), and the offset at which each
    page begins (``len(pages)`` offsets, non-decreasing, the first 0).

    Args:
        pages: each page's extracted text, lines ended by ``"\\n"`` (``pypdf``'s ``extract_text``), first page first.

    Returns:
        ``(text, starts)``: ``text[starts[i]:starts[i + 1]]`` is what page ``i + 1`` holds (an empty page: ``""``).
    """
    lines: list[tuple[int, str]] = []  # (page index, stripped line); "" marks a blank line
    for number, page in enumerate(pages):
        for raw in page.translate(_LIGATURES).split("\n"):
            line = raw.strip()
            if line or (lines and lines[-1][1] and lines[-1][0] == number):
                lines.append((number, line))
    vocabulary = {word.lower() for _, line in lines for word in _WORD.findall(line)}
    width = _full_width([len(line) for _, line in lines if line])
    parts: list[str] = []
    starts: list[int] = []
    length = 0
    previous: tuple[int, str] | None = None
    blank = -1  # the page of the last blank line seen (a blank line at a page's end counts for nothing)
    for number, line in lines:
        if not line:
            blank = number
            continue
        if previous is None:
            joiner = ""
        elif blank == number:
            joiner = "\n\n"
        else:
            kept, joiner = _joiner(previous[1], line, width, vocabulary, previous[0] != number)
            if len(kept) < len(previous[1]):  # a repaired hyphen: the line written last loses it
                parts[-1] = parts[-1][: len(kept) - len(previous[1])]
                length -= len(previous[1]) - len(kept)
        blank = -1
        parts.append(joiner)
        length += len(joiner)
        while len(starts) <= number:  # this page, and empty pages before it, begin here
            starts.append(length)
        parts.append(line)
        length += len(line)
        previous = (number, line)
    while len(starts) < len(pages):
        starts.append(length)
    if starts:
        starts[0] = 0
    return "".join(parts), starts
