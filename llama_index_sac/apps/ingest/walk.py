"""Finding the input files of ``llama-sac ingest``: :func:`find_files` walks the folders given, without recursion
and to a depth limit, and says what it does not walk (a folder too deep, a folder that cannot be read)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from llama_index_sac.apps.ingest.files import SUFFIXES, IngestError
from llama_index_sac.apps.ingest.readers import shown

__all__ = ["MAX_FOLDER_DEPTH", "find_files"]

#: The deepest folder walked, in levels below a folder given (deeper ones are reported, not walked).
MAX_FOLDER_DEPTH = 128


def find_files(paths: Sequence[str | os.PathLike[str]], suffixes: Sequence[str] = SUFFIXES,
               notes: list[str] | None = None) -> tuple[list[Path], list[Path]]:
    """The files to read (sorted, absolute, without duplicates) and the folders given.

    Folders are walked (iteratively, without recursion) down to :data:`MAX_FOLDER_DEPTH` levels below the folder
    given; hidden entries (a name starting with ``.``) inside them and files with other suffixes are left out;
    symbolic links to folders are not followed (links to files are listed:
    :func:`~llama_index_sac.apps.ingest.files.read_file` reads those whose target lies inside the folder). Every
    path named is listed, whatever its suffix or kind. What is not walked is said in ``notes``, one line each: the
    folders nested deeper than the limit (counted, the first one named, once per folder given) and the folders that
    cannot be read (permission denied, a path too long).

    Raises:
        IngestError: no path, a path that does not exist, or no file with one of ``suffixes``.
    """
    if not paths:
        raise IngestError("no PATH given: name folders or files to ingest")
    files: set[Path] = set()
    folders: list[Path] = []
    notes = [] if notes is None else notes
    first_note = len(notes)
    for given in paths:
        path = Path(os.path.abspath(os.path.expanduser(given)))
        if path.is_dir():
            folders.append(path)
            files.update(_walk(path, suffixes, notes))
        elif os.path.lexists(path):
            files.add(path)
        else:
            raise IngestError(f"{shown(given)}: no such file or folder")
    if not files:
        raise IngestError(f"no {'/'.join(suffixes)} files in {', '.join(shown(p) for p in paths)}"
                          + "".join(f"; {note}" for note in notes[first_note:]))
    return sorted(files), folders


def _walk(top: Path, suffixes: Sequence[str], notes: list[str]) -> Iterator[Path]:
    """The files of ``top`` with one of ``suffixes`` (:func:`find_files`' rules), depth first, with an explicit stack;
    what is not walked is appended to ``notes``."""
    stack: list[tuple[str, int]] = [(str(top), 0)]
    too_deep: list[str] = []
    while stack:
        folder, depth = stack.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.name.startswith("."):
                        continue
                    try:
                        is_dir = entry.is_dir()  # a link to a folder counts as one (and is not followed)
                    except OSError:
                        is_dir = False
                    if not is_dir:
                        if Path(entry.name).suffix.lower() in suffixes:
                            yield Path(entry.path)
                    elif not entry.is_symlink():
                        if depth < MAX_FOLDER_DEPTH:
                            stack.append((entry.path, depth + 1))
                        else:
                            too_deep.append(entry.path)
        except OSError as exc:
            notes.append(f"folder {shown(_clipped(folder))} cannot be read ({type(exc).__name__}: "
                         f"{exc.strerror or exc}): its files are not ingested")
    if too_deep:
        notes.append(f"{len(too_deep)} folder(s) nested more than {MAX_FOLDER_DEPTH} levels deep in {shown(top)} "
                     f"not walked (the depth limit; their files are not ingested), the first: "
                     f"{shown(_clipped(os.path.relpath(min(too_deep), top)))}")


def _clipped(path: str, keep: int = 120) -> str:
    """``path`` for a message: at most about ``keep`` characters (its start and its end)."""
    return path if len(path) <= keep else f"{path[: keep // 2]}...{path[-keep // 2:]}"
