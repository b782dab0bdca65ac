"""Hostile saved tables: ``TermStatistics.load`` (gzip bombs, deep JSON, FIFOs) and ``DocumentIndex.load`` (counts
that claim more occurrences than any index should hold): one ``ValueError`` naming the file, at bounded cost."""

from __future__ import annotations

import gzip
import json
import os
import tracemalloc
from pathlib import Path

import pytest

from llama_index_sac.retrievers.document_index import MAX_NAME_OCCURRENCES, DocumentIndex
from llama_index_sac.summarizers.terms import TermStatistics

DEEP = b"[" * 200_000 + b"]" * 200_000


def test_a_gzip_bomb_stops_at_the_cap_while_streaming(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b" " * (64 << 20), compresslevel=9))  # 64 MiB of spaces in about 64 KiB
    assert bomb.stat().st_size < 1 << 20
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=rf"^{bomb}: not a term-statistics file \(decompresses to more than "
                                             r"the limit of 4194304 bytes\)"):
            TermStatistics.load(bomb, max_bytes=4 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20  # the cap plus one step, never the 64 MiB


@pytest.mark.parametrize("gz", [False, True])
def test_deep_json_is_the_documented_value_error(gz: bool, tmp_path: Path) -> None:
    path = tmp_path / ("deep.json.gz" if gz else "deep.json")
    path.write_bytes(gzip.compress(DEEP) if gz else DEEP)
    with pytest.raises(ValueError, match="is nested deeper than 64 levels"):
        TermStatistics.load(path)
    if not gz:
        with pytest.raises(ValueError, match="not a document index file .is nested deeper than 64 levels"):
            DocumentIndex.load(path)


def test_a_fifo_or_an_oversize_file_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "t.json"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="is not a regular file"):
        TermStatistics.load(fifo)
    with pytest.raises(ValueError, match="is not a regular file"):
        DocumentIndex.load(fifo)
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 2000)
    with pytest.raises(ValueError, match="is 2000 bytes, more than the limit of 1000 bytes"):
        TermStatistics.load(big, max_bytes=1000)


def test_counts_are_checked_before_the_name_index_is_built(tmp_path: Path) -> None:
    path = tmp_path / "claims.json"
    DocumentIndex({"a": "NDA"}, {"a": {"acme": 1}}).save(path)  # a whole v4 file, then one count that lies
    saved = json.loads(path.read_text(encoding="utf-8"))
    saved["names"] = {"a": {"acme": 300_000_000}}
    path.write_text(json.dumps(saved))
    assert path.stat().st_size < 1000
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=rf"names hold 300000000 occurrences in all, more than "
                                             rf"{MAX_NAME_OCCURRENCES}"):
            DocumentIndex.load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20
    with pytest.raises(ValueError, match="more than"):
        DocumentIndex({"a": "x", "b": "y"}, {"a": {"n": MAX_NAME_OCCURRENCES}, "b": {"m": 1}})
