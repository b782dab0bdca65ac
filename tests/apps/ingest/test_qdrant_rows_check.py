"""A Qdrant local store holding a row that is not a plain point (a pickle naming ``os.system``): refused with one
``error:`` line before qdrant-client unpickles anything, so the row's code never runs. REAL Qdrant local mode."""

from __future__ import annotations

import os
import pickle
import sqlite3
from pathlib import Path

import pytest

from llama_index_sac.apps.ingest.files import IngestError
from llama_index_sac.apps.ingest.run import ingest
from tests.apps.ingest.test_ingest_cli import COLLECTION
from tests.apps.ingest.test_ingest_store_checks import cli, ingested, one_error, settings
from tests.conftest import FakeEmbedding

pytest.importorskip("qdrant_client")
pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")


class _Payload:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (f"touch {self.marker}",))


def poison(store: Path, blob: bytes) -> None:
    with sqlite3.connect(store / "collection" / COLLECTION / "storage.sqlite") as conn:
        conn.execute("INSERT INTO points (id, point) VALUES (?, ?)", ("evil", blob))


def test_a_pickled_command_is_refused_before_it_runs(tmp_path: Path) -> None:
    _, spec = ingested("qdrant", tmp_path, 2)
    marker = tmp_path / "ran"
    poison(tmp_path / "store", pickle.dumps(_Payload(marker)))
    line = one_error(cli("query", "governing law", "--vector-store", spec))
    assert line.startswith(f"error: the qdrant store {tmp_path / 'store'} holds a row that would run other code "
                           f"when loaded (posix.system is not part of a plain point) in collection '{COLLECTION}'")
    assert "trusted like a database file" in line
    with pytest.raises(IngestError, match="would run other code"):
        ingest([tmp_path / "docs"], spec, settings(), embed_model=FakeEmbedding())
    assert not marker.exists()


@pytest.mark.parametrize("blob", [b"not a pickle", pickle.dumps({"a": 1}), b"\x80\x04\x95"])
def test_rows_that_are_not_points_are_refused(tmp_path: Path, blob: bytes) -> None:
    _, spec = ingested("qdrant", tmp_path, 2)
    poison(tmp_path / "store", blob)
    line = one_error(cli("query", "governing law", "--vector-store", spec))
    assert "holds a row that is not a plain point" in line


def test_an_untouched_store_opens(tmp_path: Path) -> None:
    texts, spec = ingested("qdrant", tmp_path, 3)
    report = ingest([tmp_path / "docs"], spec, settings(), embed_model=FakeEmbedding())
    assert report.unchanged == len(texts)
