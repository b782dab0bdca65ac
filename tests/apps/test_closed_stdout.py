"""A standard output closed by its reader (``llama-sac ... | head -1``) ends every command quietly: no ``error:``
line, no traceback, exit status 141 (128 + SIGPIPE), in real processes whose stdout pipe is closed by the reader."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from llama_index_sac.apps._output import STDOUT_CLOSED_STATUS
from tests.conftest import REPO, FakeEmbedding

ENV = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
       "TOKENIZERS_PARALLELISM": "false"}
#: The console script's entry point (``llama-sac``), run by this interpreter.
ENTRY = "from llama_index_sac.apps._cli_entry import main; main()"


def run_with_closed_stdout(*args: str) -> tuple[int, str]:
    """Run ``llama-sac ARGS`` with its stdout a pipe that this side closes at once, before the command writes a byte;
    the exit status and stderr."""
    process = subprocess.Popen([sys.executable, "-c", ENTRY, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=ENV)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()
    stderr = process.stderr.read().decode()
    process.stderr.close()
    return process.wait(timeout=300), stderr


def assert_quiet(status: int, stderr: str) -> None:
    assert "error:" not in stderr and "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    assert status == STDOUT_CLOSED_STATUS == 141, (status, stderr)


@pytest.mark.parametrize("args", [("--help",), (), ("ls", "--help")])
def test_help_into_a_closed_pipe_ends_quietly(args: tuple[str, ...]) -> None:
    assert_quiet(*run_with_closed_stdout(*args))


@pytest.fixture
def store(tmp_path: Path) -> str:
    """A Chroma collection of 4 contracts, embedded with ``FakeEmbedding``."""
    pytest.importorskip("llama_index.vector_stores.chroma", reason="the 'vectorstores' extra is not installed")
    from llama_index_sac.apps.ingest.run import IngestSettings, ingest
    from tests.apps.ingest.test_ingest_cli import write_contracts

    write_contracts(tmp_path / "docs", 4)
    spec = f"chroma:{tmp_path / 'store'}"
    ingest([tmp_path / "docs"], spec, IngestSettings(show_progress=False), embed_model=FakeEmbedding())
    return spec


def test_ls_into_a_closed_pipe_ends_quietly(store: str, tmp_path: Path) -> None:
    assert_quiet(*run_with_closed_stdout("ls", "--vector-store", store))
    assert_quiet(*run_with_closed_stdout("ls", "--vector-store", store, "--json"))
    # a real error still says so: the rule is for a closed standard output only
    status, stderr = run_with_closed_stdout("ls", "--vector-store", f"chroma:{tmp_path / 'nothing'}")
    assert status == 2 and stderr.startswith("error: --vector-store: ") and stderr.count("\n") == 1


#: ``llama-sac query`` (through the entry point) with ``FakeEmbedding`` in place of the collection's model.
QUERY_WITH_FAKE_MODEL = """
import sys
from llama_index_sac.apps.ingest import query
from tests.conftest import FakeEmbedding
query.load_model = lambda *args, **kwargs: FakeEmbedding()
sys.argv[0] = "llama-sac"
from llama_index_sac.apps._cli_entry import main
main()
"""


def test_query_output_cut_after_one_line_ends_quietly(store: str, tmp_path: Path) -> None:
    """``llama-sac query ... | head -1``: the reader takes one line of an output larger than a pipe holds, then
    closes; the command ends quietly (it printed ``error: BrokenPipeError`` and exited with status 2)."""
    questions = tmp_path / "q.txt"
    questions.write_text("Which law governs the agreement?\n" * 400, encoding="utf-8")
    process = subprocess.Popen([sys.executable, "-c", QUERY_WITH_FAKE_MODEL, "query", "--questions", str(questions),
                                "--vector-store", store, "--k", "50", "--no-progress"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.readline().startswith(b"Q1: ")
    process.stdout.close()
    stderr = process.stderr.read().decode()
    process.stderr.close()
    assert_quiet(process.wait(timeout=300), stderr)
