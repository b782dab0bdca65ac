"""Names the command line did not choose (file names, document ids, texts) cannot forge or rewrite output lines:
every line goes through one escaping helper, ``llama_index_sac.apps._display.printable``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from llama_index_sac.apps._display import printable
from llama_index_sac.apps.cli import app
from llama_index_sac.apps.ingest import commands
from llama_index_sac.apps.ingest.files import IngestError
from llama_index_sac.apps.ingest.query import QueryHit
from llama_index_sac.apps.ingest.run import IngestReport
from tests.conftest import fake_searcher

runner = CliRunner()
HOSTILE = "a\nerror: injected line\r\x1b[2Kerror: rewritten\u202eevil\udcff.txt"


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_printable_is_one_line_and_keeps_ordinary_text(text: str) -> None:
    out = printable(text)
    assert "\n" not in out and "\r" not in out and "\x1b" not in out and "\u202e" not in out
    out.encode("utf-8")  # no lone surrogate left
    if text.isprintable():
        assert out == text
    assert printable(text, keep_newlines=True).split("\n") == [printable(line) for line in text.split("\n")]


def test_the_escapes_are_readable() -> None:
    assert printable(HOSTILE) == ("a\\nerror: injected line\\r\\x1b[2Kerror: rewritten\\u202eevil\\udcff.txt")
    assert printable("contract\t1.txt ünïcode") == "contract\t1.txt ünïcode"


def test_ingest_warnings_errors_and_query_hits_cannot_forge_lines(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    def fake_ingest(paths: Any, store: Any, settings: Any, log: Any, labels: Any = None) -> IngestReport:
        log(f"skipped {HOSTILE}: not UTF-8")
        raise IngestError(f"nothing could be read (the store was not touched): {HOSTILE}: not UTF-8")

    monkeypatch.setattr(commands, "ingest", fake_ingest)
    result = runner.invoke(app, ["ingest", str(tmp_path), "--vector-store", f"chroma:{tmp_path / 's'}"])
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith("warning: skipped a\\nerror: injected line\\r\\x1b[2K")
    assert lines[1].startswith("error: nothing could be read") and "\\u202eevil\\udcff.txt" in lines[1]

    hit = QueryHit(doc_id=HOSTILE, start=0, end=5, score=0.5, summary=f"S\n{HOSTILE}", text=f"T\x1b[2K{HOSTILE}")
    monkeypatch.setattr(commands, "Searcher", fake_searcher([hit]))
    out = runner.invoke(app, ["query", "q", "--vector-store", f"chroma:{tmp_path / 's'}"])
    assert out.exit_code == 0, out.output
    assert len(out.stdout.splitlines()) == 3 and "\x1b" not in out.stdout
    assert not any(line.startswith("error:") for line in out.stdout.splitlines())


def test_report_errors_keep_their_own_lines_but_escape_names(tmp_path: Path) -> None:
    bad = tmp_path / "x\nerror: forged.json"
    bad.write_text("[]")
    result = runner.invoke(app, ["report", str(bad)])
    assert result.exit_code == 2
    assert [line for line in result.stderr.splitlines() if line.startswith("error:")] == [result.stderr.splitlines()[0]]
    assert "x\\nerror: forged.json" in result.stderr
