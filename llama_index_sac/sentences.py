"""Sentence segmentation into exact character spans.

``sentence_spans(text)`` returns ``(start, end)`` code-point spans that TILE the text: the first starts at 0, each
starts where the previous ended, the last ends at ``len(text)``; each sentence carries the whitespace that follows
it. So ``"".join(text[s:e] for s, e in spans) == text`` always holds, which the semantic parser relies on for
losslessness.

Backends (no silent fallback between them: a missing backend raises ``ImportError``):

* ``"nupunkt"`` (default): Punkt trained on legal text; keeps "Sec. 4.2", "U.S.C. § 101", "Inc.", "No. 5",
  "Fed. R. Civ. P." inside their sentences, where NLTK's English Punkt does not.
* ``"nltk"``: NLTK's English Punkt, loaded from the ``punkt_tab`` data that llama-index-core bundles under
  ``llama_index/core/_static/nltk_cache`` (never downloaded at run time).

Both are followed by a split after the sentence ends of scripts that Punkt does not know: ``。！？`` (Chinese,
Japanese, full-width), ``؟`` (Arabic question mark) and ``۔`` (Urdu full stop), with any closing quotes or brackets
and following whitespace kept with the sentence.

Cost: linear in the text, adversarial text included. nupunkt alone is not linear on one kind of input: a sentence
end glued to further punctuation (``."``, ``!!``, ``?)``) is a candidate, and for each candidate it scans the rest of
the whitespace-free chunk and the next one, so a chunk made of many of them (``."."."...``, ``!!!!...``) is
quadratic. In a whitespace-free chunk with more than :data:`MAX_GLUED_ENDS` such ends, they are therefore hidden from
nupunkt (read as ``","``; offsets are unchanged): such a chunk ends a sentence at most where it ends. Text with at
most :data:`MAX_GLUED_ENDS` glued ends per whitespace-free chunk is segmented exactly as nupunkt segments it. NLTK's
Punkt is linear on the same inputs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Literal

from llama_index_sac.spans import Span

__all__ = ["MAX_GLUED_ENDS", "SentenceBackend", "sentence_spans", "sentences"]

SentenceBackend = Literal["nupunkt", "nltk"]

_EXTRA_ENDS = re.compile(r"[。！？؟۔]+[」』”’）)\]]*\s*")

#: A sentence end glued to punctuation that makes it a nupunkt candidate inside a whitespace-free chunk (nupunkt's
#: rule: an end character followed by one of its "non-word" characters; a superset here, which is safe).
_GLUED_END = re.compile(r"[.?!\u2026](?=[)\"';}\]*:@({?!\u201d\u00bb\u2019])")
_WHITESPACE = re.compile(r"\s")

#: In a whitespace-free chunk with more glued sentence ends than this, they are hidden from nupunkt (see above).
MAX_GLUED_ENDS = 16


def _hide_dense_ends(text: str) -> str:
    """``text`` with the glued sentence ends of every whitespace-free chunk holding more than
    :data:`MAX_GLUED_ENDS` of them read as ``","``: same length, so nupunkt's spans are spans of ``text``. Returns
    ``text`` itself when no chunk has that many (no copy). Linear: one regex pass and one whitespace search between
    consecutive glued ends."""
    dense: list[tuple[int, int]] = []  # (first, last) glued end of each dense chunk
    first = prev = -1
    count = 0
    for match in _GLUED_END.finditer(text):
        pos = match.start()
        if count and _WHITESPACE.search(text, prev + 1, pos) is None:
            count += 1
        else:
            if count > MAX_GLUED_ENDS:
                dense.append((first, prev))
            first, count = pos, 1
        prev = pos
    if count > MAX_GLUED_ENDS:
        dense.append((first, prev))
    if not dense:
        return text
    parts: list[str] = []
    done = 0
    for lo, hi in dense:  # hi + 2: the character after the last glued end, which its look-ahead needs
        parts.append(text[done:lo])
        parts.append(_GLUED_END.sub(",", text[lo : hi + 2]))
        done = hi + 2
    parts.append(text[done:])
    return "".join(parts)


@lru_cache(maxsize=1)
def _nupunkt_spans() -> Callable[[str], list[tuple[int, int]]]:
    import nupunkt  # a hard dependency: ImportError here means a broken install, never a fallback

    return nupunkt.sent_spans  # type: ignore[no-any-return]


@lru_cache(maxsize=1)
def _nltk_tokenizer():  # type: ignore[no-untyped-def]
    import llama_index.core
    import nltk
    from nltk.tokenize.punkt import PunktTokenizer

    cache = os.path.join(os.path.dirname(llama_index.core.__file__), "_static", "nltk_cache")
    if cache not in nltk.data.path:
        nltk.data.path.insert(0, cache)
    try:
        return PunktTokenizer("english")
    except LookupError as exc:  # pragma: no cover - depends on the llama-index-core install
        raise ImportError(
            f"NLTK punkt_tab data not found (looked in {cache}); this package never downloads it at run time"
        ) from exc


def _raw_spans(text: str, backend: SentenceBackend) -> list[Span]:
    if backend == "nupunkt":
        return [(int(s), int(e)) for s, e in _nupunkt_spans()(_hide_dense_ends(text))]
    if backend == "nltk":
        return [(int(s), int(e)) for s, e in _nltk_tokenizer().span_tokenize(text)]
    raise ValueError(f"unknown sentence backend {backend!r}; expected 'nupunkt' or 'nltk'")


def sentence_spans(text: str, backend: SentenceBackend = "nupunkt") -> list[Span]:
    """Sentence spans tiling ``text`` (see the module docstring).

    Args:
        text: any string; offsets are Python code-point indices.
        backend: ``"nupunkt"`` (default) or ``"nltk"``.

    Returns:
        ``[(start, end), ...]`` with ``start < end``, contiguous, covering ``[0, len(text))``; ``[]`` for ``""``.
        A text of whitespace only is one span.

    Raises:
        ValueError: unknown backend.
        ImportError: the backend or its data is not installed.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__}")
    if not text:
        return []
    # Cut points: the backend's sentence starts, then ends of scripts Punkt does not know.
    cuts = {start for start, _ in _raw_spans(text, backend)}
    cuts.update(m.end() for m in _EXTRA_ENDS.finditer(text))
    # A backend may leave whitespace between sentences uncovered; tiling gives it to the sentence before.
    ordered = sorted(c for c in cuts if 0 < c < len(text))
    bounds = [0, *ordered, len(text)]
    spans = [(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]
    # A whitespace-only piece (e.g. leading blank lines) joins its neighbour rather than standing alone. Whether the
    # last merged span is blank is tracked, not recomputed: re-slicing a span that keeps growing would be quadratic.
    merged: list[Span] = []
    last_blank = False
    for start, end in spans:
        blank = text[start:end].isspace()
        if merged and (blank or last_blank):
            merged[-1] = (merged[-1][0], end)
            last_blank = last_blank and blank
        else:
            merged.append((start, end))
            last_blank = blank
    return merged


def sentences(text: str, backend: SentenceBackend = "nupunkt") -> list[str]:
    """The sentences of ``text`` as strings (``[text[s:e] for s, e in sentence_spans(text)]``)."""
    return [text[start:end] for start, end in sentence_spans(text, backend)]
