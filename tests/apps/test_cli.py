"""The ``llama-sac`` entry point (``llama_index_sac.apps.cli``) run as a process: an error ends it with one
``error:`` line and status 2, without a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.slow
def test_entry_point_exits_cleanly_without_traceback(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "llama_index_sac.apps.cli", "eval", "--data-dir", str(tmp_path / "missing")],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("error: data directory not found")
    assert "Traceback" not in proc.stderr + proc.stdout
