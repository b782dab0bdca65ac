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
  does not overlap the chunk before it, nor does a character-level chunk whose successor a grapheme cluster would
  stop at the same end); so overlap is "up to" ``chunk_overlap``, never more.
* The last separator ``""`` cuts at character level, never inside a surrogate pair, a ``\\r\\n`` pair or before a
  combining mark / zero-width joiner / variation selector, unless a single such cluster is longer than ``chunk_size``
  (the size limit is the hard guarantee).
* Whitespace-only chunks are never emitted: such a run is appended to the previous chunk (or prepended to the next)
  when that keeps the size limit, otherwise it is left out. Only whitespace is ever left out, so every
  non-whitespace character is covered (P-COVER) and, in the common case, chunks concatenate back to the text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from llama_index.core.bridge.pydantic import Field, field_serializer, model_validator

from llama_index_sac.constants import (
    DEFAULT_CHUNK_OVERLAP,
    DEFAULT_CHUNK_SIZE,
    DEFAULT_SEPARATOR_HIERARCHY,
    SeparatorHierarchy,
)
from llama_index_sac.node_parser._splitter import Splitter, absorb_whitespace, regex_literal_char
from llama_index_sac.node_parser.base import SpanNodeParser, callable_identity
from llama_index_sac.spans import Span

__all__ = [
    "DEFAULT_SEPARATORS",
    "LEGAL_SEPARATORS",
    "SENTENCE_SEPARATORS",
    "SEPARATOR_HIERARCHIES",
    "WORD_SEPARATORS",
    "RecursiveCharacterNodeParser",
    "recursive_chunk_spans",
]

#: Paragraphs, lines, sentence ends, words, characters (the hierarchy named ``"sentences"``).
SENTENCE_SEPARATORS: list[str] = ["\n\n", "\n", ". ", " ", ""]

#: Paragraphs, lines, words, characters: LangChain's ``RecursiveCharacterTextSplitter`` hierarchy (``"words"``).
WORD_SEPARATORS: list[str] = ["\n\n", "\n", " ", ""]

#: The plain-text hierarchies by name (:data:`~llama_index_sac.constants.SeparatorHierarchy`), for settings and
#: command lines, where a list of whitespace strings cannot be written.
SEPARATOR_HIERARCHIES: dict[SeparatorHierarchy, list[str]] = {
    "sentences": SENTENCE_SEPARATORS,
    "words": WORD_SEPARATORS,
}

#: The parser's default hierarchy (:data:`~llama_index_sac.constants.DEFAULT_SEPARATOR_HIERARCHY`).
DEFAULT_SEPARATORS: list[str] = SEPARATOR_HIERARCHIES[DEFAULT_SEPARATOR_HIERARCHY]

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

#: The heading separators above as the splitter runs them. ``\n(?=H)`` has the same match ENDS as ``\n+(?=H)``: the
#: heading pattern ``H`` never matches at a newline, so only the last newline of a run can precede it, and only match
#: ends are used. ``\n+(?=H)`` retries the whole rest of a run of newlines at every newline of it (quadratic in the
#: run); ``\n(?=H)`` looks at each newline once. The published strings stay as they
#: are (they are in the parser's settings, hence in node ids and cache keys).
_LINEAR_FORMS: dict[str, str] = {sep: "\\n" + sep[3:] for sep in LEGAL_SEPARATORS if sep.startswith("\\n+(?=")}


