"""``llama-sac ingest`` / ``query`` against stores that are not what the ingest record says: another kind of store,
a store that lost rows, a damaged store, a folder that is not a store, an empty collection (issue: a new user's
report). REAL Chroma (embedded) and Qdrant (local mode) in temporary directories; the command is run through its
entry point (``llama_index_sac.apps.cli.app``) for every error, with the real offline model where one is loaded.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.schema import MetadataMode
from typer.testing import CliRunner

from llama_index_sac.apps.ingest.files import RECORD_DIR, IngestRecord, StoreSpec
from llama_index_sac.apps.ingest.run import IngestSettings, ingest, query
from tests.apps.ingest.test_ingest_cli import COLLECTION, node_of, per_doc, rows, same_rows, write_contracts
from tests.conftest import FakeEmbedding

_MISSING = "the 'vectorstores' extra is not installed (pip install -e '.[vectorstores]'; scripts/setup.sh does it)"
chromadb = pytest.importorskip("chromadb", reason=_MISSING)
qdrant_client = pytest.importorskip("qdrant_client", reason=_MISSING)

pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")

STORES = ["chroma", "qdrant"]
runner = CliRunner()


def settings(**kw: Any) -> IngestSettings:
    return IngestSettings(show_progress=False, **kw)


def snapshot(folder: Path) -> dict[str, str]:
    """Every entry under ``folder``: relative path -> sha256 of a file's bytes, or "dir"."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(folder.rglob("*"))}


def cli(*args: str) -> Any:
    from llama_index_sac.apps.cli import app

    return runner.invoke(app, list(args))


def one_error(result: Any) -> str:
    """The command failed as the project's rule says: exit 2, exactly one ``error:`` line, no traceback."""
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit), result.exception
    return errors[0]


def ingested(kind: str, tmp_path: Path, n: int = 4) -> tuple[dict[str, str], str]:
    """``n`` contracts in ``tmp_path/docs`` ingested into ``kind:tmp_path/store``; (texts, spec)."""
    texts = write_contracts(tmp_path / "docs", n)
    spec = f"{kind}:{tmp_path / 'store'}"
    ingest([tmp_path / "docs"], spec, settings(), embed_model=FakeEmbedding())
    return texts, spec


def record_of(spec: str) -> IngestRecord:
    return IngestRecord(StoreSpec.parse(spec), COLLECTION)


def drop_store_files(store: Path) -> None:
    """Everything of the store but the ingest record, as when a user copies only part of the folder."""
    for entry in store.iterdir():
        if entry.name != RECORD_DIR:
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()


def delete_document_rows(spec: str, doc_id: str) -> None:
    """Delete one document's rows with the store's own client (behind the record's back)."""
    store = StoreSpec.parse(spec)
    if store.kind == "chroma":
        client = chromadb.PersistentClient(path=str(store.path), settings=chromadb.Settings(anonymized_telemetry=False))
        try:
            client.get_collection(COLLECTION).delete(where={"document_id": doc_id})
        finally:
            client.close()
        return
    from qdrant_client import models

    qclient = qdrant_client.QdrantClient(path=str(store.path))
    try:
        qclient.delete(COLLECTION, points_selector=models.Filter(
            must=[models.FieldCondition(key="doc_id", match=models.MatchValue(value=doc_id))]))
    finally:
        qclient.close()


# -- 1. the record names its store kind; a store that lost rows is written again ----------------------------------
@pytest.mark.parametrize("kind", STORES)
def test_another_kind_of_store_is_refused_and_nothing_changes(kind: str, tmp_path: Path) -> None:
    """Before: ``ingest`` opened the other kind's client in the folder (creating its files), trusted the record and
    wrote nothing ("7 unchanged"), so the store stayed empty."""
    other = "qdrant" if kind == "chroma" else "chroma"
    _, spec = ingested(kind, tmp_path)
    store = tmp_path / "store"
    assert json.loads(record_of(spec).settings_path.read_text())["store"] == kind
    (store / ("chroma.sqlite3" if other == "chroma" else "meta.json")).write_bytes(b"x")  # files of both kinds
    before = snapshot(store)
    for command in ("ingest", "query"):  # the record decides
        args = [str(tmp_path / "docs")] if command == "ingest" else ["governing law"]
        line = one_error(cli(command, *args, "--vector-store", f"{other}:{store}"))
        assert line == (f"error: --vector-store: {store} holds a {kind} store (its ingest record says so), not a "
                        f"{other} one: use {kind}:{store}")
        assert snapshot(store) == before
    (store / ("chroma.sqlite3" if other == "chroma" else "meta.json")).unlink()
    shutil.rmtree(store / RECORD_DIR)  # no record (or an older one, without the kind): the folder's files decide
    before = snapshot(store)
    line = one_error(cli("ingest", str(tmp_path / "docs"), "--vector-store", f"{other}:{store}"))
    assert line == f"error: --vector-store: {store} holds a {kind} store, not a {other} one: use {kind}:{store}"
    assert snapshot(store) == before


