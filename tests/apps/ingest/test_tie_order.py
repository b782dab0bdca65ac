"""Equal scores are ordered the same way in every store: document id, then offset. ``llama-sac eval`` (its
``NumpyVectorStore``) and ``llama-sac query`` over Chroma or Qdrant put the same chunk first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from llama_index_sac.apps.ingest.query import Searcher
from llama_index_sac.apps.ingest.run import IngestSettings, ingest
from tests.conftest import FakeEmbedding

pytest.importorskip("chromadb", reason="the 'vectorstores' extra is not installed (scripts/setup.sh installs it)")
pytest.importorskip("qdrant_client", reason="the 'vectorstores' extra is not installed (scripts/setup.sh installs it)")
pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")

# Two copies of one form (a template signed twice): with content-only summaries every chunk of one has the same
# EMBED string, and so the same vector, as its twin in the other; the heading also comes twice in each.
FORM = ("MUTUAL NON-DISCLOSURE AGREEMENT\n\nThe Receiving Party shall hold the Confidential Information in strict "
        "confidence and use it only to evaluate the proposed transaction between the parties. " * 3
        + "\n\nMUTUAL NON-DISCLOSURE AGREEMENT\n\nThis Agreement is governed by the laws of the State of Delaware. "
        "Either party may terminate it on thirty days written notice to the other party.")
QUESTION = "MUTUAL NON-DISCLOSURE AGREEMENT"


def _eval_top(folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, int]]:
    from llama_index_sac.apps.benchmark import factories
    from llama_index_sac.apps.benchmark.results import load_results
    from llama_index_sac.apps.cli import app

    monkeypatch.setattr(factories, "load_embedding_model", lambda *args, **kwargs: FakeEmbedding())
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"question": QUESTION, "file": "b.txt", "quote": "governed by the laws of the "
                                     "State of Delaware"}) + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["eval", "--folder", str(folder), "--questions", str(questions), "-c", "sac",
                                      "--k", "1,4", "-o", str(tmp_path / "run"), "--no-progress", "-q"])
    assert result.exit_code == 0, result.output
    record = load_results(tmp_path / "run").configs[0].records[0]  # type: ignore[index]
    return [(doc, start, end) for doc, start, end in record.retrieved[:4]]


@pytest.mark.parametrize("kind", ["chroma", "qdrant"])
def test_eval_and_query_agree_on_tied_chunks(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "b.txt").write_text(FORM, encoding="utf-8")
    spec = f"{kind}:{tmp_path / 'store'}"
    settings = IngestSettings.model_validate({"show_progress": False, "summarizer": {"kind": "extractive",
                                                                                     "metadata_keys": []}})
    assert ingest([folder], spec, settings, embed_model=FakeEmbedding()).new == 1
    (folder / "a.txt").write_text(FORM, encoding="utf-8")  # added later: its rows come after b.txt's in the store
    assert ingest([folder], spec, settings, embed_model=FakeEmbedding()).new == 1
    evaluated = _eval_top(folder, tmp_path, monkeypatch)
    with Searcher(spec, embed_model=FakeEmbedding(), document_aware=False, show_progress=False) as searcher:
        hits = searcher.search(QUESTION, 4)
    queried = [(Path(h.doc_id).name, h.start, h.end) for h in hits]
    # the two copies' chunks tie pairwise (same EMBED string): a.txt before b.txt, in eval and in query alike
    assert evaluated == queried == [("a.txt", 0, 409), ("b.txt", 0, 409), ("a.txt", 409, 743), ("b.txt", 409, 743)]
    assert hits[0].score == hits[1].score and hits[2].score == hits[3].score
