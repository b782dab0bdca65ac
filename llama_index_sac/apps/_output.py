"""What the command line prints besides its results: Python warnings and log records as one ``warning: ...`` line
on stderr each, without file locations or logger names (:func:`cli_output`). The one ``error:`` line of a failed
command stays the command's own: no log record is printed as an error.

A standard output closed by its reader (``llama-sac ls ... | head -1``) ends the command quietly, as it ends a
standard Unix tool: no ``error:`` line, no traceback, exit status :data:`STDOUT_CLOSED_STATUS`
(:func:`closed_stdout_ends_quietly`, applied by the command line's entry point to every command)."""

from __future__ import annotations

import io
import logging
import os
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn, TextIO

__all__ = ["STDOUT_CLOSED_STATUS", "ClosedStdoutEndsQuietly", "cli_output", "closed_stdout_ends_quietly", "for_cli",
           "one_line", "stdout_closed"]

#: Exit status of a command whose standard output was closed by its reader: 128 + SIGPIPE (13), the status a shell
#: reports for a Unix tool that SIGPIPE ended (``cat big | head -1``).
STDOUT_CLOSED_STATUS = 141

#: The part of an open circuit's message (``LLMUnavailableError``) that only means something to a Python caller.
_LIBRARY_ONLY = "; this summarizer sends no further requests until reset_circuit() is called"


def one_line(text: object) -> str:
    """``text`` on one line (runs of whitespace, newlines included, become one space)."""
    return " ".join(str(text).split())


def for_cli(message: str) -> str:
    """A library error message as the command line says it: the advice to call ``reset_circuit()`` (meaningless
    there: the next run starts afresh) becomes a question about the server."""
    return message.replace(_LIBRARY_ONLY, " (is the server running and reachable?)")


class _StderrHandler(logging.Handler):
    """Writes to the ``sys.stderr`` of the moment (a test runner may replace it between commands); a line equal to
    the one before it (the same retry of concurrent requests) is written once."""

    _last: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = f"warning: {one_line(record.getMessage())}"
            if record.exc_info and record.exc_info[1] is not None:
                message += f" ({type(record.exc_info[1]).__name__}: {one_line(record.exc_info[1])})"
            if message == self._last:
                return
            self._last = message
            sys.stderr.write(message + "\n")
        except Exception:  # noqa: BLE001 - logging's own rule: a failing handler reports and goes on
            self.handleError(record)


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    (file or sys.stderr).write(f"warning: {one_line(message)}\n")


def cli_output(level: int = logging.WARNING) -> None:
    """Print warnings (``warnings.warn``) and log records of ``level`` and above as ``warning: ...`` lines on stderr.
    Idempotent: a second call adds no second handler."""
    warnings.showwarning = _show_warning
    root = logging.getLogger()
    if not any(isinstance(handler, _StderrHandler) for handler in root.handlers):
        root.addHandler(_StderrHandler(level))
    if root.level == logging.NOTSET or root.level > level:
        root.setLevel(level)


def stdout_closed() -> NoReturn:
    """End the command because its standard output was closed by the reader: no message, exit status
    :data:`STDOUT_CLOSED_STATUS`.

    Standard output is first pointed at :data:`os.devnull` (its file descriptor, so what is still buffered goes there
    too; a ``sys.stdout`` without one, as a test runner's, is replaced by an in-memory buffer), so that the
    interpreter's final flush does not raise ``BrokenPipeError`` again and print ``Exception ignored ...``.

    Raises:
        SystemExit: always, with :data:`STDOUT_CLOSED_STATUS`.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no file descriptor behind sys.stdout (io.UnsupportedOperation)
        sys.stdout = io.StringIO()  # what is still written is dropped; no file left open
    raise SystemExit(STDOUT_CLOSED_STATUS)


def _stdout_stat() -> os.stat_result | None:
    try:
        return os.fstat(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        return None


def _rich_closed_stdout(before: os.stat_result | None) -> bool:
    """Whether standard output was pointed at :data:`os.devnull` since ``before`` was taken: what rich's console
    (typer's help) does on a closed standard output, before it raises ``SystemExit(1)``."""
    after = _stdout_stat()
    if before is None or after is None:
        return False
    try:
        devnull = os.stat(os.devnull)
    except OSError:
        return False
    return os.path.samestat(after, devnull) and not os.path.samestat(before, devnull)


@contextmanager
def closed_stdout_ends_quietly() -> Iterator[None]:
    """Run the block, then flush ``sys.stdout`` (even when the block raised); a closed standard output in either ends
    the command quietly (:func:`stdout_closed`): a ``BrokenPipeError``, or the ``SystemExit(1)`` of rich's console
    (typer's help), which points standard output at :data:`os.devnull` first.

    Raises:
        SystemExit: with :data:`STDOUT_CLOSED_STATUS` on a closed standard output; every other exception of the block
            passes unchanged.
    """
    before = _stdout_stat()
    try:
        try:
            yield
        finally:
            sys.stdout.flush()
    except BrokenPipeError:
        stdout_closed()
    except SystemExit as exc:
        if exc.code == 1 and _rich_closed_stdout(before):
            stdout_closed()
        raise


class ClosedStdoutEndsQuietly:
    """Mixin of the command line's click group: its context (``--help`` prints there) and its commands run in
    :func:`closed_stdout_ends_quietly`, before click's own handler of a closed standard output (exit status 1, the
    status of an ordinary failure) sees it."""

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        with closed_stdout_ends_quietly():
            return super().make_context(info_name, args, parent, **extra)  # type: ignore[misc]

    def invoke(self, ctx: Any) -> Any:
        with closed_stdout_ends_quietly():
            return super().invoke(ctx)  # type: ignore[misc]