@pytest.mark.parametrize("kind", STORES)
def test_a_store_that_lost_all_its_rows_is_ingested_again(kind: str, tmp_path: Path) -> None:
    """The record (docstore) is kept, the store's files are gone: before, every document was "unchanged" and the
    store stayed empty. Now the documents are written again, with one warning line, equal to a fresh ingestion."""
    texts, spec = ingested(kind, tmp_path)
    expected = rows(spec)
    drop_store_files(tmp_path / "store")
    lines: list[str] = []
    embed = FakeEmbedding()
    report = ingest([tmp_path / "docs"], spec, settings(), embed_model=embed, log=lines.append)
    assert lines == [f"{spec} does not hold the rows its ingest record lists for 4 of 4 document(s) (it holds 0 of "
                     f"their {len(expected)} rows): they are ingested again"]
    assert (report.new, report.changed, report.unchanged, report.chunks_written) == (4, 0, 0, len(expected))
    assert same_rows(rows(spec), expected) and len(embed.texts_embedded) == len(expected)
    again: list[str] = []  # and the record is true again: the next run trusts it, reads no row, writes nothing
    report = ingest([tmp_path / "docs"], spec, settings(), embed_model=FakeEmbedding(), log=again.append)
    assert (report.new, report.unchanged, report.chunks_written, again) == (0, 4, 0, [])
    assert set(per_doc(rows(spec))) == set(texts)


@pytest.mark.parametrize("kind", STORES)
def test_a_document_whose_rows_vanished_is_the_only_one_written_again(kind: str, tmp_path: Path) -> None:
    texts, spec = ingested(kind, tmp_path)
    expected = rows(spec)
    lost = sorted(texts)[2]
    delete_document_rows(spec, lost)
    lines: list[str] = []
    embed = FakeEmbedding()
    report = ingest([tmp_path / "docs"], spec, settings(), embed_model=embed, log=lines.append)
    n = per_doc(expected)[lost]
    assert lines == [f"{spec} does not hold the rows its ingest record lists for 1 of 4 document(s) (it holds 0 of "
                     f"their {n} rows): they are ingested again"]
    assert (report.new, report.unchanged, report.chunks_written) == (1, 3, n)
    assert sorted(embed.texts_embedded) == sorted(node_of(r).get_content(MetadataMode.EMBED)
                                                  for r in expected.values() if r.doc_id == lost)
    assert same_rows(rows(spec), expected)


def test_an_older_record_without_row_counts_or_store_kind_keeps_working(tmp_path: Path) -> None:
    """Records written before ``rows.json`` and ``settings.json["store"]``: trusted where the store holds rows of a
    document (the counts are then recorded), written again where it holds none."""
    texts, spec = ingested("chroma", tmp_path)
    record = record_of(spec)
    old = json.loads(record.settings_path.read_text())
    del old["store"]
    record.settings_path.write_text(json.dumps(old))
    record.rows_path.unlink()
    expected = rows(spec)
    lines: list[str] = []
    report = ingest([tmp_path / "docs"], spec, settings(), embed_model=FakeEmbedding(), log=lines.append)
    assert (report.new, report.unchanged, report.chunks_written, lines) == (0, 4, 0, [])
    assert record.rows() == dict(per_doc(expected)) and record.store_kind() == "chroma"
    assert same_rows(rows(spec), expected)

    record.settings_path.write_text(json.dumps(old))  # older again, and one document's rows gone
    record.rows_path.unlink()
    lost = sorted(texts)[0]
    delete_document_rows(spec, lost)
    report = ingest([tmp_path / "docs"], spec, settings(), embed_model=FakeEmbedding(), log=lines.append)
    assert lines == [f"{spec} does not hold the rows its ingest record lists for 1 of 4 document(s) (it holds 0 "
                     "row(s) of them): they are ingested again"]
    assert (report.new, report.unchanged) == (1, 3) and same_rows(rows(spec), expected)


