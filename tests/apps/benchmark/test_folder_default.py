"""``llama-sac eval --folder``: the ``default`` configuration scores the summaries ``llama-sac ingest`` writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llama_index_sac import ExtractiveSummarizer
from llama_index_sac.apps.benchmark.config import LoaderOptions, parse_config
from llama_index_sac.apps.benchmark.eval_job import for_own_documents
from llama_index_sac.apps.ingest.steps import IngestSettings
from llama_index_sac.settings import build_summarizer

ACME = ("MUTUAL NON-DISCLOSURE AGREEMENT between Acme Corp and Beta LLC.\n\n7. This Agreement is governed by the laws"
        " of Delaware. The Receiving Party shall hold the Confidential Information in confidence.\n")
ZETA = ("SERVICES AGREEMENT between Zeta Inc and Omega Ltd.\n\n9. Governed by the laws of New York. Fees: net 30. "
        "Zeta shall invoice Omega monthly for the Services.\n")


def test_own_folder_configurations_take_the_shipped_table_unless_they_name_one() -> None:
    configs = [parse_config("default"), parse_config("sac"), parse_config("baseline"),
               parse_config("default:summarizer.terms=corpus,name=fitted")]
    folder = LoaderOptions(source="folder", data_dir="c", questions="q.jsonl")
    ran = for_own_documents(configs, folder)
    assert [getattr(c.summarizer, "terms", None) for c in ran] == ["shipped", "shipped", None, "corpus"]
    assert [c.name for c in ran] == ["default", "sac", "baseline", "fitted"]
    synthetic = LoaderOptions(source="synthetic")  # the published runs: the table fitted on the run's documents
    assert [getattr(c.summarizer, "terms", None) for c in for_own_documents(configs, synthetic)] == [
        "corpus", "corpus", None, "corpus"]


def test_eval_folder_default_summaries_are_those_ingest_writes(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from llama_index_sac.apps.benchmark import factories, report
    from llama_index_sac.apps.benchmark.results import load_results
    from llama_index_sac.apps.cli import app
    from tests.conftest import FakeEmbedding

    monkeypatch.setattr(factories, "load_embedding_model", lambda *args, **kwargs: FakeEmbedding())
    monkeypatch.setattr(report, "write_plots", lambda *args, **kwargs: None)
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "acme.txt").write_text(ACME, encoding="utf-8")
    (folder / "zeta.txt").write_text(ZETA, encoding="utf-8")
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"question": "Which law governs the Acme NDA?", "file": "acme.txt",
                                     "quote": "the laws of Delaware"}) + "\n", encoding="utf-8")
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["eval", "--folder", str(folder), "--questions", str(questions), "-c", "default",
                                      "-c", "default:summarizer.terms=corpus,name=fitted", "-o", str(out),
                                      "--no-progress", "-q"])
    assert result.exit_code == 0, result.output
    default, fitted = load_results(out).configs
    ingest_summarizer = build_summarizer(IngestSettings().summarizer)
    assert isinstance(ingest_summarizer, ExtractiveSummarizer)
    assert default.summary_info is not None and fitted.summary_info is not None
    (identity,) = default.summary_info.summarizer_identity.values()
    assert identity == ingest_summarizer.identity()  # the same summarizer, table included
    (other,) = fitted.summary_info.summarizer_identity.values()
    assert other != identity
