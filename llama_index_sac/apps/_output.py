"""What the command line prints besides its results: Python warnings and log records as one ``warning: ...`` line
on stderr each, without file locations or logger names (:func:`cli_output`). The one ``error:`` line of a failed
command stays the command's own: no log record is printed as an error."""

from __future__ import annotations

import logging
import sys
import warnings
from typing import TextIO

__all__ = ["cli_output", "for_cli", "one_line"]

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


