"""Hostile input round 3 (``../shared/hostile/round-3.md``), the cases outside ``serve``: a folder 10,000 levels deep
(F3), ``query --questions`` of a device or a FIFO (F4, P8), NFC/NFD twins in ``ls``/``rm`` (P5), a tampered journal
row count (P6), a macro-enabled DOCX (P7), an entity reference inside a DOCX run (P9). REAL Chroma stores in temporary
directories, the fake embedding; the CLI through typer's runner."""

from __future__ import annotations

import io
import os
import re
import unicodedata
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llama_index_sac.apps._input import MAX_QUESTIONS_BYTES, InputFileError, read_input_file
from llama_index_sac.apps.benchmark.datasets.folder import FolderBenchmarkError, load_folder_benchmark
from llama_index_sac.apps.ingest.files import RECORD_DIR, read_file
from llama_index_sac.apps.ingest.journal import Journal
from llama_index_sac.apps.ingest.manage import escaped_id, list_documents, remove, shown_id
from llama_index_sac.apps.ingest.readers import Unreadable
from llama_index_sac.apps.ingest.run import IngestError, ingest
from llama_index_sac.apps.ingest.walk import MAX_FOLDER_DEPTH, find_files
from tests.apps.ingest.test_ingest_cli import COLLECTION, rows, write_contracts
from tests.apps.ingest.test_ingest_store_checks import cli, ingested, one_error, record_of, settings
from tests.conftest import FakeEmbedding

pytest.importorskip("chromadb")
pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")


# -- F3: a folder 10,000 levels deep ---------------------------------------------------------------------------------
@pytest.fixture(params=[1_100, pytest.param(10_000, marks=pytest.mark.slow)])
def deep_tree(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    """``tmp_path/deep``: ``top.txt``, then folders ``a/a/a/...`` 1,100 levels deep (past Python's recursion limit)
    or 10,000 (a path of 20,000 characters, five times PATH_MAX; about a minute to make and remove), made with folder
    descriptors, with ``mid.txt`` at level 100 and ``x.txt`` at the bottom. Removed bottom-up at the end
    (``shutil.rmtree`` recurses)."""
    depth = request.param
    root = tmp_path / "deep"
    root.mkdir()
    (root / "top.txt").write_text("The top agreement is governed by Delaware law.", encoding="utf-8")
    fds = [os.open(root, os.O_RDONLY)]
    try:
        for level in range(1, depth + 1):
            os.mkdir("a", dir_fd=fds[-1])
            fds.append(os.open("a", os.O_RDONLY, dir_fd=fds[-1]))
            if level in (100, depth):
                name = "mid.txt" if level == 100 else "x.txt"
                fd = os.open(name, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fds[-1])
                os.write(fd, f"A clause {level} folders down.".encode())
                os.close(fd)
        yield root
    finally:
        for level in range(len(fds) - 1, 0, -1):
            for name in ("mid.txt", "x.txt"):
                try:
                    os.unlink(name, dir_fd=fds[level])
                except FileNotFoundError:
                    pass
            os.close(fds[level])
            os.rmdir("a", dir_fd=fds[level - 1])
        os.close(fds[0])


def test_a_folder_thousands_of_levels_deep_is_one_line_and_the_rest_is_ingested(deep_tree: Path,
                                                                                 tmp_path: Path) -> None:
    notes: list[str] = []
    files, _ = find_files([deep_tree], notes=notes)
    assert [f.name for f in files] == ["mid.txt", "top.txt"]
    assert notes == [f"1 folder(s) nested more than {MAX_FOLDER_DEPTH} levels deep in {deep_tree} not walked (the "
                     f"depth limit; their files are not ingested), the first: {'a/' * 30}..."
                     f"{'/a' * 30}"]
    said: list[str] = []
    report = ingest([deep_tree], f"chroma:{tmp_path / 'store'}", settings(), embed_model=FakeEmbedding(),
                    log=said.append)
    assert report.new == 2 and not report.skipped
    assert len(said) == 1 and said[0] == notes[0]
    assert {r.doc_id for r in rows(f"chroma:{tmp_path / 'store'}").values()} == {
        "deep/top.txt", "deep/" + "a/" * 100 + "mid.txt"}


def test_a_folder_that_cannot_be_read_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "d" / "locked").mkdir(parents=True)
    (tmp_path / "d" / "ok.txt").write_text("text", encoding="utf-8")
    (tmp_path / "d" / "locked" / "hidden.txt").write_text("text", encoding="utf-8")
    scandir = os.scandir

    def refusing(path: Any) -> Any:  # as for a folder without read permission (chmod 0 does not stop root)
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", refusing)
    notes: list[str] = []
    files, _ = find_files([tmp_path / "d"], notes=notes)
    assert [f.name for f in files] == ["ok.txt"]
    assert notes == [f"folder {tmp_path / 'd' / 'locked'} cannot be read (PermissionError: Permission denied): "
                     "its files are not ingested"]
    (tmp_path / "d" / "ok.txt").unlink()
    with pytest.raises(IngestError, match="no .txt/.md/.pdf/.docx files in .*; folder .*locked cannot be read"):
        find_files([tmp_path / "d"])


