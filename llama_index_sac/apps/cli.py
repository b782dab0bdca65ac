"""``llama-sac``: the command line of llama-index-sac, one typer app with the benchmark's commands (``eval``,
``report``: :mod:`~llama_index_sac.apps.benchmark.commands`) and the ingest tool's (``ingest``, ``query``, ``serve``,
``ls``, ``rm``: :mod:`~llama_index_sac.apps.ingest.commands`).

Errors: every bad input (an option value typer/click rejects, an unknown option, and each command's own checks) prints
one ``error: ...`` line on stderr (continuation lines indented) and exits with status 2, without a traceback and
without output (:mod:`~llama_index_sac.apps._errors`). ``llama-sac`` alone prints the help and exits with status 0.
A standard output closed by its reader (``llama-sac ls | head -1``) ends any command quietly, with status 141.
"""

from __future__ import annotations

import logging
import os
import sys

import typer

from llama_index_sac.apps._errors import OneLineErrorGroup
from llama_index_sac.apps._help import Command
from llama_index_sac.apps._output import cli_output, closed_stdout_ends_quietly
from llama_index_sac.apps.benchmark.commands import eval_command, report_command
from llama_index_sac.apps.ingest.commands import (
    ingest_command,
    ls_command,
    query_command,
    rm_command,
    serve_command,
)

__all__ = ["app", "main"]

app = typer.Typer(
    name="llama-sac",
    cls=OneLineErrorGroup,
    help="Summary-Augmented Chunking (SAC) for LlamaIndex: measure retrieval over similar legal documents.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """llama-index-sac command line."""
    cli_output()  # warnings and log records: one `warning: ...` line each, no file location


app.command("eval", cls=Command)(eval_command)
app.command("report", cls=Command)(report_command)
# `llama-sac ingest` / `llama-sac query`: a user's folders into a real vector store (code in apps/ingest/)
app.command("ingest", cls=Command)(ingest_command)
app.command("query", cls=Command)(query_command)
app.command("serve", cls=Command)(serve_command)
app.command("ls", cls=Command)(ls_command)
app.command("rm", cls=Command)(rm_command)


#: Commands after which the process ends as soon as its output is flushed, without the interpreter's teardown of
#: its modules (seconds for LlamaIndex's, after the answer): they hold nothing that needs it (the store is closed).
_EXIT_AT_ONCE = ("query",)


def main() -> None:
    """Entry point of the ``llama-sac`` script; a closed standard output ends any command quietly (status 141)."""
    try:
        with closed_stdout_ends_quietly():  # flushes standard output too
            app()
    except SystemExit as exc:
        if not (sys.argv[1:2] and sys.argv[1] in _EXIT_AT_ONCE):
            raise
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        sys.stderr.flush()
        logging.shutdown()
        os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
