"""Rough edges of the command line and its library calls: how warnings and log records print, the settings
differences of ``ingest``, ``LLMSummarizer.from_openai`` without a key, the advice of an open LLM circuit (the help's
usage line and flags: ``test_help.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from llama_index_sac.apps._output import for_cli
from llama_index_sac.apps.ingest.steps import differences
from llama_index_sac.summarizers import LLMSummarizer
from tests.conftest import REPO

ENV = {**os.environ, "PYTHONPATH": str(REPO)}


@pytest.mark.slow
def test_warnings_and_log_records_print_as_one_clean_line() -> None:
    script = ("import logging, warnings\n"
              "from llama_index_sac.apps._output import cli_output\n"
              "cli_output(); cli_output()\n"  # twice: still one handler
              "warnings.warn('term statistics from only 7\\ndocument(s)', UserWarning)\n"
              "logging.getLogger('ray.data').error('worker  died')\n"
              "logging.getLogger('llm').warning('retry 1/3')\n"
              "logging.getLogger('llm').warning('retry 1/3')\n"  # two concurrent requests: said once
              "logging.getLogger('chromadb').info('not shown')\n"
              "try:\n    1 / 0\nexcept ZeroDivisionError:\n    logging.getLogger('x').exception('failed')\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=ENV, timeout=120)
    assert result.returncode == 0 and result.stdout == ""
    assert result.stderr.splitlines() == ["warning: term statistics from only 7 document(s)",
                                          "warning: worker died",
                                          "warning: retry 1/3",
                                          "warning: failed (ZeroDivisionError: division by zero)"]


def test_settings_differences_are_readable() -> None:
    prompt = "Summarize the following legal document in at most 150 characters, naming the parties and the type."
    old = {"parser": {"chunk_size": 500}, "summarizer": {"settings": {"prompt": prompt, "max_chars": 150}}}
    new = {"parser": {"chunk_size": 300}, "summarizer": {"settings": {"prompt": prompt.replace("type", "kind"),
                                                                      "max_chars": 150}}, "extra": {"on": True}}
    assert differences(old, new) == [
        "extra.on: (not set) -> true",
        "parser.chunk_size: 500 -> 300",
        'summarizer.settings.prompt: ...in at most 150 characters, naming the parties and the type." (100 '
        'characters) -> ...in at most 150 characters, naming the parties and the kind." (100 characters)',
    ]
    assert differences(old, old) == []


def test_from_openai_needs_a_key_at_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match=r"from_openai\('gpt-4o-mini'\) needs an OpenAI API key: set OPENAI_API_KEY"):
        LLMSummarizer.from_openai()
    assert LLMSummarizer.from_openai(api_key="sk-test").llm.api_key == "sk-test"  # type: ignore[attr-defined]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    assert LLMSummarizer.from_openai().llm.api_key == "sk-env"  # type: ignore[attr-defined]


def test_from_openai_with_an_endpoint_summarizes(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests._openai_standin import OpenAIStandIn, answer

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with OpenAIStandIn(responder=lambda prompt, index: answer("An NDA between A and B.")) as server:
        summarizer = LLMSummarizer.from_openai(api_base=server.base, api_key="local")
        assert summarizer.summarize("This Non-Disclosure Agreement is between A and B.").summary == (
            "An NDA between A and B.")


def test_open_circuit_advice_is_for_python_callers_only() -> None:
    message = ("LLM endpoint http://127.0.0.1:9/v1 is unavailable: 5 consecutive attempts failed to connect (last: "
               "APIConnectionError: Connection error.); this summarizer sends no further requests until "
               "reset_circuit() is called")
    assert for_cli(message) == ("LLM endpoint http://127.0.0.1:9/v1 is unavailable: 5 consecutive attempts failed to "
                                "connect (last: APIConnectionError: Connection error.) (is the server running and "
                                "reachable?)")


def test_gguf_without_llama_cpp_names_the_pip_command(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setitem(sys.modules, "llama_index.llms.llama_cpp", None)  # as if not installed
    with pytest.raises(ImportError) as caught:
        LLMSummarizer.from_gguf(model)
    assert "pip install 'llama-index-sac[llamacpp]'" in str(caught.value) and "setup-llm" not in str(caught.value)


def _first_cell() -> str:
    import json

    notebook = json.loads((REPO / "notebooks" / "legalbench_rag_sac.ipynb").read_text(encoding="utf-8"))
    code = next("".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code")
    return "\n".join(line for line in code.splitlines() if not line.startswith("%"))  # no IPython magics


def test_the_notebook_out_of_its_checkout_says_what_it_needs(tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)  # a copy of the notebook, opened elsewhere: no published runs, the live part only
    monkeypatch.delenv("SAC_RESULTS_DIR", raising=False)
    alone: dict[str, Any] = {}
    exec(_first_cell(), alone)  # noqa: S102 - the notebook's own first cell
    assert alone["RUNS"] == {} and "no published runs here" in capsys.readouterr().out
    monkeypatch.setenv("SAC_RESULTS_DIR", str(tmp_path))  # set, but pointing at no runs: one clear error
    with pytest.raises(FileNotFoundError, match="holds no \\*/results.json"):
        exec(_first_cell(), {})  # noqa: S102
    monkeypatch.setenv("SAC_RESULTS_DIR", str(REPO / "docs" / "results"))
    scope: dict[str, Any] = {}
    exec(_first_cell(), scope)  # noqa: S102
    assert set(scope["RUNS"]) == {p.parent.name for p in (REPO / "docs" / "results").glob("*/results.json")} != set()


@pytest.mark.slow
def test_a_normal_ray_run_prints_no_ray_log_lines(tmp_path: Any) -> None:
    """``ingest --engine ray --no-progress`` on the local cluster it starts: stdout is the report, and none of Ray's
    Python notices (token authentication, progress bars, execution statistics) reach stderr."""
    pytest.importorskip("ray.data")
    from tests.apps.ingest.test_ingest_cli import write_contracts

    write_contracts(tmp_path / "docs", 2)
    store = f"chroma:{tmp_path / 'store'}"
    env = {**ENV, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    env.pop("RAY_ADDRESS", None)
    result = subprocess.run([sys.executable, "-m", "llama_index_sac.apps.cli", "ingest", str(tmp_path / "docs"),
                             "--vector-store", store, "--engine", "ray", "--workers", "1", "--no-progress"],
                            capture_output=True, text=True, env=env, timeout=900)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"ingested into {store} (collection llama-sac, engine ray): documents 2 new")
    # Ray's C++ core prints its own notice about Ray Data's actors (max_restarts); nothing else may appear
    assert [line for line in result.stderr.splitlines() if "core_worker.cc" not in line] == [], result.stderr