# -- F4 / P8: query --questions of a device, a FIFO, a file over the cap ---------------------------------------------
def test_questions_from_a_device_or_a_fifo_are_refused_at_once(tmp_path: Path, alarm: None) -> None:
    fifo = tmp_path / "q"
    os.mkfifo(fifo)  # no writer: a plain open() would block for ever
    big = tmp_path / "big.txt"
    with open(big, "wb") as handle:
        handle.truncate(MAX_QUESTIONS_BYTES + 1)  # sparse: the size alone refuses it
    store = f"chroma:{tmp_path / 'never-opened'}"
    assert one_error(cli("query", "--questions", "/dev/zero", "--vector-store", store)) == (
        "error: --questions: /dev/zero is a character device, not a regular file (not read)")
    assert one_error(cli("query", "--questions", str(fifo), "--vector-store", store)) == (
        f"error: --questions: {fifo} is a FIFO (named pipe), not a regular file (not read)")
    assert one_error(cli("query", "--questions", str(big), "--vector-store", store)) == (
        f"error: --questions: {big} is larger than 8,388,608 bytes (8,388,609 bytes)")
    assert one_error(cli("query", "--questions", str(tmp_path), "--vector-store", store)) == (
        f"error: --questions: {tmp_path} is a folder, not a regular file (not read)")
    assert not (tmp_path / "never-opened").exists()
    # standard input is read up to the cap, never further
    assert read_input_file("-", 10, stdin=io.BytesIO(b"0123456789")) == b"0123456789"
    with pytest.raises(InputFileError, match="is larger than 10 bytes"):
        read_input_file("-", 10, stdin=io.BytesIO(b"0" * 10_000))
    # eval --questions: the same reader
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "a.txt").write_text("text", encoding="utf-8")
    for source, what in ((Path("/dev/zero"), "a character device"), (fifo, "a FIFO (named pipe)")):
        with pytest.raises(FolderBenchmarkError, match=f"questions file .* is {re.escape(what)}, not a regular file"):
            load_folder_benchmark(tmp_path / "folder", source)
    with pytest.raises(FolderBenchmarkError, match="is larger than 8,388,608 bytes"):
        load_folder_benchmark(tmp_path / "folder", big)


# -- P5: NFC/NFD twins -------------------------------------------------------------------------------------------------
NFC, NFD = unicodedata.normalize("NFC", "café.txt"), unicodedata.normalize("NFD", "café.txt")


def test_nfc_and_nfd_twins_are_shown_apart_and_rm_of_an_ambiguous_name_names_both(tmp_path: Path) -> None:
    folder = tmp_path / "n"
    folder.mkdir()
    (folder / NFC).write_text("The precomposed agreement governs payment.", encoding="utf-8")
    (folder / NFD).write_text("The decomposed agreement governs delivery.", encoding="utf-8")
    spec = f"chroma:{tmp_path / 'store'}"
    assert ingest([folder], spec, settings(), embed_model=FakeEmbedding()).new == 2
    assert shown_id(f"n/{NFC}") == "n/café.txt" and shown_id(f"n/{NFD}") == "n/cafe\\u0301.txt (NFD)"
    result = cli("ls", "--vector-store", spec)
    assert result.exit_code == 0, result.output
    listed = [line.split("  ")[1] for line in result.stdout.splitlines() if line.startswith("  n/")]
    assert listed == ["n/cafe\\u0301.txt (NFD)", "n/café.txt"]  # sorted by id: NFD's "e" before NFC's "é"
    # rm of the NFC form (what a keyboard types): ambiguous, both named, nothing removed
    error = one_error(cli("rm", f"n/{NFC}", "--vector-store", spec))
    assert error == (f"error: nothing removed: 'n/{NFC}' names documents whose names differ only in Unicode "
                     "normalisation (NFC/NFD): n/cafe\\u0301.txt, n/caf\\u00e9.txt; name one exactly as written "
                     "here (\\u escapes are accepted)")
    assert len(list_documents(spec).documents) == 2
    # the escaped spelling names exactly one
    done = remove([escaped_id(f"n/{NFD}")], spec)
    assert done.documents == [f"n/{NFD}"] and [d.doc_id for d in list_documents(spec).documents] == [f"n/{NFC}"]
    # with one document left, the other form names it
    assert remove([f"n/{NFD}"], spec).documents == [f"n/{NFC}"]


