"""Errors on the command line as one ``error:`` line and exit status 2: the command group (click/typer usage errors,
``--help`` when no command is given) and the benchmark's commands.

Every bad input prints one ``error: ...`` line on stderr (continuation lines indented, so that no other line starts
with ``error:``) and exits with status 2, without a traceback and without output. ``llama-sac`` alone prints the
help and exits with status 0. A standard output closed by its reader ends any command quietly, with status 141
(:mod:`~llama_index_sac.apps._output`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import typer
from typer.core import TyperGroup

try:  # typer >= 0.2x vendors click as typer._click; older typer uses click itself
    from typer._click.exceptions import ClickException, UsageError
except ImportError:  # pragma: no cover - depends on the installed typer
    from click.exceptions import ClickException, UsageError  # type: ignore[assignment,no-redef]
try:
    from typer._click.exceptions import NoArgsIsHelpError
except ImportError:  # pragma: no cover - older click: no_args_is_help prints the help and exits 0 by itself
    NoArgsIsHelpError = type("NoArgsIsHelpError", (UsageError,), {})  # type: ignore[assignment,misc]

from llama_index_sac.apps._display import printable
from llama_index_sac.apps._output import ClosedStdoutEndsQuietly

__all__ = ["OneLineErrorGroup", "echo_error", "fail"]


def echo_error(message: str) -> None:
    """One ``error:`` line on stderr; further lines of ``message`` are indented so that no other line starts with
    ``error:``."""
    first, *rest = printable(message, keep_newlines=True).split("\n")
    lines = [f"error: {first}"] + [line if line[:1].isspace() else "  " + line for line in rest]
    typer.echo("\n".join(lines), err=True)


def fail(message: str) -> typer.Exit:
    """:func:`echo_error` ``message``; the exit with status 2 to raise."""
    echo_error(message)
    return typer.Exit(code=2)


def _click_message(exc: ClickException) -> str:
    text = exc.format_message().replace("Value error, ", "")  # typer's Literal choices wrap click's message
    if text[:1].isupper() and text[1:2].islower():
        text = text[0].lower() + text[1:]
    if isinstance(exc, UsageError) and exc.ctx is not None:
        text = text.rstrip(".") + f" (see '{exc.ctx.command_path} --help')"
    return text


class OneLineErrorGroup(ClosedStdoutEndsQuietly, TyperGroup):
    """The command group: click/typer usage errors (bad option values, unknown options) become one ``error:`` line
    and exit status 2 instead of typer's boxed format; a closed standard output ends it quietly (module docstring)."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        run = super().main
        if not standalone_mode:
            return run(args, prog_name, complete_var, False, windows_expand_args, **extra)
        try:
            code = run(args, prog_name, complete_var, False, windows_expand_args, **extra)
        except NoArgsIsHelpError as exc:
            typer.echo(exc.format_message())
            code = 0
        except ClickException as exc:
            echo_error(_click_message(exc))
            code = 2
        except typer.Abort:
            echo_error("aborted")
            code = 2
        sys.exit(code if isinstance(code, int) else 0)
