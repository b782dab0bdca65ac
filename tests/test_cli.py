"""The main job: the runner (fast, with the fake embedding), ``llama-sac eval`` end to end (real MiniLM) on the
built-in dataset and on a slice of the shared LegalBench-RAG, and clean errors for bad input."""

from __future__ import annotations

import json
import os
import re
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


def one_error(result) -> str:
    """The single ``error:`` line of a failed invocation (exit 2, nothing else starts with ``error:``, no traceback,
    no typer box)."""
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert "Traceback" not in result.output and "\u256d" not in result.output  # no box drawing
    return errors[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--data-dir", "/nonexistent/lbr"], "data directory not found"),
        (["--data-dir", "x" * 5000], "data directory not found"),  # a name too long for the OS
        (["-c", "nope"], "unknown configuration"),
        (["--scope", "everything"], "--scope must be referenced or all"),
        (["--datasets", "cuad"], "need --data-dir"),
        (["--parser", "fancy"], "--parser must be one of"),
        (["--k", "0,2"], "error: --k: expected comma-separated positive integers"),
        (["--k", "0"], "positive integers (at most 7 digits) such as 1,4,16, got '0'"),
        (["--k", "1,,4"], "got '1,,4'"),
        (["--k", ""], "got ''"),
        (["--k", "1,x"], "got '1,x'"),
        (["--k", "\u0663"], "positive integers"),  # an Arabic-Indic digit: int() would take it
        (["--k", "1" * 5000], "at most 7 digits"),
        (["--nope"], "error: no such option: --nope"),
        (["--sample", "0"], "error: invalid value for '--sample'"),
        (["--seed", "x"], "error: invalid value for '--seed'"),
        (["--n-documents", "1"], "error: invalid value for '--n-documents'"),
        (["-c", "baseline;"], "error: --config: empty item in 'baseline;'"),
        (["-d", "cuad,,maud"], "error: --datasets: empty item"),
    ],
)
def test_bad_input_gives_one_clear_error(tmp_path, args, message):
    result = runner.invoke(app, ["eval", *args, "-o", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "c")])
    assert message in one_error(result)
    assert not (tmp_path / "out").exists()


def test_usage_errors_of_the_group_and_of_report():
    assert one_error(runner.invoke(app, ["nosuch"])).startswith("error: no such command 'nosuch'")
    assert "missing argument" in one_error(runner.invoke(app, ["report"]))
    assert one_error(runner.invoke(app, ["eval", "--k"])).startswith("error: option '--k' requires an argument")
    assert "(see '" in one_error(runner.invoke(app, ["eval", "--nope"]))  # where to look, on the same line
    bare = runner.invoke(app, [])  # no arguments: the help, not an error
    assert bare.exit_code == 0 and "Usage:" in bare.stdout and "eval" in bare.stdout


@pytest.mark.parametrize(
    "content",
    ["[1, 2]", '{"benchmark": 3}', '{"configs": [], "benchmark": {"datasets": 5}}', "not json", "[" * 50_000],
)
def test_report_of_a_malformed_results_file_is_one_error(tmp_path, content):
    path = tmp_path / "results.json"
    path.write_text(content)
    for args in (["report", str(path)], ["report", str(path), "--markdown"]):
        line = one_error(runner.invoke(app, args))
        assert line.startswith(f"error: cannot read results from {path}: not a results.json of llama-sac eval (")


def _legalbench_dir(root, tests=None, archive=False):
    from tests.test_legalbenchrag import make_data

    return make_data(root, archive=archive, tests=tests)