def test_query_prints_an_nfd_id_marked(capsys: pytest.CaptureFixture[str]) -> None:
    from llama_index_sac.apps.ingest.commands import _print_hits
    from llama_index_sac.apps.ingest.query import QueryHit

    _print_hits([QueryHit(f"n/{NFD}", 0, 10, 0.5, None, "text"), QueryHit(f"n/{NFC}", 0, 10, 0.4, None, "text")],
                "text", None)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "1. score 0.5000  n/cafe\\u0301.txt (NFD)  characters 0-10"
    assert lines[3] == "2. score 0.4000  n/café.txt  characters 0-10"


# -- P6: a tampered journal row count --------------------------------------------------------------------------------
def test_a_journal_row_count_the_store_does_not_hold_is_named_and_repaired(tmp_path: Path) -> None:
    texts, spec = ingested("chroma", tmp_path, 2)
    journal = Journal(record_of(spec))
    journal.path.write_text('{"done": "ghost/x.txt", "hash": "h", "rows": 5}\n', encoding="utf-8")
    result = cli("ls", "--vector-store", spec)
    assert "ghost/x.txt  0 chunks  (no summary)  (the ingest record lists 5 chunks: the next ingest repairs it)" \
        in result.stdout
    said: list[str] = []
    report = ingest([tmp_path / "docs"], spec, settings(), embed_model=FakeEmbedding(), log=said.append)
    assert (report.unchanged, report.unrecorded) == (2, ["ghost/x.txt"])
    assert said == [f"{spec} does not hold the rows its ingest record lists for 1 of 3 document(s) (it holds 0 of "
                    "their 5 rows): they are ingested again",
                    "1 document(s) not read by this run lacked their rows in the store: taken out of the record "
                    "(ingested again with their files): ghost/x.txt"]
    assert "1 taken out of the record" in report.line()
    assert sorted(d.doc_id for d in list_documents(spec).documents) == sorted(texts)
    said.clear()
    report = ingest([tmp_path / "docs"], spec, settings(), embed_model=FakeEmbedding(), log=said.append)
    assert (report.unchanged, report.unrecorded, said) == (2, [], [])  # repaired: nothing more to say
    # a row count lowered for a real document: its file is read this run, so it is written again
    doc_id = sorted(texts)[0]
    journal.path.write_text(f'{{"done": "{doc_id}", "hash": "h", "rows": 1}}\n', encoding="utf-8")
    report = ingest([tmp_path / "docs"], spec, settings(), embed_model=FakeEmbedding(), log=said.append)
    assert (report.redone, report.unchanged, report.new) == ([doc_id], 1, 1)
    assert sum(1 for r in rows(spec).values() if r.doc_id == doc_id) == record_of(spec).rows()[doc_id] > 1
    assert not (tmp_path / "store" / RECORD_DIR / COLLECTION / "journal.jsonl").exists()


# -- P7 / P9: a macro-enabled DOCX, an entity reference inside a run ---------------------------------------------------
_CT = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/'
       'package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
       'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/'
       'document.xml" ContentType="%s"/></Types>')
_MAIN = "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"
_MACRO = "application/vnd.ms-word.document.macroEnabled.main+xml"
_RELS = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.'
         'org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/'
         'officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>')


def hand_docx(path: Path, run_xml: str, prolog: str = "", content_type: str = _MAIN,
              extra: tuple[tuple[str, bytes], ...] = ()) -> Path:
    """A DOCX written by hand: one paragraph holding ``run_xml`` inside ``<w:r>``; ``prolog`` before the root."""
    body = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n{prolog}<w:document xmlns:w="http://schemas.'
            'openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r>' + run_xml
            + '</w:r></w:p></w:body></w:document>')
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", _CT % content_type)
        archive.writestr("_rels/.rels", _RELS)
        archive.writestr("word/document.xml", body)
        for name, data in extra:
            archive.writestr(name, data)
    return path


