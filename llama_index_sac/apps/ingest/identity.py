"""Which document a file is, in a collection of ``llama-sac ingest``: its folder's label and its path inside it.

A document's id is ``<label>/<path inside the folder>`` (``/``-separated), e.g. ``contracts/2024/acme-nda.txt``,
never the absolute path: the same folder reached through a symbolic link, moved elsewhere, or renamed, holds the
same documents. Each folder given to ``ingest`` gets a label, recorded with the folder's real path (symbolic links
resolved) and its device and inode numbers in ``folders.json`` of the ingest record:

1. ``--as NAME``: that label;
2. else the label whose recorded folder is this one (the same real path), or contains it (a sub-folder is part of
   its folder's label: ``ingest contracts/2024`` after ``ingest contracts`` writes ``contracts/2024/...``);
3. else the label of a recorded folder that no longer exists at its path and has this folder's device and inode
   (``mv contracts agreements``: the folder was renamed, its documents keep their ids);
4. else the folder's own name (the last part of its real path).

A label names one folder: a new folder whose name is already the label of another folder that still exists is
refused with one error asking for ``--as``; when the recorded folder no longer exists, the label moves to the new
folder (it was moved). A file named on the command line belongs to its own folder (by the same rules). Every file is
then identified by the deepest labelled folder that holds it, so two labels never claim one file.
"""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llama_index_sac.apps.ingest.files import IngestError, IngestRecord
from llama_index_sac.apps.ingest.walk import find_files

__all__ = ["Folder", "Sources", "check_label", "load_folders", "plan_sources", "save_folders"]

_LABEL = re.compile(r"[^/\x00-\x1f]{1,200}")


@dataclass(frozen=True)
class Folder:
    """A labelled folder: its real path and, to recognise it after a rename, its device and inode numbers."""

    path: str
    device: int = 0
    inode: int = 0

    @classmethod
    def of(cls, path: Path) -> Folder:
        info = path.stat()
        return cls(str(path), info.st_dev, info.st_ino)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "device": self.device, "inode": self.inode}


def check_label(label: str) -> str:
    """``label`` if it can name a folder: 1 to 200 characters, no ``/`` or control character, not ``.`` or ``..``.

    Raises:
        IngestError: another label.
    """
    if not isinstance(label, str) or not _LABEL.fullmatch(label) or label in (".", "..") or label != label.strip():
        raise IngestError(f"--as: {label!r} is not a folder label (1 to 200 characters, no '/', no control "
                          "characters, no surrounding spaces, not '.' or '..')")
    return label


def load_folders(record: IngestRecord) -> dict[str, Folder]:
    """The labelled folders of a collection (``folders.json``; ``{}`` before the first run)."""
    path = record.directory / "folders.json"
    reader: Any = record._read_json  # the record's own reader (bounded, where it takes the expected type)
    value = reader(path, dict) if "expect" in inspect.signature(reader).parameters else reader(path)
    if value is None:
        return {}
    try:
        return {str(label): Folder(str(v["path"]), int(v["device"]), int(v["inode"])) for label, v in value.items()}
    except (AttributeError, KeyError, TypeError, ValueError):
        raise IngestError(f"the ingest record {path} has an unknown format; delete the store's directory to rebuild "
                          "it") from None


def save_folders(record: IngestRecord, folders: dict[str, Folder]) -> None:
    record._write_json(record.directory / "folders.json", {k: v.to_json() for k, v in sorted(folders.items())})


@dataclass
class Sources:
    """The files of one run with their document ids, and what the run knows about its folders."""

    files: list[tuple[Path, str]] = field(default_factory=list)  # (path as found, document id), sorted by id
    folders: dict[str, Folder] = field(default_factory=dict)  # every label after this run (recorded ones included)
    walked: list[Path] = field(default_factory=list)  # real paths of the folders given (walked whole)
    missing: list[str] = field(default_factory=list)  # paths given that do not exist
    notes: list[str] = field(default_factory=list)  # labels that moved to another folder


