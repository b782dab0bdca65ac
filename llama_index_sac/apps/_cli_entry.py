"""The ``llama-sac`` console script: the CLI when its extra is installed, else one clear line (exit 2)."""

from __future__ import annotations

import sys


def main() -> None:
    """Run ``llama_index_sac.apps.cli.main``; without the ``cli`` extra (typer, matplotlib) say how to install it."""
    try:
        import matplotlib  # noqa: F401
        import typer  # noqa: F401
    except ImportError as exc:
        sys.stderr.write(f"error: the llama-sac command needs the cli extra ({exc.name} is missing): "
                         "pip install 'llama-index-sac[cli]'\n")
        raise SystemExit(2) from None
    from llama_index_sac.apps.cli import main as cli_main

    cli_main()