def test_a_macro_enabled_docx_and_an_entity_inside_a_run_are_named(tmp_path: Path) -> None:
    pytest.importorskip("docx")
    macro = hand_docx(tmp_path / "macro.docx", "<w:t>macro doc</w:t>", content_type=_MACRO,
                      extra=(("word/vbaProject.bin", b"\xd0\xcf\x11\xe0" + b"\0" * 100),))
    xxe = hand_docx(tmp_path / "xxe.docx", "<w:t>XXE test &xxe; end of the run</w:t>",
                    '<!DOCTYPE w:document [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>')
    inner = hand_docx(tmp_path / "inner.docx", "<w:t>one &a; two</w:t>", '<!DOCTYPE w:document [<!ENTITY a "A">]>')
    comment = hand_docx(tmp_path / "comment.docx", "<w:t>before <!-- a note --> after</w:t>")
    for path, why in ((macro, "a macro-enabled Word document (.docm; content type application/vnd.ms-word.document."
                               "macroEnabled.main+xml): not read (save it as a .docx without macros)"),
                      (xxe, "a damaged DOCX: an entity reference &xxe; in its text, which is not expanded (Word "
                            "never writes one)"),
                      (inner, "a damaged DOCX: an entity reference &a; in its text, which is not expanded (Word never "
                              "writes one)")):
        with pytest.raises(Unreadable) as caught:
            read_file(path)
        assert str(caught.value) == why and "object at 0x" not in str(caught.value)
    assert read_file(comment).text == "before  after"  # the text after a comment inside a run is kept
    # through ingest: each damaged file named, counted, the rest written
    folder = tmp_path / "d"
    folder.mkdir()
    for path in (macro, xxe, comment):
        path.rename(folder / path.name)
    said: list[str] = []
    report = ingest([folder], f"chroma:{tmp_path / 'store'}", settings(), embed_model=FakeEmbedding(),
                    log=said.append)
    assert report.new == 1 and sorted(report.skipped) == [str(folder / "macro.docx"), str(folder / "xxe.docx")]
    assert sorted(said) == [f"skipped {folder / 'macro.docx'}: a macro-enabled Word document (.docm; content type "
                            "application/vnd.ms-word.document.macroEnabled.main+xml): not read (save it as a .docx "
                            "without macros)",
                            f"skipped {folder / 'xxe.docx'}: a damaged DOCX: an entity reference &xxe; in its text, "
                            "which is not expanded (Word never writes one)"]


# -- item 4: a file changed while it is read, a file replaced by a folder, two ingest runs at once --------------------
def test_a_file_that_changes_while_it_is_read_is_not_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from llama_index_sac.apps.ingest import readers

    texts, spec = ingested("chroma", tmp_path, 3)
    victim = sorted(texts)[0]
    path = tmp_path / victim
    path.write_text(texts[victim] + "\n\nA first amendment.", encoding="utf-8")
    fdopen, appended = os.fdopen, list[bool]()

    def writer_behind(fd: int, *args: Any, **kwargs: Any) -> Any:  # another program appends as the file is read
        handle = fdopen(fd, *args, **kwargs)
        if os.path.samefile(f"/proc/self/fd/{fd}", path):
            read = handle.read

            def read_and_append(size: int = -1) -> bytes:
                block = read(size)
                if block and not appended:
                    appended.append(True)
                    with open(path, "ab") as other:
                        other.write(b" And a second amendment, still being written.")
                return block
            return type("Racing", (), {"read": staticmethod(read_and_append), "__enter__": lambda s: s,
                                       "__exit__": lambda s, *e: handle.close()})()
        return handle

    monkeypatch.setattr(readers.os, "fdopen", writer_behind)
    said: list[str] = []
    report = ingest([tmp_path / "docs"], spec, settings(), embed_model=FakeEmbedding(), log=said.append)
    why = "changed while it was read (being written?): not ingested this run (the next run reads it)"
    assert report.skipped == {str(path): why} and said == [f"skipped {path}: {why}"]
    assert (report.changed, report.unchanged) == (0, 2)
    old_rows = record_of(spec).rows()[victim]  # the version before: still recorded with its own rows, not the torn one
    assert sum(1 for r in rows(spec).values() if r.doc_id == victim) == old_rows
    monkeypatch.undo()
    report = ingest([tmp_path / "docs"], spec, settings(), embed_model=FakeEmbedding())
    assert (report.changed, report.unchanged, report.skipped) == (1, 2, {})
    assert any("second amendment" in (r.text or "") for r in rows(spec).values() if r.doc_id == victim)


