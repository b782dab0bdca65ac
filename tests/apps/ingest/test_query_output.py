"""What ``llama-sac query`` prints: the whole chunk by default, the passage that matched with ``--max-chars``; its help
laid out readably when standard output is not a terminal."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from llama_index_sac.apps.cli import app
from llama_index_sac.apps.ingest import commands
from llama_index_sac.apps.ingest.query import QueryHit, matched_passage
from tests.conftest import FakeEmbedding, fake_searcher

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


def test_matched_passage_shows_a_heading_with_its_clause() -> None:
    # a numbered heading is a sentence of its own ("6. ", "Governing Law. ") and shares the question's words with
    # the clause under it: it is joined to that clause, never shown alone
    chunk = ("5. Return of Materials. The Recipient shall return all copies. 6. Governing Law. This Agreement shall "
             "be governed by the laws of Germany, without regard to its conflict of laws principles.")
    question = "which law governs the acme nda"  # "law" and "gover": 0 in the first part, 2 in the second
    # the second part, "6. Governing Law. This Agreement ... principles." (3 + 15 + 107 = 125 characters), is longer
    # than the room at 100 (100 - 12 = 88): its start, cut at the last space within 88 characters (82, "without")
    assert matched_passage(chunk, question, 100) == (
        "[...] 6. Governing Law. This Agreement shall be governed by the laws of Germany, without [...]")
    # at 140 the room (128) holds it (125), not the first part (62 and a space) before it
    assert matched_passage(chunk, question, 140) == (
        "[...] 6. Governing Law. This Agreement shall be governed by the laws of Germany, without regard to its "
        "conflict of laws principles.")
    # "Payment" is in the heading "3. Price and Payment." only, "suppl" in the delivery clause only: a tie, the first
    # (the heading with its clause, 21 + 1 + 27 = 49 characters) is shown in the room of 62 - 12 = 50
    chunk = "3. Price and Payment. Buyer shall pay in 45 days. 4. Delivery. Supplier shall deliver FCA Pittsburgh."
    assert matched_passage(chunk, "payment terms tolland supply", 62) == (
        "3. Price and Payment. Buyer shall pay in 45 days. [...]")
    # a chunk that ends with headings: they are joined to the last sentence ("7. " to "Term."), nothing after it;
    # room 20 - 12 = 8 = len("7. Term.")
    assert matched_passage("The fee is due on signing. 7. Term.", "which term", 20) == "[...] 7. Term."


@given(st.text(alphabet="abB1 .\n", max_size=200), st.integers(1, 120), st.sampled_from(["a b", "bbb", "Bbb aaa"]))
def test_matched_passage_fits_and_is_the_chunks_text(text: str, limit: int, question: str) -> None:
    shown = matched_passage(text, question, limit)  # capitalised words and digits: headings joined
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


class _EightTokenModel(FakeEmbedding):
    """Reads 8 tokens; a token is a word, and the two special tokens count."""

    max_length: int = 8

    def token_counter(self) -> Callable[[str], int]:
        return lambda text: len(text.split()) + 2


def test_query_says_when_a_question_is_longer_than_the_model_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    searcher = fake_searcher(_hits())
    monkeypatch.setattr(searcher, "embed_model", _EightTokenModel(), raising=False)
    monkeypatch.setattr(commands, "Searcher", searcher)
    long_question = "which law governs the agreement between acme and beta"  # 9 words + 2 = 11 tokens > 8
    result = CliRunner().invoke(app, ["query", "--questions", "-", "--vector-store", "chroma:/nowhere", "--json"],
                                input=f"{QUESTION}\n{long_question}\n")
    assert result.exit_code == 0, result.output
    assert len(result.stdout.splitlines()) == 2  # both answered
    # one line for all questions: how many, the largest, what is read (4 words + 2 = 6 tokens: the first fits)
    assert result.stderr == (
        "warning: 1 of 2 questions exceed the input limit of 8 tokens of unknown (largest: 11 tokens, counted with its "
        "tokenizer); embedded with it, they would be truncated without notice: the model reads the start of each "
        "question; the documents it names and its words are matched in all of it\n")
    result = CliRunner().invoke(app, ["query", long_question, "--vector-store", "chroma:/nowhere", "--plain"])
    assert result.exit_code == 0 and result.stderr.endswith(": the model reads the start of each question\n")
    result = CliRunner().invoke(app, ["query", QUESTION, "--vector-store", "chroma:/nowhere"])
    assert result.exit_code == 0 and result.stderr == ""  # a question that fits: nothing said


def test_help_off_a_terminal_is_plain_text_in_readable_columns() -> None:
    result = CliRunner().invoke(app, ["query", "--help"], prog_name="llama-sac")  # CliRunner's output is no terminal
    assert result.exit_code == 0
    assert "╭" not in result.stdout and "│" not in result.stdout  # no boxes
    rows = result.stdout.splitlines()
    at = next(n for n, row in enumerate(rows) if row.lstrip().startswith("--max-chars <"))
    assert rows[at + 1].startswith(" " * 20) and len(rows[at + 1].strip()) >= 40  # a description column of 40+
    assert "the passage that matched (the whole sentences around the one" in " ".join(r.strip() for r in rows[at:])
