"""Help laid out for where it goes: typer's boxes on a terminal, plain text in two columns anywhere else; the usage
line and flags of every ``llama-sac`` command (:class:`Command`)."""

from __future__ import annotations

import sys
from typing import Any

from typer.core import TyperCommand

__all__ = ["Command", "PlainHelpOffTerminal", "plain_help"]


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


class Command(PlainHelpOffTerminal):
    """A command whose help shows no type after a flag (``--json``, not ``--json <bool>``) and its arguments as
    ``PATHS...`` / ``[QUESTION]`` in the usage line (typer would write ``{paths}...``); plain help off a terminal."""

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        for param in params:
            if getattr(param, "is_flag", False) and param.metavar is None:
                param.metavar = ""
        return params

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                name = (param.metavar or param.name or "").upper() + ("..." if param.nargs != 1 else "")
                pieces.append(name if param.required else f"[{name}]")
        return pieces
