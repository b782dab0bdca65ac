"""The main job, ``llama-sac eval`` (``llama_index_sac.apps.benchmark.eval_job``): the run end to end (real
MiniLM) on the built-in dataset and on a slice of the shared LegalBench-RAG, its output written only when it succeeds,
and clean errors for bad data, models and servers (the options themselves: ``test_commands.py``; the configurations:
``test_config.py``; the runner: ``test_runner.py``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from llama_index_sac.apps.benchmark.results import load_results
from llama_index_sac.apps.cli import app
from tests.apps.benchmark.test_commands import one_error
from tests.conftest import LEGALBENCH, requires_legalbench

runner = CliRunner()


# -- bad input: one clear message, exit code 2, no traceback -----------------------------------------------------------


def _legalbench_dir(root, tests=None, archive=False):
    from tests.apps.benchmark.test_legalbenchrag import make_data

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
@pytest.mark.slow
def test_damaged_corpus_archive_from_the_entry_point(tmp_path, damage, why):
    root = _legalbench_dir(tmp_path / "d", archive=True)
    archive = root / "corpus.tar.xz"
    archive.write_bytes(damage(archive.read_bytes()))
    proc = subprocess.run(
        [sys.executable, "-m", "llama_index_sac.apps.cli", "eval", "--data-dir", str(root), "-o", str(tmp_path / "o")],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {archive}: {why}")
    assert "Traceback" not in proc.stderr + proc.stdout and "Aborted" not in proc.stderr
    assert not (tmp_path / "o").exists()



@requires_legalbench
def test_unknown_dataset_error(tmp_path):
    result = runner.invoke(app, ["eval", "--data-dir", str(LEGALBENCH), "--datasets", "nope", "-o", str(tmp_path)])
    assert result.exit_code == 2 and "unknown dataset(s) nope" in result.output
    assert "available are contractnli, cuad, maud, privacy_qa" in result.output


@pytest.mark.slow
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


# -- end to end with the real model -------------------------------------------------------------------------------


@pytest.mark.slow
def test_eval_end_to_end_on_builtin_dataset(tmp_path):
    out, cache = tmp_path / "out", tmp_path / "cache"
    args = ["eval", "--n-documents", "6", "-o", str(out), "--cache-dir", str(cache), "--no-progress"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "warning: term statistics from only 6 document" in result.stderr  # SAC's corpus-fitted table, one line
    for name in ("results.json", "results.csv", "queries.csv", "confusions.csv", "drm_at_k.png",
                 "precision_at_k.png", "recall_at_k.png"):
        assert (out / name).stat().st_size > 0, name
    results = load_results(out)
    assert [c.name for c in results.configs] == ["baseline", "llamaindex", "default"]
    assert results.settings.ks == [1, 2, 4, 8, 16, 32, 64]
    info = results.benchmark
    assert (info.source, info.n_documents, info.seed) == ("synthetic", 6, 0)
    assert results.command is not None and results.command.startswith("llama-sac ")
    base, _, sac = results.configs
    assert sac.summaries and all(s.strip() for s in sac.summaries.values())
    # the point of the dataset and of SAC: flat retrieval confuses the look-alike contracts, SAC much less
    drm_base, drm_sac = base.aggregates.overall["4"].drm, sac.aggregates.overall["4"].drm
    assert drm_base is not None and drm_sac is not None
    assert drm_base > 0.3
    assert drm_sac < drm_base
    assert "DRM@k" in result.output and "most-confused document pairs" in result.output

    # changing only k and the report re-embeds nothing
    again = runner.invoke(app, ["eval", "--n-documents", "6", "-o", str(tmp_path / "o2"), "--cache-dir",
                                str(cache), "--no-progress", "--k", "1,3"])
    assert again.exit_code == 0, again.output
    results2 = load_results(tmp_path / "o2" / "results.json")
    assert all(c.chunks_embedded == 0 for c in results2.configs)
    assert results2.configs[0].aggregates.overall["1"] == base.aggregates.overall["1"]


@pytest.mark.slow
@requires_legalbench
def test_eval_end_to_end_on_legalbench_slice(tmp_path):
    out = tmp_path / "out"
    args = ["eval", "--data-dir", str(LEGALBENCH), "--datasets", "contractnli,privacy_qa", "--sample", "2",
            "--k", "1,4,16", "-o", str(out), "--cache-dir", str(tmp_path / "cache"), "--no-progress"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "warning: term statistics from only 3 document" in result.stderr  # 3 documents referenced
    results = load_results(out)
    info = results.benchmark
    assert info.datasets == {"contractnli": 2, "privacy_qa": 2}
    # the loader options are fields: enough to load the same benchmark again
    assert (info.source, info.sampling, info.sample, info.seed, info.scope) == ("legalbenchrag", "random", 2, 0,
                                                                               "referenced")
    assert info.data_dir == str(LEGALBENCH) and info.benchmarks_dir in ("benchmarks", "benchmarks_mini")
    assert info.loader_options().datasets == ["contractnli", "privacy_qa"]
    for config in results.configs:
        overall = config.aggregates.overall["16"]
        assert overall.n_datasets == 2 and overall.n_queries == 4
        for value in (overall.precision, overall.recall, overall.drm):
            assert value is not None and 0 <= value <= 1
        for record in config.records or []:
            assert all(doc_id.split("/")[0] in ("contractnli", "privacy_qa") for doc_id, _, _ in record.retrieved)
