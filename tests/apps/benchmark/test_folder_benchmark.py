"""A benchmark from the user's own folder and questions file: offsets found by gold_span, every problem named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llama_index_sac.apps.benchmark.datasets.folder import FolderBenchmarkError, load_folder_benchmark

ACME = "MUTUAL NDA between Acme Corp and Beta LLC.\n\n7. This Agreement is governed by the laws of\nDelaware.\n"
ZETA = "SERVICES AGREEMENT between Zeta Inc and Omega Ltd.\n\n9. Governed by the laws of New York. Fees: net 30.\n"


def _folder(tmp_path: Path) -> Path:
    (tmp_path / "c" / "nda").mkdir(parents=True)
    (tmp_path / "c" / "nda" / "acme.txt").write_text(ACME, encoding="utf-8")
    (tmp_path / "c" / "zeta.md").write_text(ZETA, encoding="utf-8")
    (tmp_path / "c" / "notes.bin").write_bytes(b"\xff\x00")  # not a document suffix: not read
    return tmp_path / "c"


def _questions(tmp_path: Path, *items: object) -> Path:
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(json.dumps(i) for i in items) + "\n", encoding="utf-8")
    return path


def test_offsets_come_from_the_quotes_and_every_document_is_indexed(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    questions = _questions(
        tmp_path,
        # the quote is re-flowed (one space where the document has a line break): whitespace runs match
        {"question": "Which law governs the Acme NDA?", "file": "nda/acme.txt",
         "quote": "governed by the laws of Delaware"},
        {"id": "zeta-fees", "question": "Zeta payment terms?", "file": "zeta.md", "quote": ["net 30", "New York"]},
    )
    bench = load_folder_benchmark(folder, questions)
    assert sorted(bench.documents) == ["nda/acme.txt", "zeta.md"]
    assert bench.datasets == ["c"] and set(bench.doc_datasets.values()) == {"c"}
    first, second = bench.queries
    assert first.query_id == "q1"
    (span,) = first.gold
    start = ACME.index("governed")  # worked by hand: the span runs to the end of "Delaware"
    assert (span.doc_id, span.start, span.end) == ("nda/acme.txt", start, ACME.index("Delaware") + len("Delaware"))
    assert ACME[span.start:span.end] == "governed by the laws of\nDelaware"
    assert [ZETA[s.start:s.end] for s in second.gold] == ["net 30", "New York"]
    assert second.query_id == "zeta-fees"


def test_every_problem_is_named_with_its_line(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    questions = _questions(
        tmp_path,
        {"question": "x?", "file": "missing.txt", "quote": "a"},
        {"question": "", "file": "zeta.md", "quote": "net 30"},
        {"question": "y?", "file": "zeta.md", "quote": "not in the text"},
        {"question": "z?", "file": "zeta.md", "quote": "e"},  # occurs many times: ambiguous
        {"question": "w?", "file": "zeta.md", "quote": "Fees", "colour": "red"},
        [1, 2],
    )
    with pytest.raises(FolderBenchmarkError) as info:
        load_folder_benchmark(folder, questions)
    message = str(info.value)
    assert "line 1: 'file' 'missing.txt' is not a document of the folder" in message
    assert "line 2: 'question' must be a non-empty string" in message
    assert "line 3: quote 'not in the text' not found in doc_id 'zeta.md'" in message
    assert "line 4: quote 'e' is ambiguous in doc_id 'zeta.md'" in message
    assert "line 5: unknown key(s) ['colour']" in message
    assert "line 6: expected a JSON object, got list" in message


def test_bad_files_are_one_error(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    with pytest.raises(FolderBenchmarkError, match="is not a regular file"):
        load_folder_benchmark(folder, tmp_path / "absent.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"question": "\xff"}\n')
    with pytest.raises(FolderBenchmarkError, match="is not UTF-8"):
        load_folder_benchmark(folder, bad)
    (folder / "latin1.txt").write_bytes(b"caf\xe9")
    good = _questions(tmp_path, {"question": "q?", "file": "zeta.md", "quote": "net 30"})
    with pytest.raises(FolderBenchmarkError, match=r"'latin1.txt': not UTF-8 text"):
        load_folder_benchmark(folder, good)
    with pytest.raises(FolderBenchmarkError, match="is not a folder"):
        load_folder_benchmark(tmp_path / "nope", good)


def test_eval_on_your_own_folder_scores_llamaindex_against_sac(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from llama_index_sac.apps.benchmark import factories, report
    from llama_index_sac.apps.benchmark.results import load_results
    from llama_index_sac.apps.cli import app
    from tests.conftest import FakeEmbedding

    monkeypatch.setattr(factories, "load_embedding_model", lambda *args, **kwargs: FakeEmbedding())
    monkeypatch.setattr(report, "write_plots", lambda *args, **kwargs: None)
    folder = _folder(tmp_path)
    questions = _questions(
        tmp_path,
        {"question": "Which law governs the Acme NDA?", "file": "nda/acme.txt", "quote": "the laws of\nDelaware"},
        {"question": "Zeta payment terms?", "file": "zeta.md", "quote": "net 30"},
    )
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["eval", "--folder", str(folder), "--questions", str(questions),
                                      "-c", "llamaindex", "-c", "sac", "-o", str(out), "--no-progress", "-q"])
    assert result.exit_code == 0, result.output
    run = load_results(out)
    assert [c.config.name for c in run.configs] == ["llamaindex", "sac"]
    assert run.benchmark.n_documents == 2 and run.benchmark.n_queries == 2 and run.benchmark.source == "folder"
    assert (run.benchmark.data_dir, run.benchmark.questions) == (str(folder), str(questions))  # report finds them
    for config in run.configs:
        scores = config.aggregates.at("overall", 1)
        assert scores.drm is not None and 0 <= scores.drm <= 1 and scores.recall is not None and 0 <= scores.recall <= 1
    bad = CliRunner().invoke(app, ["eval", "--folder", str(folder), "--questions", str(questions), "--mini"])
    assert bad.exit_code == 2 and bad.stderr.startswith("error: --folder/--questions evaluate your own contracts")


def test_docx_files_are_read_as_ingest_reads_them_and_a_damaged_pdf_is_named(tmp_path: Path) -> None:
    docx = pytest.importorskip("docx")
    folder = _folder(tmp_path)
    document = docx.Document()
    document.add_paragraph("LEASE between Harbor View LLC and Tallgrass Inc.")
    document.add_paragraph("12. Rent is due on the first day of each month.")
    document.save(str(folder / "lease.docx"))
    questions = _questions(tmp_path, {"question": "When is rent due?", "file": "lease.docx",
                                      "quote": "Rent is due on the first day of each month."})
    benchmark = load_folder_benchmark(folder, questions)
    text = benchmark.documents["lease.docx"]
    assert text == "LEASE between Harbor View LLC and Tallgrass Inc.\n\n12. Rent is due on the first day of each month."
    span = benchmark.queries[0].gold[0]
    assert text[span.start:span.end] == "Rent is due on the first day of each month."
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    with pytest.raises(FolderBenchmarkError, match=r"'broken.pdf': "):
        load_folder_benchmark(folder, questions)


def test_a_questions_file_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    """Windows Notepad and Excel start a UTF-8 file with a byte order mark: accepted at the start of the file only."""
    folder = _folder(tmp_path)
    line = json.dumps({"question": "Which law governs the Acme NDA?", "file": "nda/acme.txt", "quote": "Delaware"})
    questions = tmp_path / "bom.jsonl"
    questions.write_bytes(b"\xef\xbb\xbf" + (line + "\r\n" + line.replace("Acme", "Beta") + "\r\n").encode())
    bench = load_folder_benchmark(folder, questions)
    assert [q.query for q in bench.queries] == ["Which law governs the Acme NDA?", "Which law governs the Beta NDA?"]
    questions.write_bytes((line + "\n").encode() + b"\xef\xbb\xbf" + (line + "\n").encode())  # not at the start
    with pytest.raises(FolderBenchmarkError, match=r"line 2: not JSON \(Unexpected UTF-8 BOM"):
        load_folder_benchmark(folder, questions)


def test_a_byte_that_is_not_utf8_is_named_by_its_line_and_offset(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    line = json.dumps({"question": "Which law?", "file": "zeta.md", "quote": "New York"}).encode()
    questions = tmp_path / "latin1.jsonl"
    questions.write_bytes(line + b"\n" + b'{"question": "caf\xe9?"}\n')
    with pytest.raises(FolderBenchmarkError) as info:
        load_folder_benchmark(folder, questions)
    assert str(info.value) == f"questions file {str(questions)!r}: line 2 is not UTF-8 text (byte 0xe9 at byte 18)"
    questions.write_bytes(b"\xef\xbb\xbf" + b'{"q\xff')  # the byte order mark counts in the offset, as in an editor
    with pytest.raises(FolderBenchmarkError, match=r": line 1 is not UTF-8 text \(byte 0xff at byte 7\)$"):
        load_folder_benchmark(folder, questions)


def test_a_key_given_twice_in_a_line_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from llama_index_sac.apps.benchmark import factories
    from llama_index_sac.apps.cli import app
    from tests.conftest import FakeEmbedding

    folder = _folder(tmp_path)
    questions = tmp_path / "dup.jsonl"
    questions.write_text(json.dumps({"question": "Fees?", "file": "zeta.md", "quote": "net 30"}) + "\n"
                         + '{"question": "Law?", "file": "zeta.md", "quote": "New York", "quote": "net 30"}\n'
                         + '{"question": "Law?", "file": "zeta.md", "quote": ["New York"], "id": {"a": 1, "a": 2}}\n',
                         encoding="utf-8")
    with pytest.raises(FolderBenchmarkError) as info:
        load_folder_benchmark(folder, questions)
    assert str(info.value) == (f"questions file {str(questions)!r}: line 2: duplicate key 'quote'; "
                               "line 3: duplicate key 'a'")
    monkeypatch.setattr(factories, "load_embedding_model", lambda *args, **kwargs: FakeEmbedding())
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["eval", "--folder", str(folder), "--questions", str(questions),
                                      "-o", str(out), "--no-progress", "-q"])
    assert result.exit_code == 2 and result.stdout == "", result.output
    assert result.stderr.splitlines() == [f"error: questions file {str(questions)!r}: line 2: duplicate key "
                                          "'quote'; line 3: duplicate key 'a'"]
    assert not out.exists()
