"""The ``llama-sac`` console script: the CLI when its extra is installed, else one clear line (exit 2)."""

from __future__ import annotations

import importlib.util
import sys


def main() -> None:
    """Run ``llama_index_sac.apps.cli.main``; without the ``cli`` extra (typer, matplotlib) say how to install it."""
    missing = [name for name in ("typer", "matplotlib") if importlib.util.find_spec(name) is None]
    if missing:  # found, not imported: matplotlib is imported by the commands that draw, when they draw
        sys.stderr.write(f"error: the llama-sac command needs the cli extra ({missing[0]} is missing): "
                         "pip install 'llama-index-sac[cli]'\n")
        raise SystemExit(2) from None
    from llama_index_sac.apps.cli import main as cli_main

    cli_main()
