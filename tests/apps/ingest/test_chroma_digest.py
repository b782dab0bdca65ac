"""The checksums of a Chroma store's HNSW index files in its ingest record (``chroma-index.json``): recorded by a
writer once its client is closed, compared before any client opens the store. A file that differs is one error naming
it (noise over ``link_lists.bin`` keeps the index's structure and changed the hits silently); a store whose files
cannot be compared (no checksums yet, a writer at work or killed) is read with a note, never refused. REAL Chroma
(stores written with chromadb itself, past its sync threshold so that the index is persisted)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from llama_index_sac.apps.ingest.chroma_digest import DIGEST_FILE, INDEX_FILES, recorded_index
from llama_index_sac.apps.ingest.files import RECORD_DIR, IngestError, IngestRecord, StoreSpec
from llama_index_sac.apps.ingest.generation import bump_generation
from llama_index_sac.apps.ingest.query import Searcher
from llama_index_sac.apps.ingest.store import open_store
from tests.apps.ingest.test_chroma_index_check import build
from tests.apps.ingest.test_ingest_cli import COLLECTION
from tests.apps.ingest.test_ingest_store_checks import cli
from tests.conftest import FakeEmbedding, fake_searcher

chromadb = pytest.importorskip("chromadb")


def spec_of(store: Path) -> StoreSpec:
    return StoreSpec("chroma", store)


def digest(store: Path) -> dict[str, object]:
    return dict(json.loads((IngestRecord(spec_of(store), COLLECTION).directory / DIGEST_FILE).read_text()))


def reader_note(store: Path) -> str | None:
    """Open the collection as query does, ask it one question (Chroma loads the index), close it; its note."""
    with open_store(spec_of(store), COLLECTION, create=False) as opened:
        found = opened.vector_store._collection  # type: ignore[attr-defined]
        assert len(found.query(query_embeddings=[[0.5] * 8], n_results=5)["ids"][0]) == 5
        return opened.unverified


def write(store: Path, rows: int = 0) -> str | None:
    """A writer (as rm does: under the record's lock) that adds ``rows`` rows; its note."""
    record = IngestRecord(spec_of(store), COLLECTION)
    with record.lock(), open_store(spec_of(store), COLLECTION, create=False, writes=True) as opened:
        if rows:
            found = opened.vector_store._collection  # type: ignore[attr-defined]
            start = found.count()
            found.add(ids=[f"new{i}" for i in range(start, start + rows)],
                      embeddings=np.random.default_rng(start).random((rows, 8)).tolist(),
                      metadatas=[{"ref_doc_id": "new"}] * rows)
        return opened.unverified


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """1,200 rows written by chromadb (index persisted), then recorded by a writer that writes nothing."""
    store = tmp_path / "store"
    folder = build(store)
    assert (folder / "index_metadata.pickle").is_file()
    write(store)
    return store


def index_folder(store: Path) -> Path:
    return next(p for p in store.iterdir() if p.is_dir() and not p.name.startswith("."))


def test_a_writer_records_every_file_and_readers_then_verify_without_a_note(store: Path) -> None:
    folder = index_folder(store)
    recorded = digest(store)
    assert recorded["state"] == "recorded" and recorded["segment"] == folder.name
    files = recorded["files"]
    assert isinstance(files, dict) and sorted(files) == sorted(INDEX_FILES)
    assert all(files[name]["bytes"] == (folder / name).stat().st_size for name in INDEX_FILES)
    assert reader_note(store) is None and reader_note(store) is None  # reading changes nothing on disk
    assert write(store, rows=1100) is None  # past the sync threshold again: Chroma saves the index while writing
    assert digest(store) != recorded and reader_note(store) is None


def _noise(path: Path) -> None:
    path.write_bytes(np.random.default_rng(1).bytes(path.stat().st_size))


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(("damage", "why"), [
    (lambda f: _noise(f / "link_lists.bin"),
     "link_lists.bin is not the file llama-sac ingest wrote (its sha256 differs from the one recorded)"),
    (lambda f: _flip(f / "index_metadata.pickle"), "index_metadata.pickle is not the file llama-sac ingest wrote"),
    (lambda f: (f / "index_metadata.pickle").write_bytes((f / "index_metadata.pickle").read_bytes()[:-7]),
     "index_metadata.pickle has {size} bytes, not the {recorded} recorded"),
    (lambda f: (f / "index_metadata.pickle").unlink(), "index_metadata.pickle is missing"),
], ids=["noise-links", "pickle-bit", "short-pickle", "no-pickle"])
def test_a_file_that_differs_from_its_checksum_is_one_error_naming_it(store: Path, damage: object,
                                                                       why: str) -> None:
    folder = index_folder(store)
    recorded = (folder / "index_metadata.pickle").stat().st_size
    damage(folder)  # type: ignore[operator]
    size = (folder / "index_metadata.pickle").stat().st_size if (folder / "index_metadata.pickle").exists() else 0
    expected = (f"the chroma store {store} is damaged (collection 'llama-sac'): its vector index file {folder.name}/"
                f"{why.format(size=size, recorded=recorded)}")
    for _ in range(2):  # a writer refuses too, and leaves the checksums as they were: refused again, not a note
        with pytest.raises(IngestError) as caught:
            reader_note(store)
        assert str(caught.value).startswith(expected)
        assert str(caught.value).endswith("; queries would return wrong results. Ingest again into a new "
                                          "--vector-store (or restore the folder from a copy)")
        with pytest.raises(IngestError, match="is damaged"):
            write(store)
        assert digest(store)["state"] == "recorded"


def test_the_query_command_says_one_error_line_naming_the_file(store: Path) -> None:
    folder = index_folder(store)
    _noise(folder / "link_lists.bin")
    result = cli("query", "governing law", "--vector-store", f"chroma:{store}")
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [
        f"error: the chroma store {store} is damaged (collection 'llama-sac'): its vector index file {folder.name}/"
        "link_lists.bin is not the file llama-sac ingest wrote (its sha256 differs from the one recorded); queries "
        "would return wrong results. Ingest again into a new --vector-store (or restore the folder from a copy)"]


def test_a_store_without_checksums_is_read_with_a_note_and_the_next_writer_records_them(tmp_path: Path) -> None:
    store = tmp_path / "store"
    build(store)  # no ingest record at all (another tool, or a record of an earlier version)
    where = f"the vector index of chroma:{store} (collection 'llama-sac') cannot be verified: its ingest record holds "
    assert reader_note(store) == (where + "no checksums of it (written by an earlier version, or not by llama-sac "
                                          "ingest); llama-sac ingest records them")
    assert write(store) == (where + "no checksums of it (written by an earlier version, or not by llama-sac ingest); "
                                    "this run records them")
    assert digest(store)["state"] == "recorded" and reader_note(store) is None


def _raw_add(store: Path, rows: int) -> None:
    """Rows added by a bare chromadb client (what an ingest killed mid-run leaves: no checksums recorded)."""
    client = chromadb.PersistentClient(path=str(store), settings=chromadb.Settings(anonymized_telemetry=False))
    found = client.get_collection(COLLECTION)
    found.add(ids=[f"raw{i}" for i in range(rows)], embeddings=np.random.default_rng(7).random((rows, 8)).tolist(),
              metadatas=[{"ref_doc_id": "raw"}] * rows)
    client.close()


def test_a_writer_at_work_or_killed_is_a_note(store: Path) -> None:
    spec, record = spec_of(store), IngestRecord(spec_of(store), COLLECTION)
    where = f"the vector index of chroma:{store} (collection 'llama-sac') cannot be verified"
    with record.lock(), recorded_index(record, spec, COLLECTION) as start:  # an ingest holds the lock and writes
        start()
        assert reader_note(store) == f"{where} now: an ingest or rm is writing it"
    assert reader_note(store) is None  # the writer ended: it recorded the files as they are
    before = digest(store)
    (record.directory / DIGEST_FILE).write_text('{"format": 1, "state": "writing"}')  # a writer killed mid-run
    _raw_add(store, 1100)  # past the sync threshold: the index files changed
    stopped = f"{where}: the last ingest or rm stopped before it recorded its checksums; "
    assert reader_note(store) == stopped + "llama-sac ingest records them"
    assert write(store) == stopped + "this run records them"
    assert digest(store)["files"] != before["files"] and reader_note(store) is None


def test_a_writer_that_fails_records_the_files_it_left(store: Path) -> None:
    record = IngestRecord(spec_of(store), COLLECTION)
    with pytest.raises(RuntimeError), record.lock(), open_store(spec_of(store), COLLECTION, create=False,
                                                                writes=True) as opened:
        found = opened.vector_store._collection  # type: ignore[attr-defined]
        found.add(ids=[f"x{i}" for i in range(1000)], embeddings=np.random.default_rng(5).random((1000, 8)).tolist(),
                  metadatas=[{"ref_doc_id": "x"}] * 1000)
        raise RuntimeError("stopped mid-run")
    assert digest(store)["state"] == "recorded" and reader_note(store) is None


def test_a_writer_that_fails_without_changing_the_index_leaves_the_record_as_it_was(store: Path,
                                                                                    tmp_path: Path) -> None:
    """A run refused after it opened the store (rows ingest did not write...) writes nothing, checksums included."""
    path = IngestRecord(spec_of(store), COLLECTION).directory / DIGEST_FILE
    before = path.read_bytes()
    with pytest.raises(RuntimeError), IngestRecord(spec_of(store), COLLECTION).lock(), open_store(
            spec_of(store), COLLECTION, create=True) as opened:
        assert opened.rows == 1200
        raise RuntimeError("refused after opening")
    assert path.read_bytes() == before
    other = tmp_path / "other"
    build(other)  # no ingest record
    with pytest.raises(RuntimeError), IngestRecord(spec_of(other), COLLECTION).lock(), open_store(
            spec_of(other), COLLECTION, create=True):
        raise RuntimeError("refused after opening")
    assert not (other / RECORD_DIR).exists()


def test_a_store_below_the_sync_threshold_has_nothing_to_compare(tmp_path: Path) -> None:
    """Below Chroma's sync threshold no index is persisted; every client rebuilds it from the log and rewrites the
    scratch files in the folder (``data_level0.bin``...): no checksum, no false alarm."""
    store = tmp_path / "store"
    build(store, rows=300)
    assert write(store) is None
    assert digest(store)["files"] == {}
    for _ in range(3):
        assert reader_note(store) is None
    (IngestRecord(spec_of(store), COLLECTION).directory / DIGEST_FILE).write_text('{"format": 1, "state": "writing"}')
    assert reader_note(store) is None and write(store, rows=10) is None  # killed: still nothing Chroma would load


def test_a_damaged_record_file_or_another_segment(store: Path) -> None:
    path = IngestRecord(spec_of(store), COLLECTION).directory / DIGEST_FILE
    recorded = digest(store)
    path.write_text(json.dumps({**recorded, "segment": "another"}))
    assert reader_note(store) == (
        f"the vector index of chroma:{store} (collection 'llama-sac') cannot be verified: it is not the index the "
        f"ingest record describes (segment {index_folder(store).name}, not another: the collection was made again "
        "by another tool?); llama-sac ingest records them")
    for bad in ("not json", json.dumps({**recorded, "files": {"header.bin": {"bytes": -1, "sha256": "x"}}}),
                json.dumps({"format": 2, "state": "writing"})):
        path.write_text(bad)
        with pytest.raises(IngestError, match=f"the ingest record {path} .*: it is damaged; delete that file and run "
                                              "llama-sac ingest again"):
            reader_note(store)


def test_query_prints_the_note(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from llama_index_sac.apps.ingest import commands

    searcher = fake_searcher([])
    monkeypatch.setattr(searcher, "unverified", "the vector index of X cannot be verified: ...", raising=False)
    monkeypatch.setattr(commands, "Searcher", searcher)
    result = cli("query", "governing law", "--vector-store", f"chroma:{tmp_path}")
    assert result.exit_code == 0 and result.stderr.splitlines() == [
        "note: the vector index of X cannot be verified: ..."]


def answered(searcher: Searcher) -> int:
    """Rows Chroma returned for one question (these bare rows carry no node, so the searcher drops them as ghosts)."""
    hits = searcher.search("payment", 5)
    return len(hits) + searcher.dropped


def test_an_open_searcher_verifies_the_index_again_when_the_generation_changes(store: Path) -> None:
    """serve's reload: the searcher reopens the collection after a writer bumped the generation, and checks the
    files again (a damaged index is the error serve answers 503 with; the next request tries again)."""
    record = IngestRecord(spec_of(store), COLLECTION)
    with Searcher(spec_of(store), embed_model=FakeEmbedding(dim=8), document_aware=False,
                  show_progress=False) as searcher:
        assert searcher.unverified is None and answered(searcher) == 5
        assert write(store, rows=1100) is None
        bump_generation(record)
        assert searcher.refresh() and searcher.unverified is None and searcher.rows == 2300
        assert answered(searcher) == 5
        _noise(index_folder(store) / "link_lists.bin")
        bump_generation(record)
        with pytest.raises(IngestError, match="link_lists.bin is not the file llama-sac ingest wrote"):
            searcher.refresh()
        assert answered(searcher) == 0  # closed: nothing answered from the damaged index
        with pytest.raises(IngestError, match="link_lists.bin is not the file"):
            searcher.refresh()
