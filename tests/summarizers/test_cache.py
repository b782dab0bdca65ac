"""The summary cache (summarizers/cache.py): unambiguous keys, round trip, corrupt entries, concurrent processes."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from llama_index_sac.summarizers import (
    SummaryCache,
    SummaryResult,
    summary_cache_key,
)


def test_cache_key_is_unambiguous_and_ignores_doc_id() -> None:
    ident = {"class": "X", "max_chars": 150}
    # plain concatenation would give "ab" + "c" == "a" + "bc"; the structured encoding does not
    assert summary_cache_key("ab", ident, {"k": "c"}) != summary_cache_key("a", ident, {"k": "bc"})
    assert summary_cache_key("text", ident, {"a": "b", "c": ""}) != summary_cache_key("text", ident, {"a": "b\"c"})
    assert summary_cache_key("t", {"p": "a", "q": "b"}) != summary_cache_key("t", {"p": "a\", \"q\": \"b"})
    assert summary_cache_key("t", ident) == summary_cache_key("t", dict(reversed(list(ident.items()))))
    assert summary_cache_key("t", ident) != summary_cache_key("t", {**ident, "max_chars": 300})
    assert len(summary_cache_key("t", ident)) == 64


def test_cache_roundtrip_and_corrupt_entries(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cache = SummaryCache(tmp_path / "c")
    key = summary_cache_key("doc", {"class": "X"})
    assert cache.get(key) is None
    result = SummaryResult("An NDA.", "single", truncated=False, cut=True, llm_calls=3)
    path = cache.put(key, result)
    got = cache.get(key)
    assert got == SummaryResult("An NDA.", "single", truncated=False, cut=True, llm_calls=0)
    assert key in cache and len(cache) == 1
    # truncated entry (a crashed writer of an older version), garbage, wrong key: all are misses, logged
    for bad in (path.read_bytes()[:20], b"\xff\xfe garbage", json.dumps({"format": 1, "key": "0" * 64}).encode()):
        path.write_bytes(bad)
        with caplog.at_level("WARNING"):
            assert cache.get(key) is None
        assert "corrupt" in caplog.text
    cache.put(key, result)  # the next write repairs it
    assert cache.get(key) is not None
    assert not list(path.parent.glob("*.tmp"))  # no temporary files left behind
    with pytest.raises(ValueError):
        cache.get("../../etc/passwd")


def _writer(directory: str, worker: int, n: int) -> None:
    cache = SummaryCache(directory)
    for i in range(n):
        key = summary_cache_key(f"doc {i}", {"class": "X"})
        cache.put(key, SummaryResult(f"summary {i}", "single"))
        got = cache.get(key)
        assert got is not None and got.summary == f"summary {i}", (worker, i)


@pytest.mark.slow  # many processes or a large input: minutes in the whole suite
def test_cache_is_safe_under_concurrent_processes(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), w, 40)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    cache = SummaryCache(tmp_path)
    assert len(cache) == 40
    for i in range(40):
        got = cache.get(summary_cache_key(f"doc {i}", {"class": "X"}))
        assert got is not None and got.summary == f"summary {i}"
