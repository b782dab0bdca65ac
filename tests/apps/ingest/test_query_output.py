"""What ``llama-sac query`` prints: the whole chunk by default, the passage that matched with ``--max-chars``; its help
laid out readably when standard output is not a terminal."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from llama_index_sac.apps.cli import app
from llama_index_sac.apps.ingest import commands
from llama_index_sac.apps.ingest.query import QueryHit, matched_passage
from tests.conftest import fake_searcher

CHUNK = ("This Agreement is made between Acme and Beta. Payment is due in thirty days.\n\nThis Agreement is governed "
         "by the laws of Delaware. Either party may terminate on notice.")
FLAT = " ".join(CHUNK.split())  # 166 characters
QUESTION = "Which law governs the agreement?"


def test_matched_passage_by_hand() -> None:
    assert len(FLAT) == 166
    assert matched_passage(CHUNK, QUESTION, None) == FLAT and matched_passage(CHUNK, QUESTION, 166) == FLAT
    # Sentence 3 shares "law(s)", "gover(ns/ned)", "agreement": 3 words; sentence 1 only "agreement". It is 51
    # characters; the room is 100 - 12 ("[...] " and " [...]"): sentence 4 (+38 = 89) does not fit, sentence 2 (+31
    # = 82) does.
    assert matched_passage(CHUNK, QUESTION, 100) == ("[...] Payment is due in thirty days. This Agreement is governed "
                                                     "by the laws of Delaware. [...]")
    assert matched_passage(CHUNK, QUESTION, 80) == "[...] This Agreement is governed by the laws of Delaware. [...]"
    # a room of 48 characters, shorter than the sentence: its start, cut at a space
    assert matched_passage(CHUNK, QUESTION, 60) == "[...] This Agreement is governed by the laws of [...]"
    # "terminate" and "notice": the last sentence, nothing after it
    assert matched_passage(CHUNK, "Can a party terminate on notice?", 60) == ("[...] Either party may terminate on "
                                                                             "notice.")
    assert matched_passage(CHUNK, QUESTION, 5) == "This "  # no room for the marks: the start
    with pytest.raises(ValueError, match="max_chars must be at least 1, got 0"):
        matched_passage(CHUNK, QUESTION, 0)


@given(st.text(alphabet="ab .\n", max_size=200), st.integers(1, 120))
def test_matched_passage_fits_and_is_the_chunks_text(text: str, limit: int) -> None:
    shown = matched_passage(text, "a b", limit)
    flat = " ".join(text.split())
    assert len(shown) <= limit
    core = shown.removeprefix("[...] ").removesuffix(" [...]")
    assert core in flat and (shown == flat or len(flat) > limit)


def _hits() -> list[QueryHit]:
    return [QueryHit(doc_id="docs/acme.txt", start=0, end=len(CHUNK), score=0.5, summary="Acme NDA.", text=CHUNK)]


def test_query_prints_the_whole_chunk_or_the_passage(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(commands, "Searcher", fake_searcher(_hits()))
    result = CliRunner().invoke(app, ["query", QUESTION, "--vector-store", "chroma:/nowhere"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[2] == f"   text: {FLAT}"  # the whole chunk, past any fixed cut
    result = CliRunner().invoke(app, ["query", QUESTION, "--vector-store", "chroma:/nowhere", "--max-chars", "80"])
    assert result.stdout.splitlines()[2] == "   text: [...] This Agreement is governed by the laws of Delaware. [...]"
    result = CliRunner().invoke(app, ["query", QUESTION, "--vector-store", "chroma:/nowhere", "--max-chars", "0"])
    assert result.exit_code == 2 and result.stderr == ("error: invalid value for '--max-chars': Input should be "
                                                       "greater than or equal to 1 (see 'llama-sac query --help')\n")


def test_help_off_a_terminal_is_plain_text_in_readable_columns() -> None:
    result = CliRunner().invoke(app, ["query", "--help"], prog_name="llama-sac")  # CliRunner's output is no terminal
    assert result.exit_code == 0
    assert "╭" not in result.stdout and "│" not in result.stdout  # no boxes
    rows = result.stdout.splitlines()
    at = next(n for n, row in enumerate(rows) if row.lstrip().startswith("--max-chars <"))
    assert rows[at + 1].startswith(" " * 20) and len(rows[at + 1].strip()) >= 40  # a description column of 40+
    assert "the passage that matched (the whole sentences around the one" in " ".join(r.strip() for r in rows[at:])