def test_rows_of_a_document_the_record_does_not_list_are_replaced(tmp_path: Path) -> None:
    texts, spec = ingested("qdrant", tmp_path)
    expected = rows(spec)
    record = record_of(spec)
    forgotten = sorted(texts)[1]
    docstore = json.loads(record.docstore_path.read_text())
    del docstore["docstore/metadata"][forgotten]
    record.docstore_path.write_text(json.dumps(docstore))
    lines: list[str] = []
    report = ingest([tmp_path / "docs"], spec, settings(), embed_model=FakeEmbedding(), log=lines.append)
    assert lines == [f"{spec} holds rows of 1 document(s) its ingest record does not list: they are replaced when "
                     "their files are ingested"]
    assert (report.new, report.unchanged) == (1, 3) and same_rows(rows(spec), expected)


# -- 2. a damaged store: one error line naming it ------------------------------------------------------------------
def damage(kind: str, store: Path, how: str) -> None:
    if kind == "chroma":
        with open(store / "chroma.sqlite3", "r+b") as handle:
            handle.truncate(4000)
    elif how == "storage":
        (store / "collection" / COLLECTION / "storage.sqlite").write_text("garbage\n")
    else:
        (store / "meta.json").write_text("garbage\n")


@pytest.mark.parametrize(("kind", "how", "cause"), [
    ("chroma", "sqlite", "InternalError: error returned from database: (code: 11) database disk image is malformed"),
    ("qdrant", "storage", "DatabaseError: file is not a database"),
])
def test_query_on_a_damaged_store_is_one_error_line(kind: str, how: str, cause: str, tmp_path: Path) -> None:
    _, spec = ingested(kind, tmp_path, 2)
    store = tmp_path / "store"
    damage(kind, store, how)
    before = snapshot(store)
    line = one_error(cli("query", "governing law", "--vector-store", spec))
    assert line == (f"error: the {kind} store {store} cannot be opened ({cause}); restore it from a copy, or delete "
                    "the folder and ingest again to rebuild it")
    assert snapshot(store) == before


def test_a_damaged_qdrant_meta_json_is_named_before_the_client_reads_it(tmp_path: Path) -> None:
    _, spec = ingested("qdrant", tmp_path, 2)
    store = tmp_path / "store"
    damage("qdrant", store, "meta")
    line = one_error(cli("query", "governing law", "--vector-store", spec))
    assert line == (f"error: the qdrant store {store} is damaged: its meta.json is not valid JSON (Expecting value: "
                    "line 1 column 1 (char 0)); restore it from a copy, or delete the folder and ingest again to "
                    "rebuild it")


@pytest.mark.slow
@pytest.mark.parametrize("kind", STORES)
def test_ingest_into_a_damaged_store_is_one_error_line(kind: str, tmp_path: Path) -> None:
    """The real model loads first (``ingest`` checks the model before it opens the store); with the record and
    without it (a damaged store ``ingest`` did not write: no record folder is left behind)."""
    write_contracts(tmp_path / "docs", 2)
    store = tmp_path / "store"
    spec = f"{kind}:{store}"
    assert cli("ingest", str(tmp_path / "docs"), "--vector-store", spec, "--no-progress").exit_code == 0
    damage(kind, store, "storage")
    for keep_record in (True, False):
        if not keep_record:
            shutil.rmtree(store / RECORD_DIR)
        before = snapshot(store)
        line = one_error(cli("ingest", str(tmp_path / "docs"), "--vector-store", spec, "--no-progress"))
        assert line.startswith(f"error: the {kind} store {store} cannot be opened (")
        assert snapshot(store) == before


