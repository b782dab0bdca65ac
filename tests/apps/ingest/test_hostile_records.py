"""Tampered persisted files of a store (the ingest record and Qdrant's ``meta.json``): each is one ``IngestError``
(CLI: one ``error:`` line, exit 2) naming the file and the problem, from ``ingest`` and ``query``, never a
traceback, a hang or a silent wrong result. REAL Chroma and Qdrant in temporary directories."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from llama_index_sac.apps.ingest.files import RECORD_DIR, IngestError
from llama_index_sac.apps.ingest.run import ingest
from tests.apps.ingest.test_ingest_cli import COLLECTION
from tests.apps.ingest.test_ingest_store_checks import cli, ingested, one_error, settings, snapshot
from tests.conftest import FakeEmbedding

pytest.importorskip("chromadb")
pytest.importorskip("qdrant_client")
pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")

DEEP = "[" * 200_000 + "]" * 200_000

# (file, content, what the error says)
TAMPERED = [
    ("settings.json", DEEP, "is nested deeper than 64 levels"),
    ("settings.json", '{"format": 1}', "has no settings object (settings: null)"),
    ("settings.json", '{"format": 1, "settings": "x"}', 'has no settings object (settings: "x")'),
    ("settings.json", "[]", "holds a JSON array, not a JSON object"),
    ("settings.json", '{"format": 2, "settings": {}}', "has an unknown format (2)"),
    ("rows.json", DEEP, "is nested deeper than 64 levels"),
    ("rows.json", "[]", "holds a JSON array, not a JSON object"),
    ("rows.json", '{"a": -1}', "has an unknown format (a row count is not a whole number)"),
    ("docstore.json", DEEP, "is nested deeper than 64 levels"),
    ("docstore.json", '{"docstore/metadata": 5}', 'is not a LlamaIndex docstore ("docstore/metadata" is not an'),
    ("docstore.json", "[]", "holds a JSON array, not a JSON object"),
    ("docstore.json", '{"docstore/metadata": {"a": {"doc_hash": 3}}}',
     "is not a LlamaIndex docstore (a doc_hash is not a string)"),
    ("pending.json", DEEP, "is nested deeper than 64 levels"),
    ("pending.json", "{}", "holds a JSON object, not a JSON array"),
    ("pending.json", "[1]", "has an unknown format (a document id is not a string)"),
]


def tamper(store: Path, name: str, content: str | None) -> Path:
    path = store / RECORD_DIR / COLLECTION / name
    path.unlink(missing_ok=True)
    if content is None:
        os.mkfifo(path)
    else:
        path.write_text(content, encoding="utf-8")
    return path


@pytest.mark.parametrize("kind", ["chroma", "qdrant"])
@pytest.mark.parametrize(("name", "content", "problem"), TAMPERED, ids=[f"{n}-{i}" for i, (n, _, _) in
                                                                        enumerate(TAMPERED)])
def test_a_tampered_record_file_is_one_error_from_ingest(kind: str, name: str, content: str, problem: str,
                                                         tmp_path: Path) -> None:
    _, spec = ingested(kind, tmp_path, 2)
    path = tamper(tmp_path / "store", name, content)
    before = snapshot(tmp_path / "store")
    with pytest.raises(IngestError) as caught:
        ingest([tmp_path / "docs"], spec, settings(), embed_model=FakeEmbedding())
    assert str(caught.value).startswith(f"the ingest record {path} {problem}")
    assert "\n" not in str(caught.value) and "delete the store's directory" in str(caught.value)
    assert snapshot(tmp_path / "store") == before


@pytest.mark.parametrize("kind", ["chroma", "qdrant"])
def test_a_fifo_in_place_of_a_record_file_is_refused_at_once(kind: str, tmp_path: Path) -> None:
    _, spec = ingested(kind, tmp_path, 2)
    path = tamper(tmp_path / "store", "settings.json", None)
    line = one_error(cli("query", "governing law", "--vector-store", spec))
    assert line.startswith(f"error: the ingest record {path} is not a regular file")
    with pytest.raises(IngestError, match="is not a regular file"):
        ingest([tmp_path / "docs"], spec, settings(), embed_model=FakeEmbedding())


@pytest.mark.parametrize("content", [DEEP, '{"format": 1}', '{"format": 1, "settings": "x"}', "[]"],
                         ids=["deep", "no-settings", "settings-x", "array"])
def test_query_of_a_tampered_settings_file_is_one_error_line(content: str, tmp_path: Path) -> None:
    _, spec = ingested("chroma", tmp_path, 2)
    path = tamper(tmp_path / "store", "settings.json", content)
    line = one_error(cli("query", "governing law", "--vector-store", spec))
    assert line.startswith(f"error: the ingest record {path} ")


@pytest.mark.parametrize("content", [DEEP, '{"collections": 5}', '{"collections": {"a": 1}}', "[]"],
                         ids=["deep", "collections-5", "collection-1", "array"])
def test_a_tampered_qdrant_meta_json_is_one_error_from_ingest_and_query(content: str, tmp_path: Path) -> None:
    _, spec = ingested("qdrant", tmp_path, 2)
    (tmp_path / "store" / "meta.json").write_text(content)
    line = one_error(cli("query", "governing law", "--vector-store", spec))
    assert line.startswith(f"error: the qdrant store {tmp_path / 'store'} is damaged: its meta.json ")
    assert "in use by another process" not in line
    with pytest.raises(IngestError, match=r"is damaged: its meta.json (is nested deeper|holds a JSON|lists no)"):
        ingest([tmp_path / "docs"], spec, settings(), embed_model=FakeEmbedding())
