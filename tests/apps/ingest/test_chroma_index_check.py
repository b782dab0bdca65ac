"""A Chroma store whose HNSW vector index folder was deleted or damaged: one ``error:`` line (exit 2) naming the
damage and the repair, from ``query`` and ``ingest``, before hnswlib reads the files (a damaged ``data_level0.bin``
crashed the process with a segmentation fault; a deleted folder silently returned almost nothing). REAL Chroma."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from llama_index_sac.apps.ingest.chroma_check import check_chroma_index
from llama_index_sac.apps.ingest.files import IngestError, StoreSpec
from llama_index_sac.apps.ingest.run import ingest
from tests.apps.ingest.test_ingest_cli import COLLECTION, write_contracts
from tests.apps.ingest.test_ingest_store_checks import cli, one_error, settings
from tests.conftest import FakeEmbedding

chromadb = pytest.importorskip("chromadb")
REPO = Path(__file__).resolve().parents[3]


def build(store: Path, rows: int = 1200, dim: int = 8) -> Path:
    """A collection of ``rows`` random vectors (past Chroma's sync threshold of 1000: the index folder is written);
    returns the index folder."""
    client = chromadb.PersistentClient(path=str(store), settings=chromadb.Settings(anonymized_telemetry=False))
    found = client.get_or_create_collection(COLLECTION, metadata={"hnsw:space": "cosine"})
    rng = np.random.default_rng(0)
    for first in range(0, rows, 400):
        ids = [str(i) for i in range(first, min(rows, first + 400))]
        found.add(ids=ids, embeddings=rng.random((len(ids), dim)).tolist(),
                  metadatas=[{"ref_doc_id": f"d{i}"} for i in range(len(ids))])
    client.close()
    folders = [p for p in store.iterdir() if p.is_dir()]
    return folders[0] if folders else store / "none"


def check(store: Path) -> str | None:
    try:
        check_chroma_index(StoreSpec("chroma", store), COLLECTION)
    except IngestError as exc:
        return str(exc)
    return None


def test_an_intact_store_and_a_small_one_pass(tmp_path: Path) -> None:
    assert build(tmp_path / "big").is_dir() and check(tmp_path / "big") is None
    build(tmp_path / "small", rows=300)  # below the sync threshold
    assert check(tmp_path / "small") is None


def test_a_deleted_index_folder_is_one_error_from_query_and_ingest(tmp_path: Path) -> None:
    store = tmp_path / "store"
    folder = build(store)
    os.system(f"rm -r '{folder}'")
    line = one_error(cli("query", "governing law", "--k", "50", "--vector-store", f"chroma:{store}"))
    assert line == (f"error: the chroma store {store} is damaged (collection 'llama-sac'): its vector index folder "
                    f"{folder.name}/ is missing (1200 rows were indexed); queries would return wrong results or "
                    "crash. Ingest again into a new --vector-store (or restore the folder from a copy)")
    write_contracts(tmp_path / "docs", 2)
    with pytest.raises(IngestError, match="is missing"):
        ingest([tmp_path / "docs"], f"chroma:{store}", settings(), embed_model=FakeEmbedding())


def _random(path: Path) -> None:
    path.write_bytes(np.random.default_rng(1).bytes(path.stat().st_size))


def _records(path: Path, size: int, edit: object) -> None:
    records = np.fromfile(path, dtype=np.uint8).reshape(-1, size)
    edit(records)  # type: ignore[operator]
    records.tofile(path)


@pytest.mark.parametrize(("damage", "why"), [
    (lambda f: _random(f / "data_level0.bin"), "data_level0.bin has records with more neighbours"),
    (lambda f: (f / "data_level0.bin").write_bytes((f / "data_level0.bin").read_bytes()[:-1]),
     "data_level0.bin has 206399 bytes, not 1200 records of 172"),
    (lambda f: (f / "data_level0.bin").write_bytes(b""), "data_level0.bin has 0 bytes, not 1200 records of 172"),
    (lambda f: _records(f / "data_level0.bin", 172, lambda r: r.__setitem__((5, slice(4, 8)), 255)),
     "data_level0.bin has links to elements that do not exist"),
    (lambda f: _records(f / "data_level0.bin", 172, lambda r: r.__setitem__((7, slice(132, 136)), 255)),
     "data_level0.bin has vectors that are not finite"),
    (lambda f: _records(f / "data_level0.bin", 172, lambda r: r.__setitem__((9, slice(164, 172)), r[8, 164:172])),
     "data_level0.bin has repeated labels"),
    (lambda f: _random(f / "header.bin"), "header.bin is inconsistent"),
    (lambda f: (f / "length.bin").write_bytes(b""), "length.bin has 0 bytes, not 4800"),
    (lambda f: (f / "link_lists.bin").unlink(), "link_lists.bin missing"),
], ids=["random-level0", "short-level0", "empty-level0", "bad-link", "nan-vector", "same-label", "random-header",
        "length", "no-links"])
def test_a_damaged_index_is_named_before_hnswlib_reads_it(damage: object, why: str, tmp_path: Path) -> None:
    folder = build(tmp_path / "store")
    damage(folder)  # type: ignore[operator]
    message = check(tmp_path / "store")
    assert message is not None and f"its vector index {folder.name}/ is damaged: {why}" in message


@pytest.mark.slow
def test_random_bytes_over_data_level0_are_one_error_line_not_a_segfault(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _random(build(store) / "data_level0.bin")
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", "llama_index_sac.apps.cli", "query", "governing law",
                           "--vector-store", f"chroma:{store}"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: the chroma store {store} is damaged")