# -- 3. query creates nothing where there is no store ---------------------------------------------------------------
@pytest.mark.parametrize(("folder", "asked", "message"), [
    ("plain", "chroma", "is not a chroma store (no chroma.sqlite3): nothing was ingested there"),
    ("plain", "qdrant", "is not a qdrant store (no meta.json): nothing was ingested there"),
    ("chroma", "qdrant", "holds a chroma store, not a qdrant one: use chroma:{dir}"),
    ("qdrant", "chroma", "holds a qdrant store, not a chroma one: use qdrant:{dir}"),
    ("empty-sqlite", "chroma", "is not a chroma store (no chroma.sqlite3 with data): nothing was ingested there"),
    ("no-storage", "qdrant", "is damaged: collection 'llama-sac' has no collection/llama-sac/storage.sqlite"),
])
def test_query_never_creates_files_in_a_folder_that_is_not_such_a_store(folder: str, asked: str, message: str,
                                                                        tmp_path: Path) -> None:
    target = tmp_path / "target"
    if folder == "plain":
        write_contracts(target, 2)
    elif folder in ("chroma", "qdrant"):
        ingested(folder, tmp_path, 2)
        shutil.move(tmp_path / "store", target)
        shutil.rmtree(target / RECORD_DIR)  # the folder's own files tell, without a record
    elif folder == "empty-sqlite":
        target.mkdir()
        (target / "chroma.sqlite3").touch()
    else:
        ingested("qdrant", tmp_path, 2)
        shutil.move(tmp_path / "store", target)
        shutil.rmtree(target / "collection")
    before = snapshot(target)
    line = one_error(cli("query", "governing law", "--vector-store", f"{asked}:{target}"))
    assert line.startswith("error: ") and message.format(dir=target) in line and str(target) in line
    assert snapshot(target) == before


@pytest.mark.parametrize("kind", STORES)
def test_query_on_a_store_adds_no_file(kind: str, tmp_path: Path) -> None:
    _, spec = ingested(kind, tmp_path, 2)
    before = set(snapshot(tmp_path / "store"))
    assert len(query("governing law", spec, k=2, embed_model=FakeEmbedding(), document_aware=True)) == 2
    assert set(snapshot(tmp_path / "store")) == before  # (Chroma rewrites its own files' content on every open)


# -- 4. and 5. empty collections and files, nothing readable, progress bars --------------------------------------------
@pytest.mark.parametrize("kind", STORES)
def test_files_without_text_are_named_and_document_aware_query_of_an_empty_collection(kind: str,
                                                                                      tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "empty.txt").write_bytes(b"")
    (docs / "blank.md").write_text(" \n\t\n", encoding="utf-8")
    spec = f"{kind}:{tmp_path / 'store'}"
    lines: list[str] = []
    report = ingest([docs], spec, settings(), embed_model=FakeEmbedding(), log=lines.append)
    assert (report.new, report.chunks_written) == (2, 0)
    assert lines == ["no chunk from 2 file(s) without text (empty or whitespace only; recorded, nothing written): "
                     "docs/blank.md, docs/empty.txt"]
    assert record_of(spec).rows() == {"docs/blank.md": 0, "docs/empty.txt": 0}
    again: list[str] = []  # recorded: not a "lost" document on the next run, and no second warning
    assert ingest([docs], spec, settings(), embed_model=FakeEmbedding(), log=again.append).unchanged == 2
    assert again == []
    for extra in ([], ["--document-aware"]):  # the same answer with and without --document-aware
        result = cli("query", "governing law", "--vector-store", spec, *extra)
        assert (result.exit_code, result.stdout, result.stderr) == (0, "no chunks in the collection\n", ""), extra


@pytest.mark.slow
def test_nothing_readable_is_one_error_line_and_no_progress_silences_the_model_bar(tmp_path: Path) -> None:
    from transformers.utils import logging as hf_logging

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "latin1.txt").write_bytes("Vertrag über Geheimhaltung".encode("latin-1"))
    store = tmp_path / "store"
    result = cli("ingest", str(docs), "--vector-store", f"chroma:{store}", "--no-progress")
    line = one_error(result)
    assert result.stderr.splitlines() == [line]  # no "warning: skipped" line repeating the same reason
    assert line.startswith(f"error: nothing could be read (the store was not touched): {docs / 'latin1.txt'}: not "
                           "UTF-8 text (") and not store.exists()

    write_contracts(docs, 2)
    (docs / "latin1.txt").unlink()
    result = cli("ingest", str(docs), "--vector-store", f"chroma:{store}", "--no-progress")
    assert result.exit_code == 0 and result.stderr == "", result.stderr  # no "Loading weights" bar
    assert hf_logging.is_progress_bar_enabled()  # switched back on afterwards
    result = cli("query", "governing law", "--vector-store", f"chroma:{store}", "--no-progress", "--k", "1")
    assert result.exit_code == 0 and result.stderr == "" and result.stdout.startswith("1. score "), result.stderr
    result = cli("query", "governing law", "--vector-store", f"chroma:{store}", "--k", "1", "--embed-backend", "torch")
    assert result.exit_code == 0 and "Loading weights" in result.stderr  # the torch model's bar, shown by default
