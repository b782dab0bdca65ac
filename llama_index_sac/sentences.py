"""Sentence segmentation into exact character spans.

``sentence_spans(text)`` returns ``(start, end)`` code-point spans that TILE the text: the first starts at 0, each
starts where the previous ended, the last ends at ``len(text)``; each sentence carries the whitespace that follows
it. So ``"".join(text[s:e] for s, e in spans) == text`` always holds, which the semantic parser relies on for
losslessness.

Backends (no silent fallback between them: a missing backend raises ``ImportError``, case 17):

* ``"nupunkt"`` (default): Punkt trained on legal text; keeps "Sec. 4.2", "U.S.C. § 101", "Inc.", "No. 5",
  "Fed. R. Civ. P." inside their sentences, where NLTK's English Punkt does not.
* ``"nltk"``: NLTK's English Punkt, loaded from the ``punkt_tab`` data that llama-index-core bundles under
  ``llama_index/core/_static/nltk_cache`` (never downloaded at run time).

Both are followed by a split after the sentence ends of scripts that Punkt does not know: ``。！？`` (Chinese,
Japanese, full-width), ``؟`` (Arabic question mark) and ``۔`` (Urdu full stop), with any closing quotes or brackets
and following whitespace kept with the sentence.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Literal

from llama_index_sac.spans import Span

__all__ = ["SentenceBackend", "sentence_spans", "sentences"]

SentenceBackend = Literal["nupunkt", "nltk"]

_EXTRA_ENDS = re.compile(r"[。！？؟۔]+[」』”’）)\]]*\s*")


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
        return [(int(s), int(e)) for s, e in _nupunkt_spans()(text)]
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
        ValueError: unknown backend. ImportError: the backend or its data is not installed.
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
    # A whitespace-only piece (e.g. leading blank lines) joins its neighbour rather than standing alone.
    merged: list[Span] = []
    for start, end in spans:
        if merged and (not text[start:end].strip() or not text[merged[-1][0] : merged[-1][1]].strip()):
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def sentences(text: str, backend: SentenceBackend = "nupunkt") -> list[str]:
    """The sentences of ``text`` as strings (``[text[s:e] for s, e in sentence_spans(text)]``)."""
    return [text[start:end] for start, end in sentence_spans(text, backend)]