def _under(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def document_path(doc_id: str, folders: dict[str, Folder]) -> Path | None:
    """Where the file of ``doc_id`` is now (``None``: an id of no recorded folder)."""
    label, sep, rest = doc_id.partition("/")
    folder = folders.get(label)
    return Path(folder.path, *rest.split("/")) if sep and folder is not None else None


def _assign(root: Path, explicit: str | None, folders: dict[str, Folder], given: dict[str, Path],
            notes: list[str]) -> None:
    """Give the folder ``root`` (a real path) its label in ``folders`` (module docstring)."""
    by_path = {Path(f.path): label for label, f in folders.items()}
    if explicit is None:
        if root in by_path or any(_under(root, p) for p in by_path):
            return  # recorded, or inside a recorded folder
        me = Folder.of(root)
        renamed = [label for label, f in folders.items() if (f.device, f.inode) == (me.device, me.inode)
                   and not os.path.isdir(f.path)]
        if renamed:
            notes.append(f"folder {root} is {renamed[0]!r} (moved from {folders[renamed[0]].path})")
            folders[renamed[0]] = me
            return
        label = root.name
        if not label:
            raise IngestError(f"{root} has no name to label its documents with: give one with --as NAME")
    else:
        label = check_label(explicit)
        if by_path.get(root, label) != label:
            raise IngestError(f"{root} was ingested as {by_path[root]!r}: use --as {by_path[root]}, or "
                              f"llama-sac rm {by_path[root]} first")
    if label in given and given[label] != root:
        raise IngestError(f"two folders given would both be labelled {label!r}: {given[label]} and {root}; give one "
                          "of them another label with --as NAME")
    given[label] = root
    old = folders.get(label)
    if old is not None and Path(old.path) != root:
        if os.path.isdir(old.path):
            raise IngestError(f"the label {label!r} is already the folder {old.path}, not {root}: give this one "
                              "another label with --as NAME")
        notes.append(f"folder label {label!r} moved from {old.path} to {root}")
    folders[label] = Folder.of(root)


def plan_sources(paths: Sequence[str | os.PathLike[str]], labels: Sequence[str] | None,
                 recorded: dict[str, Folder], suffixes: Sequence[str]) -> Sources:
    """The files of ``paths`` with their document ids (module docstring).

    Args:
        paths: folders and files, as given.
        labels: ``--as`` values, one per path (or ``None``).
        recorded: the collection's labelled folders (not changed; the result holds the new ones).
        suffixes: the file suffixes read.

    Raises:
        IngestError: no path exists (the first missing one is named), a wrong number of labels, a label already
            naming another folder that exists, or no file to read.
    """
    if labels and len(labels) != len(paths):
        raise IngestError(f"--as: {len(labels)} label(s) for {len(paths)} PATH(s): give one --as per PATH")
    out = Sources(folders=dict(recorded))
    given: dict[str, Path] = {}
    existing: list[Path] = []
    for i, raw in enumerate(paths):
        path = Path(os.path.abspath(os.path.expanduser(raw)))
        if not os.path.exists(path):
            out.missing.append(str(raw))
            continue
        real = Path(os.path.realpath(path))
        if real.is_dir():
            out.walked.append(real)
        root = real if real.is_dir() else Path(os.path.realpath(path.parent))  # a file: its folder, as walked
        _assign(root, labels[i] if labels else None, out.folders, given, out.notes)
        existing.append(path)
    if not existing:
        raise IngestError(f"{out.missing[0] if out.missing else ''}: no such file or folder" if paths
                          else "no PATH given: name folders or files to ingest")
    files, _ = find_files(existing, suffixes, out.notes)
    roots = sorted(((Path(f.path), label) for label, f in out.folders.items()), key=lambda r: -len(r[0].parts))
    ids: dict[str, Path] = {}
    for file in files:
        real = Path(os.path.realpath(file.parent), file.name)
        root, label = next((root, label) for root, label in roots if _under(real, root))
        ids.setdefault(f"{label}/{real.relative_to(root).as_posix()}", file)  # one file reached twice: once
    out.files = [(ids[doc_id], doc_id) for doc_id in sorted(ids)]
    return out


def in_scope(doc_id: str, folders: dict[str, Folder], walked: Sequence[Path]) -> Path | None:
    """The path of ``doc_id`` when it lies in a folder walked this run (its file would have been found), else
    ``None``. An id of an older record (an absolute path) is its own path."""
    path = Path(doc_id) if os.path.isabs(doc_id) else document_path(doc_id, folders)
    if path is None:
        return None
    real = Path(os.path.realpath(path.parent), path.name) if os.path.isabs(doc_id) else path
    return path if any(_under(real, folder) or _under(path, folder) for folder in walked) else None
