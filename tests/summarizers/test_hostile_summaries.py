"""Hostile summary-cache entries and Unicode in summaries: every unusable entry is a miss (logged, counted, one
``CacheReadWarning`` per run), never served, never a hang or a traceback; a lone surrogate never reaches the cache."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llama_index_sac.summarizers.base import BaseSummarizer, SummaryResult, clean_text, normalize_summary
from llama_index_sac.summarizers.cache import ENTRY_MAX_BYTES, SummaryCache, summary_cache_key

KEY = summary_cache_key("doc", {"class": "X"})


def entry(key: str, summary: object, **extra: object) -> bytes:
    return json.dumps({"format": 1, "key": key, "result": {"summary": summary, "strategy": "single", **extra}}).encode()


def written(tmp_path: Path, content: bytes | None) -> SummaryCache:
    cache = SummaryCache(tmp_path)
    path = cache.path_for(KEY)
    path.parent.mkdir(parents=True, exist_ok=True)
    if content is None:
        os.mkfifo(path)
    else:
        path.write_bytes(content)
    return cache


@pytest.mark.parametrize(("content", "why"), [
    (b"[" * 20_000 + b"]" * 20_000, "nested deeper than 8 levels"),
    (entry(KEY, "x" * (5 << 20)), f"more than the limit of {ENTRY_MAX_BYTES} bytes"),
    (b'{"format": 1, "key": "' + KEY.encode() + b'", "result": {"summary": "a\\ud800b", "strategy": "single"}}',
     "lone surrogate"),
    (entry(KEY, "y" * 200), "the summary has 200 characters, more than 180"),
    (entry(KEY, 5), "summary and strategy must be strings"),
    (entry(KEY, "ok", llm_calls="many"), "llm_calls an int"),
    (json.dumps({"format": 1, "key": KEY, "result": [1]}).encode(), "is corrupt"),
    (json.dumps([KEY]).encode(), "holds a JSON array, not a JSON object"),
    (None, "is not a regular file"),
], ids=["deep", "5MB", "surrogate", "over-long", "summary-int", "calls-str", "result-list", "array", "fifo"])
def test_an_unusable_entry_is_a_logged_counted_miss(content: bytes | None, why: str, tmp_path: Path,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    cache = written(tmp_path, content)
    got: list[object] = []
    reader = threading.Thread(target=lambda: got.append(cache.get(KEY, max_chars=180)))
    with caplog.at_level("WARNING"):
        reader.start()
        reader.join(10)
    assert not reader.is_alive(), "get() blocked"
    assert got == [None] and cache.rejected == 1
    assert why in caplog.text and "treated as a miss" in caplog.text


def test_a_well_formed_entry_within_the_bound_is_served(tmp_path: Path) -> None:
    cache = written(tmp_path, entry(KEY, "y" * 180))
    assert cache.get(KEY, max_chars=180) == SummaryResult("y" * 180, "single")
    assert cache.get(KEY) is not None and cache.rejected == 0


def test_put_never_crashes_on_a_lone_surrogate_and_stores_a_replacement(tmp_path: Path) -> None:
    cache = SummaryCache(tmp_path)
    path = cache.put(KEY, SummaryResult("An NDA \ud800 between A and B.", "single"), {"prompt": "p \udfff"})
    assert path.read_bytes().isascii()
    assert cache.get(KEY) == SummaryResult("An NDA \ufffd between A and B.", "single")


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_clean_text_leaves_encodable_text_and_changes_only_surrogates(text: str) -> None:
    out = clean_text(text)
    out.encode("utf-8")  # never raises
    assert len(out) == len(text)
    assert all(a == b or (0xD800 <= ord(a) <= 0xDFFF and b == "\ufffd") for a, b in zip(text, out, strict=True))


@pytest.mark.parametrize(("answer", "expected"), [
    ("A\ud800B", "A\ufffdB"),
    ("Summary: NDA\x00 between \u202eA\u202c and B\x07", "NDA between A and B"),
    ("  \u200fNDA\u2066 x\u2069 ", "NDA x"),
])
def test_llm_answers_lose_controls_and_surrogates(answer: str, expected: str) -> None:
    assert normalize_summary(answer) == expected


class _Surrogate(BaseSummarizer):
    def _summarize(self, text: str, metadata: dict[str, str]) -> SummaryResult:
        return SummaryResult("bad \udc80 summary", "custom")


def test_every_summarizer_returns_encodable_summaries() -> None:
    assert _Surrogate().summarize("text").summary == "bad \ufffd summary"
