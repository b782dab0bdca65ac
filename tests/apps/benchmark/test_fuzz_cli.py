"""Fuzzing the command line's argument handling with hypothesis (typer's CliRunner, in process).

``llama-sac eval`` gets random, malformed and valid option values, unknown options and stray arguments, always with an
embedding model that cannot load, so that a command line that passes every check stops at the model, right before the
expensive work, with the documented error. ``llama-sac report`` gets random file contents. Property: the exit status
is 0 or 2, and 2 comes with exactly one line starting with ``error:`` on stderr, no traceback, no typer box, and no
output folder left behind.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from llama_index_sac.apps.cli import app

runner = CliRunner()
NO_MODEL = "/nonexistent/embedding-model"

texts = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=12)
numbers = st.one_of(st.integers(1, 40).map(str), st.integers(-(10**12), 10**12).map(str), texts)
ks = st.one_of(st.lists(st.integers(1, 70), min_size=1, max_size=4).map(lambda v: ",".join(map(str, v))),
               st.text(st.sampled_from("0123456789,- x"), max_size=10), texts)


def one_of_or_text(*values: str) -> st.SearchStrategy[str]:
    return st.sampled_from(values) | texts


spec = st.builds(
    lambda preset, items: preset + (":" + ",".join(items) if items else ""),
    st.sampled_from(["baseline", "sac", "sac-llm", "sac-expert", "llamaindex", "nope", ""]),
    st.lists(st.builds(lambda k, v: f"{k}={v}", st.sampled_from(["chunk_size", "chunk_overlap", "parser", "name",
                                                                     "llm", "embed_metadata", "colour",
                                                                     "parser.chunk_size", "summarizer.max_chars",
                                                                     "parser.nope"]),
                       numbers), max_size=2),
)
OPTIONS = {
    "--k": ks,
    "--sample": numbers,
    "--seed": numbers,
    "--n-documents": numbers,
    "--chunk-size": numbers,
    "--chunk-overlap": numbers,
    "--confusion-k": numbers,
    "--max-chars": numbers,
    "--retrieval-threads": numbers,
    "--llm-concurrency": numbers,
    "--scope": one_of_or_text("referenced", "all"),
    "--parser": one_of_or_text("recursive", "semantic", "hybrid"),
    "--retrieval": one_of_or_text("dense", "hybrid"),
    "--summarizer": one_of_or_text("extractive", "llm"),
    "--prompt": one_of_or_text("generic", "expert"),
    "--llm": one_of_or_text("served-model", "m.gguf", "~nobody/m.gguf", "x" * 5000),
    "--llm-api-base": one_of_or_text("http://127.0.0.1:9/v1"),
    "-c": spec | texts,
    "-d": one_of_or_text("cuad", "maud", "cuad,maud", "nope"),
    "--benchmarks-dir": one_of_or_text("benchmarks", "~nobody", "x" * 5000),
    "--data-dir": one_of_or_text("{data}", "{data}/corpus", "/nonexistent", "~nobody/x", "x" * 5000),
}
FLAGS = ["--mini", "--no-mini", "--progress", "--no-progress", "-q"]

option = st.sampled_from(sorted(OPTIONS)).flatmap(lambda name: st.tuples(st.just(name), OPTIONS[name]))
extra = st.sampled_from(FLAGS).map(lambda f: (f,)) | texts.map(lambda t: ("--" + t,)) | texts.map(lambda t: (t,))


def _data_dir(base: Path) -> Path:
    """A small LegalBench-RAG folder (one document, one test per dataset)."""
    for dataset in ("cuad", "maud"):
        doc = base / "corpus" / dataset / "a.txt"
        doc.parent.mkdir(parents=True)
        doc.write_text("Governing law: Delaware. Term: two years.")
        (base / "benchmarks").mkdir(exist_ok=True)
        test = {"query": "law?", "snippets": [{"file_path": f"{dataset}/a.txt", "span": [0, 24],
                                               "answer": "Governing law: Delaware."}]}
        (base / "benchmarks" / f"{dataset}.json").write_text(json.dumps({"tests": [test]}))
    return base


def check(result, out: Path) -> str:
    """The property; returns the error line (or "" on success)."""
    assert result.exit_code in (0, 2), (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output and "\u256d" not in result.output, result.output
    if result.exit_code == 0:
        return ""
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert not out.exists()
    return errors[0]


@pytest.mark.slow  # many processes or a large input: minutes in the whole suite
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(option, max_size=5), st.lists(extra, max_size=2))
def test_eval_arguments_exit_0_or_one_error_line(options, extras):
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        data = _data_dir(base / "lbr")
        args = ["eval"]
        for name, value in options:
            args += [name, value.replace("{data}", str(data))]
        for item in extras:
            args += list(item)
        out = base / "out"
        args += ["--embed-model", NO_MODEL, "-o", str(out), "--cache-dir", str(base / "cache"), "--no-progress"]
        line = check(runner.invoke(app, args), out)
        # a command line that passed every check stops at the embedding model, before any work
        event("reached the model" if "embedding model" in line else "rejected" if line else "exit 0")


results_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3)
    | st.fixed_dictionaries({}, optional={"benchmark": inner, "configs": inner, "settings": inner, "timings": inner,
                                          "peak_memory_mb": inner, "command": inner}),
    max_leaves=8,
)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(st.one_of(results_like.map(json.dumps).map(str.encode), st.binary(max_size=60)), st.booleans())
def test_report_of_random_files_exits_0_or_one_error_line(content, markdown):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "results.json"
        path.write_bytes(content)
        line = check(runner.invoke(app, ["report", str(path), *(["--markdown"] if markdown else [])]),
                     Path(tmp) / "never-created")
        assert not line or line.startswith(f"error: cannot read results from {path}: ")
