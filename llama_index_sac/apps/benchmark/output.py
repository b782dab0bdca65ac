"""Output folders that appear complete or not at all (``llama-sac eval``'s ``--output-dir``)."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from llama_index_sac.apps.benchmark import report
from llama_index_sac.apps.benchmark.config import EvaluationSetupError
from llama_index_sac.apps.benchmark.results import RunResults

__all__ = ["staged_output_dir", "write_run_outputs"]


def _remove_empty(folders: Sequence[Path]) -> None:
    for folder in folders:  # deepest first
        try:
            folder.rmdir()
        except OSError:
            return


@contextmanager
def staged_output_dir(out: str | Path) -> Iterator[Path]:
    """A staging folder beside ``out`` that becomes ``out`` when the ``with`` block succeeds.

    * ``out`` does not exist: the staging folder (``.<name>.<pid>-<random>.partial`` in the same parent, so the
      move is one ``rename`` on one file system) is renamed to ``out``; a failed run leaves no ``out``.
    * ``out`` is an existing folder: on success each file of the staging folder replaces the file of the same name
      in ``out`` (``os.replace``; other files stay); a failed run leaves ``out`` unchanged.
    * On any exception in the block, KeyboardInterrupt included, the staging folder is removed, and so are the
      parent folders that had to be created for it (when still empty); the exception propagates.

    Args:
        out: the output folder (``~`` expanded; relative to the working directory).

    Yields:
        The staging folder to write into.

    Raises:
        EvaluationSetupError: ``out`` is an existing file, or its parent folder cannot be created or written.
    """
    target = Path(os.path.abspath(os.path.expanduser(out)))  # os.path.expanduser never raises
    if target.exists() and not target.is_dir():
        raise EvaluationSetupError(f"output folder {out} exists and is not a folder")
    parent = target.parent
    created = [p for p in (parent, *parent.parents) if not p.exists()]
    staging = parent / f".{target.name or 'out'}.{os.getpid()}-{uuid.uuid4().hex[:8]}.partial"
    try:
        staging.mkdir(parents=True)
    except OSError as exc:
        _remove_empty(created)
        raise EvaluationSetupError(f"cannot create output folder {out}: {exc}") from None
    done = False
    try:
        yield staging
        if target.is_dir():
            for item in sorted(staging.iterdir()):
                os.replace(item, target / item.name)
            staging.rmdir()
        else:
            os.replace(staging, target)
        done = True
    finally:
        if not done:
            shutil.rmtree(staging, ignore_errors=True)
            _remove_empty(created)


def write_run_outputs(results: RunResults, folder: Path) -> None:
    """Write a run's files into ``folder``: ``results.json`` (the schema of :mod:`.results`),
    ``results.csv``, ``queries.csv``, ``confusions.csv`` and the three ``*_at_k.png`` plots (see
    :mod:`llama_index_sac.apps.benchmark.commands`)."""
    (folder / "results.json").write_text(results.to_json(), encoding="utf-8")
    report.write_csv(results, folder / "results.csv")
    report.write_query_csv(results, folder / "queries.csv")
    report.write_confusions_csv(results, folder / "confusions.csv")
    report.write_plots(results, folder)
