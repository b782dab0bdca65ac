"""Helpers for the semantic and hybrid parser tests: property checks, text strategies, hand-built embeddings."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr

from llama_index_sac.spans import Span
from tests.conftest import FakeEmbedding, RecordingEmbedding

# Two unrelated clauses of four sentences each (liability, then termination): the breakpoint is at LIABILITY's end.
LIABILITY = (
    "The Supplier shall be liable for all direct damages caused by defective goods. "
    "The Supplier's total liability under this Agreement shall not exceed the fees paid in the preceding twelve "
    "months. "
    "Neither party shall be liable for indirect or consequential losses, including loss of profit. "
    "The limitation of liability does not apply to damages caused by gross negligence or wilful misconduct. "
)
TERMINATION = (
    "Either party may terminate this Agreement by giving ninety days' written notice to the other party. "
    "Upon termination, the Customer shall pay all invoices outstanding at the date of termination. "
    "Termination of this Agreement does not affect any rights accrued before the termination date. "
    "Sections 7 and 9 survive the expiry or termination of this Agreement. "
)
GOVERNING_LAW = (
    "This Agreement is governed by the laws of the State of New York. "
    "The courts of New York County have exclusive jurisdiction over any dispute arising out of this Agreement. "
    "Each party irrevocably submits to the jurisdiction of those courts and waives any objection to venue there."
)


def check_spans(text: str, spans: list[Span], limit: int | None) -> None:
    """P-OFFSET, P-ORDER, P-NONEMPTY, P-SIZE (characters) and P-COVER for ``spans`` over ``text``."""
    for start, end in spans:
        assert isinstance(start, int) and isinstance(end, int)
        assert 0 <= start < end <= len(text)
        assert text[start:end].strip(), f"whitespace-only chunk {text[start:end]!r}"
        if limit is not None:
            assert end - start <= limit, f"chunk of {end - start} characters > {limit}"
    for (s1, e1), (s2, e2) in zip(spans, spans[1:]):
        assert s1 < s2 and e1 < e2
    covered = np.zeros(len(text), dtype=bool)
    for start, end in spans:
        covered[start:end] = True
    for i, ch in enumerate(text):
        assert covered[i] or ch.isspace(), f"non-whitespace {ch!r} at {i} lost"


def rebuild_with_overlap(text: str, spans: list[Span]) -> str:
    """P-LOSSLESS with overlap: chunk_0 + sum(chunk_i[end_(i-1) - start_i:])."""
    if not spans:
        return ""
    out = [text[spans[0][0] : spans[0][1]]]
    for (_, prev_end), (start, end) in zip(spans, spans[1:]):
        out.append(text[max(start, prev_end) : end])
    return "".join(out)


WORDS = ["rent", "lease", "notice", "party", "term", "Supplier", "liable", "damages", "Sec.", "U.S.C.", "Inc.",
         "agreement", "shall", "terminate", "confidential", "x" * 40, "y" * 130]
ENDS = [". ", "? ", "! ", ".\n", ".\n\n", "; ", "。", "！", "？", "؟ ", "۔ ", " "]


@st.composite
def legal_texts(draw: st.DrawFn) -> str:
    """Documents of sentences built from legal words, with sentence ends of several scripts."""
    n = draw(st.integers(0, 14))
    parts: list[str] = []
    if draw(st.booleans()):
        parts.append(draw(st.sampled_from(["", " ", "\n\n", "  \n"])))
    for _ in range(n):
        words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=12))
        parts.append(" ".join(words) + draw(st.sampled_from(ENDS)))
    return "".join(parts)


class KeywordEmbedding(RecordingEmbedding):
    """Hand-built vectors: one axis per keyword found in the text (lower-cased substring), summed and normalized;
    a text with no keyword gets the last axis. Distances between sentences are then known exactly."""

    keywords: list[str] = ["rent", "terminat", "notice"]

    @classmethod
    def class_name(cls) -> str:
        return "KeywordEmbedding"

    def _vector(self, text: str) -> list[float]:
        vec = np.zeros(len(self.keywords) + 1)
        low = text.lower()
        for i, word in enumerate(self.keywords):
            if word in low:
                vec[i] = 1.0
        if not vec.any():
            vec[-1] = 1.0
        return (vec / np.linalg.norm(vec)).tolist()


class BrokenEmbedding(BaseEmbedding):
    """Returns a wrong number of vectors (``mode="short"``) or NaNs (``mode="nan"``)."""

    mode: str = "short"

    @classmethod
    def class_name(cls) -> str:
        return "BrokenEmbedding"

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        if self.mode == "short":
            return [[1.0, 0.0] for _ in texts[1:]]
        return [[float("nan"), 0.0] for _ in texts]

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_query_embedding(self, query: str) -> list[float]:
        return [1.0, 0.0]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return [1.0, 0.0]


class WordTokenizer:
    """A tokenizer that counts whitespace-separated words, plus 2 special tokens (like [CLS] ... [SEP])."""

    def __call__(self, text: str, add_special_tokens: bool = True, truncation: bool = False) -> dict[str, list[int]]:
        return {"input_ids": [0] * (len(text.split()) + (2 if add_special_tokens else 0))}


class _TokenizerHolder:
    """Where ``embedding_token_counter`` finds a model's tokenizer: ``embed_model._model.tokenizer``."""

    tokenizer = WordTokenizer()


class TokenLimitedEmbedding(FakeEmbedding):
    """FakeEmbedding with an input limit of ``max_length`` tokens and a word tokenizer (known token counts)."""

    max_length: int = 12
    _model: _TokenizerHolder = PrivateAttr(default_factory=_TokenizerHolder)

    @classmethod
    def class_name(cls) -> str:
        return "TokenLimitedEmbedding"