def test_a_file_replaced_by_a_folder_between_runs(tmp_path: Path) -> None:
    texts, spec = ingested("chroma", tmp_path, 3)
    victim = sorted(texts)[0]
    (tmp_path / victim).unlink()
    (tmp_path / victim).mkdir()  # the same name, now a folder with a file inside
    (tmp_path / victim / "inner.txt").write_text("An inner agreement governed by Texas law.", encoding="utf-8")
    report = ingest([tmp_path / "docs"], spec, settings(), embed_model=FakeEmbedding())
    assert (report.new, report.unchanged, report.removed, report.skipped) == (1, 2, 1, {})
    assert set(per_doc_rows(spec)) == {*sorted(texts)[1:], f"{victim}/inner.txt"}
    assert set(record_of(spec).rows()) == set(per_doc_rows(spec))


def per_doc_rows(spec: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for row in rows(spec).values():
        out[row.doc_id] = out.get(row.doc_id, 0) + 1
    return out


_SLOW_INGEST = """
import sys, time
from pathlib import Path
from llama_index_sac.apps.ingest.run import IngestSettings, ingest
from tests.conftest import FakeEmbedding

class Slow(FakeEmbedding):
    @classmethod
    def class_name(cls): return "FakeEmbedding"
    def _get_text_embeddings(self, texts):
        Path(sys.argv[3]).touch()  # the lock is held from before the first embedding
        time.sleep(0.5)
        return super()._get_text_embeddings(texts)

report = ingest([sys.argv[1]], sys.argv[2], IngestSettings(show_progress=False), embed_model=Slow())
print(report.new)
"""


def test_two_ingest_processes_into_one_store(tmp_path: Path) -> None:
    import subprocess
    import sys
    import time

    from tests.apps.ingest.test_query_serve import ENV

    texts = write_contracts(tmp_path / "docs", 4)
    spec = f"chroma:{tmp_path / 'store'}"
    started = tmp_path / "started"
    first = subprocess.Popen([sys.executable, "-c", _SLOW_INGEST, str(tmp_path / "docs"), spec, str(started)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        for _ in range(600):  # up to 60 s for the other process to hold the lock
            if started.exists() or first.poll() is not None:
                break
            time.sleep(0.1)
        assert started.exists(), first.communicate()[1][-2000:]
        with pytest.raises(IngestError, match=f"another llama-sac ingest is writing to {tmp_path / 'store'} "
                                              r"\(collection 'llama-sac'\): wait for it to finish"):
            ingest([tmp_path / "docs"], spec, settings(), embed_model=FakeEmbedding())
        out, err = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert first.returncode == 0 and out.strip() == "4", err[-2000:]
    report = ingest([tmp_path / "docs"], spec, settings(), embed_model=FakeEmbedding())  # after it: all there
    assert (report.new, report.unchanged) == (0, 4)
    assert set(per_doc_rows(spec)) == set(texts) and record_of(spec).rows() == per_doc_rows(spec)


_NAMES = st.lists(st.text(alphabet="ae/\u00e9\u0301\uac00\u1100\u1161", min_size=1, max_size=6)
                  .map(lambda s: "n/" + s.strip("/")).filter(lambda s: "//" not in s and s != "n/"),
                  min_size=1, max_size=6, unique=True)


@given(ids=_NAMES, forms=st.lists(st.sampled_from(["NFC", "NFD"]), min_size=6, max_size=6))
def test_twins_look_different_and_each_escaped_spelling_names_exactly_itself(
        ids: list[str], forms: list[Literal["NFC", "NFD"]]) -> None:
    from llama_index_sac.apps.ingest.manage import _chosen

    ids = sorted({unicodedata.normalize(form, doc_id) for doc_id, form in zip(ids, forms, strict=False)})
    assert len({shown_id(d) for d in ids}) == len(ids)  # ls: no two ids print alike
    for doc_id in ids:
        under = [d for d in ids if d == doc_id or d.startswith(doc_id + "/")]
        assert _chosen(escaped_id(doc_id), ids) == under  # the escaped spelling: exactly that id (and what is under it)
        twins = [d for d in ids if unicodedata.normalize("NFC", d) == unicodedata.normalize("NFC", doc_id)]
        if len(twins) > 1:  # the plain spelling of a twin is refused, naming every twin
            with pytest.raises(IngestError, match="differ only in Unicode normalisation") as caught:
                _chosen(doc_id, ids)
            assert all(escaped_id(t) in str(caught.value) for t in twins[:6])