def test_empty_tests_list_leaves_no_output(tmp_path):
    root = _legalbench_dir(tmp_path / "d", tests={"cuad": []})
    out = tmp_path / "runs" / "new" / "out"
    result = runner.invoke(app, ["eval", "--data-dir", str(root), "-o", str(out), "-q"])
    assert one_error(result) == f'error: {root / "benchmarks" / "cuad.json"}: field "tests": empty list (a benchmark ' \
        "file needs at least one test)"
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda data: data[: len(data) // 2], "corpus archive truncated"),
        (lambda data: bytes(range(256)) * 8, "corpus archive not a readable tar archive"),
    ],
)
def test_damaged_corpus_archive_from_the_entry_point(tmp_path, damage, why):
    root = _legalbench_dir(tmp_path / "d", archive=True)
    archive = root / "corpus.tar.xz"
    archive.write_bytes(damage(archive.read_bytes()))
    proc = subprocess.run(
        [sys.executable, "-m", "llama_index_sac.cli", "eval", "--data-dir", str(root), "-o", str(tmp_path / "o")],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {archive}: {why}")
    assert "Traceback" not in proc.stderr + proc.stdout and "Aborted" not in proc.stderr
    assert not (tmp_path / "o").exists()


def test_output_dir_is_staged_then_moved(tmp_path):
    from llama_index_sac.evaluation.output import staged_output_dir

    out = tmp_path / "a" / "b" / "out"
    with staged_output_dir(out) as staging:
        assert staging.parent == out.parent and not out.exists()
        (staging / "results.json").write_text("{}")
    assert sorted(p.name for p in out.parent.iterdir()) == ["out"]
    assert (out / "results.json").read_text() == "{}"
    # an existing folder: unchanged by a failure (KeyboardInterrupt included), same-named files replaced on success
    (out / "notes.txt").write_text("mine")
    for error in (RuntimeError("boom"), KeyboardInterrupt()):
        with pytest.raises(type(error)), staged_output_dir(out) as staging:
            (staging / "results.json").write_text("half")
            raise error
        assert sorted(p.name for p in out.parent.iterdir()) == ["out"]
        assert (out / "results.json").read_text() == "{}"
    with staged_output_dir(out) as staging:
        (staging / "results.json").write_text('{"new": 1}')
    assert (out / "results.json").read_text() == '{"new": 1}' and (out / "notes.txt").read_text() == "mine"
    # a failure with a new folder: neither it nor the parents created for it remain
    with pytest.raises(KeyboardInterrupt), staged_output_dir(tmp_path / "x" / "y" / "out") as staging:
        (staging / "partial.csv").write_text("1")
        raise KeyboardInterrupt
    assert not (tmp_path / "x").exists()
    (tmp_path / "file").write_text("")
    with pytest.raises(EvaluationSetupError, match="exists and is not a folder"), staged_output_dir(tmp_path / "file"):
        pass
    with pytest.raises(EvaluationSetupError, match="cannot create output folder"), \
            staged_output_dir(tmp_path / "file" / "sub"):
        pass


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
    assert one_error(result).startswith("error: embedding model 'no-such-org/no-such-model' cannot be loaded")
    assert not (tmp_path / "o").exists()
    # an existing output folder is left as it was
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "results.json").write_text("earlier run")
    again = runner.invoke(app, ["eval", "--embed-model", "no-such-org/no-such-model", "--n-documents", "2", "-c",
                                "baseline", "-o", str(tmp_path / "o"), "--cache-dir", str(tmp_path / "c"), "-q"])
    assert "cannot be loaded" in one_error(again)
    assert [p.name for p in (tmp_path / "o").iterdir()] == ["results.json"]
    assert (tmp_path / "o" / "results.json").read_text() == "earlier run"
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging folder left beside it


@pytest.mark.slow
@pytest.mark.parametrize("server", ["failing", "down"])
def test_llm_server_failing_or_down_is_one_error_naming_endpoint_and_document(tmp_path, server):
    from tests._openai_standin import OpenAIStandIn, status

    standin = OpenAIStandIn(default=status(400))  # a non-transient HTTP error: no retries
    if server == "down":
        standin.close()  # the port now refuses connections (transient: retried, then given up)
    try:
        result = runner.invoke(
            app,
            ["eval", "--n-documents", "2", "-c", "sac-llm", "--llm", "served-model", "--llm-api-base", standin.base,
             "-o", str(tmp_path / "o"), "--cache-dir", str(tmp_path / "c"), "-q", "--no-progress"],
        )
    finally:
        standin.close()
    line = one_error(result)
    assert line.startswith("error: LLM summarizer of configuration 'sac-llm' failed")
    assert standin.base in line
    assert re.search(r"document '(nda|services)/[^']+\.txt'", line), line
    assert not (tmp_path / "o").exists()
    if server == "failing":
        assert len(standin.received) >= 1


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
