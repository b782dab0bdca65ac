"""What ``llama-sac query`` does before its first answer: the document index ``ingest`` saved is read instead of every
chunk (and only for the collection's current state), and (slow, the real model) the query process imports neither
torch nor transformers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import llama_index_sac.apps.ingest.document_index as document_index
from llama_index_sac.apps.ingest.files import IngestRecord, StoreSpec
from llama_index_sac.apps.ingest.manage import remove
from llama_index_sac.apps.ingest.run import IngestSettings, ingest, query
from llama_index_sac.retrievers.document_index import DocumentIndex
from tests.apps.ingest.test_ingest_cli import write_contracts
from tests.conftest import REPO, FakeEmbedding, offline_installed

pytest.importorskip("llama_index.vector_stores.chroma", reason="the 'vectorstores' extra is not installed")


def _saved(store: str) -> list[str]:
    record = IngestRecord(StoreSpec.parse(store), "llama-sac")
    return sorted(p.name for p in record.directory.glob("documents.*.json"))


class Reads:
    """Counts the collections read whole for a document index (``DocumentIndex.from_source``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        original = DocumentIndex.from_source.__func__  # type: ignore[attr-defined]

        def counted(cls: type[DocumentIndex], source: Any, *args: Any, **kwargs: Any) -> DocumentIndex:
            self.calls += 1
            return original(cls, source, *args, **kwargs)  # type: ignore[no-any-return]

        monkeypatch.setattr(DocumentIndex, "from_source", classmethod(counted))


def _hits(store: str) -> list[tuple[str, int | None, float | None]]:
    found = query("Which law governs the agreement?", store, k=4, embed_model=FakeEmbedding(), document_aware=True)
    return [(h.doc_id, h.start, round(h.score or 0.0, 6)) for h in found]


def test_query_reads_the_saved_document_index_not_the_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    texts = write_contracts(tmp_path / "docs", 4)
    store = f"chroma:{tmp_path / 'store'}"
    reads = Reads(monkeypatch)
    ingest([tmp_path / "docs"], store, IngestSettings(show_progress=False), embed_model=FakeEmbedding())
    assert reads.calls == 1 and len(saved := _saved(store)) == 1  # made once, at the end of the ingest
    record = IngestRecord(StoreSpec.parse(store), "llama-sac")
    assert sorted(DocumentIndex.load(record.directory / saved[0]).doc_ids) == sorted(texts)
    with_saved = _hits(store)
    assert reads.calls == 1  # the query read no chunk for its document index
    (record.directory / saved[0]).unlink()
    assert _hits(store) == with_saved and reads.calls == 2  # without it: read from the chunks, the same ranking
    # an ingest that changes nothing makes the missing file again; one more reads nothing
    ingest([tmp_path / "docs"], store, IngestSettings(show_progress=False), embed_model=FakeEmbedding())
    ingest([tmp_path / "docs"], store, IngestSettings(show_progress=False), embed_model=FakeEmbedding())
    assert _saved(store) == saved and reads.calls == 3


def test_a_saved_index_of_another_state_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    texts = write_contracts(tmp_path / "docs", 3)
    store = f"chroma:{tmp_path / 'store'}"
    ingest([tmp_path / "docs"], store, IngestSettings(show_progress=False), embed_model=FakeEmbedding())
    before = _saved(store)
    gone = sorted(texts)[0]
    remove([gone], store)  # the record changes; the saved index still names the removed document
    reads = Reads(monkeypatch)
    assert gone not in {doc for doc, _, _ in _hits(store)} and reads.calls == 1
    ingest([tmp_path / "docs"], store, IngestSettings(show_progress=False), embed_model=FakeEmbedding())
    after = _saved(store)
    assert len(after) == 1 and after != before  # the new state's file; the old one removed
    record = IngestRecord(StoreSpec.parse(store), "llama-sac")
    assert after[0] == document_index.document_index_path(record).name


def test_the_state_changes_with_every_option_of_the_prior(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the saved index is found by the state, whose recipe is the dump of the prior's options: a new default of any of
    # them (prior_margin, require_name_match and name_pairs included) makes a saved index stale
    from llama_index.core.bridge.pydantic import create_model

    from llama_index_sac.retrievers.options import DocumentPriorOptions

    record = IngestRecord(StoreSpec.parse(f"chroma:{tmp_path / 'store'}"), "llama-sac")
    before = document_index.record_state(record)
    changed = {"name_weight": 0.25, "name_pairs": True, "prior_margin": 0.5, "require_name_match": True,
               "locator_only": False, "outside_prior": 0.5, "word_parts": False, "max_document_frequency": 0.05}
    assert changed.keys() == DocumentPriorOptions.model_fields.keys()
    for name, value in changed.items():
        other = create_model("Other", __base__=DocumentPriorOptions, **{name: (type(value), value)})  # type: ignore[call-overload]
        monkeypatch.setattr(document_index, "DocumentPriorOptions", other)
        assert document_index.record_state(record) != before, name
    monkeypatch.setattr(document_index, "DocumentPriorOptions", DocumentPriorOptions)
    assert document_index.record_state(record) == before


#: Modules the query path must not import (the ONNX backend needs none of them).
HEAVY = ("torch", "transformers", "sentence_transformers", "llama_index.embeddings.huggingface", "ray",
         "qdrant_client", "matplotlib", "onnx")


@offline_installed
@pytest.mark.slow
def test_the_query_command_imports_neither_torch_nor_transformers(tmp_path: Path) -> None:
    from llama_index_sac.apps.ingest.query import load_model

    write_contracts(tmp_path / "docs", 2)
    store = f"chroma:{tmp_path / 'store'}"
    model = load_model(None, show_progress=False)  # the default: ONNX Runtime (its graph made here if needed)
    assert type(model).__name__ == "OnnxEmbedding"
    ingest([tmp_path / "docs"], store, IngestSettings(show_progress=False), embed_model=model)
    code = ("import json, sys\n"
            "from llama_index_sac.apps.cli import app\n"  # main() would end the process after the answer
            "try:\n"
            f"    app(['query', 'Which law governs the agreement?', '--vector-store', {store!r}, '--k', '2',"
            " '--no-progress'])\n"
            "except SystemExit as exc:\n    assert not exc.code, exc.code\n"
            f"print(json.dumps([name for name in {HEAVY!r} if name in sys.modules]))\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("1. score ") and json.loads(lines[-1]) == []


@pytest.mark.slow
def test_the_query_process_ends_with_the_commands_status(tmp_path: Path) -> None:
    """``main()`` ends a ``query`` process as soon as its output is flushed: the status and the lines are kept."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "llama_index_sac.apps.cli", "query", "", "--vector-store", f"chroma:{tmp_path}"]
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", "error: the question is empty\n")
    proc = subprocess.run(command[:3] + ["query", "--help"], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0 and "--vector-store" in proc.stdout