def _compile_separator(sep: str) -> re.Pattern[str]:
    """The compiled regex separator (its linear form when it has one); ``ValueError`` for an invalid regex."""
    try:
        re.compile(sep)
        return re.compile(_LINEAR_FORMS.get(sep, sep))
    except re.error as exc:
        raise ValueError(f"invalid separator regex {sep!r}: {exc}") from exc


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
            tokenizer's token count. The greedy merge assumes it does not decrease as a slice grows (true of
            characters and token counts); with one that does, chunks still respect ``chunk_size`` but may end
            before the furthest boundary that fits.

    Returns:
        Spans in document order with strictly increasing starts and ends; ``text[start:end]`` is never empty or
        whitespace-only, and, measured by the length function, never longer than ``chunk_size`` (a single
        character always counts as fitting, so a tokenizer that gives one character more than ``chunk_size``
        tokens cannot make the split fail).

    Cost: linear in ``len(text)`` for character length and the built-in separators (:data:`DEFAULT_SEPARATORS`,
    :data:`LEGAL_SEPARATORS`), adversarial text included (long runs of blank lines, spaces or separators, one
    giant word); memory beyond the text is about the size of the spans. A custom regex separator is run as given:
    one that backtracks (such as ``\\n+(?=X)``, which retries a run of newlines at every newline) is as slow as
    Python's ``re`` makes it.

    Raises:
        TypeError: ``text`` not a ``str``; ``chunk_size``/``chunk_overlap`` not ints (bools refused);
            ``separators`` a single string or holding a non-string.
        ValueError: for a non-positive ``chunk_size``, ``chunk_overlap`` outside ``[0, chunk_size)``, an empty
            separator list, or an invalid regular expression.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__}")
    for name, value in (("chunk_size", chunk_size), ("chunk_overlap", chunk_overlap)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if chunk_size <= 0:
        raise ValueError(f"chunk_size must be > 0, got {chunk_size}")
    if chunk_overlap < 0 or chunk_overlap >= chunk_size:
        raise ValueError(
            f"chunk_overlap must satisfy 0 <= chunk_overlap < chunk_size ({chunk_size}), got {chunk_overlap}"
        )
    if isinstance(separators, str) or not all(isinstance(sep, str) for sep in separators):
        raise TypeError(f"separators must be a list of strings, got {separators!r}")
    if not separators:
        raise ValueError("separators must not be empty")
    seps: list[str] = []
    patterns: list[re.Pattern[str] | None] = []
    for sep in separators:
        literal = regex_literal_char(sep) if is_separator_regex and sep != "" else None
        if is_separator_regex and sep != "" and literal is None:
            patterns.append(_compile_separator(sep))
            seps.append(sep)
        else:  # plain text, "", or a regex of one literal character: searched with str.find
            patterns.append(None)
            seps.append(sep if literal is None else literal)
    if not text or text.isspace():
        return []
    splitter = Splitter(text, seps, patterns, chunk_size, chunk_overlap, length_function)
    splitter.split(0, len(text), 0)
    return absorb_whitespace(text, splitter.out, splitter.fits)


class RecursiveCharacterNodeParser(SpanNodeParser):
    """Recursive character splitting as a LlamaIndex node parser, with exact offsets.

    Splits by the first separator of ``separators`` that occurs in the text, merges the pieces greedily up to
    ``chunk_size``, and splits any piece that is still too long with the finer separators (see the module docstring
    for the exact rules). The SAC paper (Reuter et al., 2025, arXiv 2510.06999, section 3) and LegalBench-RAG
    (Pipitone & Alami, 2024, arXiv 2408.10343) use this method with 500 characters and no overlap, the defaults here.

    Guarantees, for every document: ``node.text == document.text[node.start_char_idx:node.end_char_idx]``; no chunk
    longer than ``chunk_size`` by ``length_function``; no empty or whitespace-only chunk; starts and ends strictly
    increase; a document that fits gives exactly one node; an empty or blank document gives none; consecutive
    chunks share at most ``chunk_overlap``. Time and memory are linear in the document, adversarial text included
    (runs of blank lines, spaces or separators, one giant word).

    Example::

        parser = RecursiveCharacterNodeParser(chunk_size=500, chunk_overlap=0)
        nodes = parser.get_nodes_from_documents([Document(text=contract_text)])
        spans = parser.chunk_indices(contract_text)   # [(0, 497), (497, 990), ...]

    Args:
        chunk_size: maximum chunk length, in characters (or in the unit of ``length_function``); default 500.
        chunk_overlap: maximum length shared by consecutive chunks, same unit, below ``chunk_size``; default 0.
        separators: the separator hierarchy, coarsest first; ``""`` cuts at character level (default
            :data:`DEFAULT_SEPARATORS`, one of :data:`SEPARATOR_HIERARCHIES`; :meth:`legal` uses
            :data:`LEGAL_SEPARATORS`).
        is_separator_regex: treat ``separators`` as regular expressions.
        length_function: the length of a string in the unit of ``chunk_size`` (e.g. a tokenizer's token count);
            ``None`` measures characters.
        count_metadata: reserve room for the rendered metadata inside ``chunk_size`` (see :class:`SpanNodeParser`).
        id_func: node id function ``(i, document) -> str``; ``None`` gives deterministic ids.

    Raises:
        ValueError: a pydantic ``ValidationError`` for ``chunk_size <= 0``, ``chunk_overlap < 0`` or
            ``>= chunk_size``, an empty separator list, an invalid separator regex.
    """

    chunk_size: int = Field(default=DEFAULT_CHUNK_SIZE, gt=0, description="Maximum chunk length, in characters (or "
                            "in the unit of length_function).")
    chunk_overlap: int = Field(default=DEFAULT_CHUNK_OVERLAP, ge=0, description="Maximum length shared by consecutive "
                               "chunks, same unit as chunk_size; must be < chunk_size.")
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
                _compile_separator(sep)
        return self

    @classmethod
    def class_name(cls) -> str:
        return "RecursiveCharacterNodeParser"

    @classmethod
    def from_defaults(cls, separators: Sequence[str] | None = None, **kwargs: Any) -> RecursiveCharacterNodeParser:
        """Build a parser; every keyword is a field (``chunk_size``, ``chunk_overlap``, ``length_function``...) and
        a field not given (or ``separators=None``) keeps its default."""
        if separators is not None:
            kwargs["separators"] = list(separators)
        return cls(**kwargs)

    @classmethod
    def legal(cls, **kwargs: Any) -> RecursiveCharacterNodeParser:
        """The contract-structure preset: :data:`LEGAL_SEPARATORS` (regex) before paragraphs and sentences; other
        keywords are fields (``chunk_size``, ``chunk_overlap``...)."""
        return cls(separators=list(LEGAL_SEPARATORS), is_separator_regex=True, **kwargs)

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
