"""The main job: the runner (fast, with the fake embedding), ``llama-sac eval`` end to end (real MiniLM) on the
built-in dataset and on a slice of the shared LegalBench-RAG, and clean errors for bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from llama_index_sac.cli import app
from llama_index_sac.datasets.synthetic import synthetic_contracts
from llama_index_sac.evaluation import report
from llama_index_sac.evaluation.runner import (
    EvaluationSetupError,
    RunConfig,
    RunSettings,
    parse_config,
    run_evaluation,
)
from tests.conftest import LEGALBENCH, FakeEmbedding, requires_legalbench

runner = CliRunner()

# -- configurations --------------------------------------------------------------------------------------------


def test_parse_config_presets_and_overrides():
    assert parse_config("baseline") == RunConfig(name="baseline")
    sac = parse_config("sac")
    assert sac.summarizer == "extractive" and sac.parser == "recursive" and sac.chunk_size == 500
    custom = parse_config("sac:parser=hybrid,chunk_size=300")
    assert custom.name == "sac[parser=hybrid,chunk_size=300]" and custom.parser == "hybrid" and custom.chunk_size == 300
    named = parse_config("llamaindex:name=li,embed_metadata=file_path+file_name")
    assert named.name == "li" and named.embed_metadata == ["file_path", "file_name"]
    # common options reach every configuration, summary options only the SAC ones
    base = parse_config("baseline", {"parser": "hybrid"}, {"summarizer": "llm", "llm": "m.gguf"})
    assert base.parser == "hybrid" and base.summarizer == "none"
    llm = parse_config("sac", {"parser": "hybrid"}, {"summarizer": "llm", "llm": "m.gguf", "prompt": "expert"})
    assert (llm.parser, llm.summarizer, llm.llm, llm.prompt) == ("hybrid", "llm", "m.gguf", "expert")


@pytest.mark.parametrize(
    ("spec", "pattern"),
    [
        ("nope", "unknown configuration 'nope'"),
        ("sac:colour=blue", "bad option 'colour=blue'"),
        ("sac:parser=fancy", "invalid configuration 'sac:parser=fancy': parser"),
        ("sac-llm", "summarizer=llm needs llm"),
        ("baseline:chunk_overlap=600", "chunk_overlap must be < chunk_size"),
    ],
)
def test_parse_config_errors(spec, pattern):
    with pytest.raises(EvaluationSetupError, match=pattern):
        parse_config(spec)


# -- the runner with the fake embedding (fast) ---------------------------------------------------------------------


def _settings(tmp_path, **kw):
    return RunSettings(ks=[1, 2, 4], cache_dir=tmp_path / "cache", show_progress=False, **kw)


def test_runner_results_and_embedding_cache(tmp_path):
    bench = synthetic_contracts(n_documents=4)
    embed = FakeEmbedding()
    configs = [parse_config("baseline"), parse_config("llamaindex")]
    results = run_evaluation(bench, configs, _settings(tmp_path), embed_model=embed)
    base, li = results["configs"]
    assert results["benchmark"]["n_queries"] == len(bench.queries) == 18
    assert results["benchmark"]["datasets"] == {"nda": 8, "services": 10}
    assert len(base["records"]) == 18 and set(base["aggregates"]["overall"]) == {"1", "2", "4"}
    # chunk offsets point into the documents; every record names gold and retrieved spans
    for record in base["records"]:
        assert len(record["retrieved"]) == 4
        for doc_id, start, end in record["retrieved"]:
            assert 0 <= start < end <= len(bench.documents[doc_id])
    # the "LlamaIndex default" embeds file_path with the chunk, the baseline the chunk alone
    embedded = set(embed.texts_embedded)
    assert any(t.startswith("file_path: corpus/nda/") for t in embedded)
    assert base["mean_embedded_chars"] < li["mean_embedded_chars"]
    assert base["chunks_embedded"] > 0
    assert results["versions"]["llama-index-core"] and results["peak_memory_mb"] > 0
    json.dumps(results)  # serialisable as is

    # a re-run that changes only k embeds nothing (chunks and queries come from the cache)
    calls = len(embed.calls)
    again = run_evaluation(bench, configs, RunSettings(ks=[1, 8], cache_dir=tmp_path / "cache",
                                                        show_progress=False), embed_model=embed)
    assert len(embed.calls) == calls
    assert all(c["chunks_embedded"] == 0 for c in again["configs"])
    assert again["configs"][0]["aggregates"]["overall"]["1"] == base["aggregates"]["overall"]["1"]

    text = report.format_tables(results)
    assert "DRM@k" in text and "overall" in text and "k=4" in text
    assert report.write_plots(results, tmp_path)[0].stat().st_size > 1000


def test_runner_hybrid_retrieval(tmp_path):
    bench = synthetic_contracts(n_documents=4)
    config = parse_config("baseline:retrieval=hybrid,name=hybrid")
    results = run_evaluation(bench, [config], _settings(tmp_path), embed_model=FakeEmbedding())
    records = results["configs"][0]["records"]
    assert all(len(r["retrieved"]) == 4 for r in records)
    # BM25 matches the parties' names: the preamble of the right contract comes first for most queries
    assert results["configs"][0]["aggregates"]["overall"]["1"]["drm"] < 0.5


def test_runner_rejects_duplicate_names(tmp_path):
    with pytest.raises(EvaluationSetupError, match="distinct names"):
        run_evaluation(synthetic_contracts(4), [RunConfig(name="a"), RunConfig(name="a")], _settings(tmp_path),
                       embed_model=FakeEmbedding())


def test_confused_pairs_counts_wrong_document_chunks():
    records = [
        {"query_id": "q1", "gold": [["a", 0, 5]], "retrieved": [["b", 0, 5], ["a", 0, 5], ["b", 5, 9]],
         "scores": {}},
        {"query_id": "q2", "gold": [["a", 0, 5]], "retrieved": [["c", 0, 5], ["b", 0, 5]], "scores": {}},
        {"query_id": "q3", "gold": [], "retrieved": [["z", 0, 5]], "scores": None},  # ineligible: ignored
    ]
    pairs = report.confused_pairs(records, k=2)
    assert pairs == [
        {"gold": "a", "retrieved": "b", "chunks": 2, "queries": 2},
        {"gold": "a", "retrieved": "c", "chunks": 1, "queries": 1},
    ]


# -- bad input: one clear message, exit code 2, no traceback -----------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--data-dir", "/nonexistent/lbr"], "data directory not found"),
        (["-c", "nope"], "unknown configuration"),
        (["--scope", "everything"], "--scope must be referenced or all"),
        (["--datasets", "cuad"], "need --data-dir"),
        (["--parser", "fancy"], "--parser must be one of"),
        (["--k", "0,2"], "positive integers"),
    ],
)
def test_bad_input_gives_one_clear_error(tmp_path, args, message):
    result = runner.invoke(app, ["eval", *args, "-o", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "c")])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


@requires_legalbench
def test_unknown_dataset_error(tmp_path):
    result = runner.invoke(app, ["eval", "--data-dir", str(LEGALBENCH), "--datasets", "nope", "-o", str(tmp_path)])
    assert result.exit_code == 2 and "unknown dataset(s) nope" in result.output
    assert "available are contractnli, cuad, maud, privacy_qa" in result.output


def test_embedding_model_that_cannot_load_offline_is_a_clean_error(tmp_path):
    assert os.environ.get("HF_HUB_OFFLINE") == "1"  # set by conftest: nothing may be downloaded
    result = runner.invoke(
        app,
        ["eval", "--embed-model", "no-such-org/no-such-model", "--n-documents", "2", "-c", "baseline",
         "-o", str(tmp_path / "o"), "--cache-dir", str(tmp_path / "c"), "--quiet"],
    )
    assert result.exit_code == 2, result.output
    assert "error: embedding model 'no-such-org/no-such-model' cannot be loaded" in result.output
    assert "Traceback" not in result.output


def test_entry_point_exits_cleanly_without_traceback(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "llama_index_sac.cli", "eval", "--data-dir", str(tmp_path / "missing")],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("error: data directory not found")
    assert "Traceback" not in proc.stderr + proc.stdout


# -- end to end with the real model -------------------------------------------------------------------------------


@pytest.mark.slow
def test_eval_end_to_end_on_builtin_dataset(tmp_path):
    out, cache = tmp_path / "out", tmp_path / "cache"
    args = ["eval", "--n-documents", "6", "-o", str(out), "--cache-dir", str(cache), "--no-progress"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    for name in ("results.json", "results.csv", "queries.csv", "confusions.csv", "drm_at_k.png",
                 "precision_at_k.png", "recall_at_k.png"):
        assert (out / name).stat().st_size > 0, name
    results = json.loads((out / "results.json").read_text())
    names = [c["config"]["name"] for c in results["configs"]]
    assert names == ["baseline", "sac"]
    assert results["settings"]["ks"] == [1, 2, 4, 8, 16, 32, 64]
    base, sac = results["configs"]
    assert sac["summaries"] and all(s.strip() for s in sac["summaries"].values())
    # the point of the dataset and of SAC: flat retrieval confuses the look-alike contracts, SAC much less
    drm_base = base["aggregates"]["overall"]["4"]["drm"]
    drm_sac = sac["aggregates"]["overall"]["4"]["drm"]
    assert drm_base > 0.3
    assert drm_sac < drm_base
    assert "DRM@k" in result.output and "most-confused document pairs" in result.output

    # changing only k and the report re-embeds nothing
    again = runner.invoke(app, ["eval", "--n-documents", "6", "-o", str(tmp_path / "o2"), "--cache-dir",
                                str(cache), "--no-progress", "--k", "1,3"])
    assert again.exit_code == 0, again.output
    results2 = json.loads((tmp_path / "o2" / "results.json").read_text())
    assert all(c["chunks_embedded"] == 0 for c in results2["configs"])
    assert results2["configs"][0]["aggregates"]["overall"]["1"] == base["aggregates"]["overall"]["1"]


@pytest.mark.slow
@requires_legalbench
def test_eval_end_to_end_on_legalbench_slice(tmp_path):
    out = tmp_path / "out"
    args = ["eval", "--data-dir", str(LEGALBENCH), "--datasets", "contractnli,privacy_qa", "--sample", "2",
            "--k", "1,4,16", "-o", str(out), "--cache-dir", str(tmp_path / "cache"), "--no-progress"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text())
    assert results["benchmark"]["datasets"] == {"contractnli": 2, "privacy_qa": 2}
    for config in results["configs"]:
        overall = config["aggregates"]["overall"]["16"]
        assert overall["n_datasets"] == 2 and overall["n_queries"] == 4
        assert 0 <= overall["precision"] <= 1 and 0 <= overall["recall"] <= 1 and 0 <= overall["drm"] <= 1
        for record in config["records"]:
            assert all(doc_id.split("/")[0] in ("contractnli", "privacy_qa") for doc_id, _, _ in record["retrieved"])


def test_report_command_rebuilds_tables_from_results_json(tmp_path):
    results = run_evaluation(synthetic_contracts(n_documents=2), [parse_config("baseline")], _settings(tmp_path),
                             embed_model=FakeEmbedding())
    results["command"] = "llama-sac eval --n-documents 2"
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    out = runner.invoke(app, ["report", str(path), "--markdown"])
    assert out.exit_code == 0, out.output
    assert "| baseline | drm |" in out.output and "k=4" in out.output and "llama-sac eval --n-documents 2" in out.output
    drm4 = results["configs"][0]["aggregates"]["overall"]["4"]["drm"]
    assert f"{drm4:.3f}" in out.output
    bad = runner.invoke(app, ["report", str(tmp_path / "missing.json")])
    assert bad.exit_code == 2 and "cannot read results" in bad.output


@pytest.mark.parametrize("parser", ["semantic", "hybrid"])
def test_runner_with_semantic_and_hybrid_parsers(tmp_path, parser):
    bench = synthetic_contracts(n_documents=2)
    config = parse_config(f"sac:parser={parser},name={parser}")
    results = run_evaluation(bench, [config], _settings(tmp_path), embed_model=FakeEmbedding())
    outcome = results["configs"][0]
    assert outcome["config"]["parser"] == parser and outcome["n_chunks"] >= 2
    assert len(outcome["summaries"]) == 2
    for record in outcome["records"]:
        for doc_id, start, end in record["retrieved"]:
            assert 0 <= start < end <= len(bench.documents[doc_id])
    if parser == "hybrid":
        assert outcome["mean_chunk_chars"] <= 500


def test_expert_prompts_are_routed_by_dataset(monkeypatch):
    from llama_index_sac.evaluation import runner
    from llama_index_sac.summarizers import (
        COMMERCIAL_CONTRACT_SUMMARY_PROMPT,
        MERGER_AGREEMENT_SUMMARY_PROMPT,
        NDA_SUMMARY_PROMPT,
        PRIVACY_POLICY_SUMMARY_PROMPT,
        LLMSummarizer,
    )
    from tests._summary_fakes import RecordingLLM

    def fake_build(config, module, **kwargs):
        return LLMSummarizer(llm=RecordingLLM(), **kwargs)

    monkeypatch.setattr(runner, "_build_llm_summarizer", fake_build)
    config = parse_config("sac-expert:llm=m.gguf,llm_input_chars=2000,name=sac-expert")
    assert config.summary_chars == 300
    said: list[str] = []
    out = runner._summarizers_for(config, ["contractnli", "privacy_qa", "maud", "cuad", "other"], said.append)
    prompts = {name: s.prompt for name, s in out.items()}
    assert prompts["contractnli"] is NDA_SUMMARY_PROMPT and prompts["privacy_qa"] is PRIVACY_POLICY_SUMMARY_PROMPT
    assert prompts["maud"] is MERGER_AGREEMENT_SUMMARY_PROMPT and prompts["cuad"] is COMMERCIAL_CONTRACT_SUMMARY_PROMPT
    assert {s.max_chars for s in out.values()} == {300}
    assert {s.input_window() for s in out.values()} == {2000}
    assert said == ["[sac-expert] no expert prompt for dataset 'other': its documents get the generic prompt"]
