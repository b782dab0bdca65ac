"""The help of every ``llama-sac`` command (``llama_index_sac.apps._help``): plain usage lines naming the arguments,
no type after a flag."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner


@pytest.mark.parametrize(("command", "usage"), [
    ("ingest", "ingest [OPTIONS] PATHS..."), ("query", "query [OPTIONS] [QUESTION]"),
    ("report", "report [OPTIONS] RUN"),
])
def test_help_shows_plain_usage_and_no_bool_type(command: str, usage: str) -> None:
    from llama_index_sac.apps.cli import app

    result: Any = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"}, prog_name="llama-sac")
    assert result.exit_code == 0
    assert f"Usage: llama-sac {usage}" in result.stdout
    assert "<bool>" not in result.stdout and "{" not in result.stdout.split("Usage:")[1].splitlines()[0]
