"""Help laid out for where it goes: typer's boxes on a terminal, plain text in two columns anywhere else."""

from __future__ import annotations

import sys
from typing import Any

from typer.core import TyperCommand

__all__ = ["PlainHelpOffTerminal", "plain_help"]


def plain_help() -> bool:
    """Help as plain text: standard output is not a terminal (a pipe, a file, a test runner)."""
    try:
        return not sys.stdout.isatty()
    except (AttributeError, ValueError):  # no stream, or a closed one
        return True


class PlainHelpOffTerminal(TyperCommand):
    """A command whose help, off a terminal, is click's plain two-column layout: typer's boxes are laid out for 80
    columns there, which leaves the options' descriptions a column of about 15 characters."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        if plain_help():
            super(TyperCommand, self).format_help(ctx, formatter)  # click's own layout, skipping typer's rich one
            return
        super().format_help(ctx, formatter)
