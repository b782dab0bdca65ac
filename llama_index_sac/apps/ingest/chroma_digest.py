"""The sha256 of a Chroma store's HNSW index files: recorded by the commands that write a collection (``ingest``,
``rm``) in its ingest record, compared before Chroma reads the files (``query``, ``serve``, ``ls``, ``ingest``,
``rm``).

:mod:`~llama_index_sac.apps.ingest.chroma_check` checks the index's structure; noise over ``link_lists.bin`` (the
HNSW graph's upper layers) or ``index_metadata.pickle`` (Chroma's map of labels to row ids) keeps the structure, and
Chroma then answers with other approximate hits, silently. A checksum of each file closes that gap:

* Chroma (``chromadb.PersistentClient``) loads a persisted index only when ``index_metadata.pickle`` is in the
  segment folder, and saves the index only while writing, when the operations since the last save reach the
  collection's sync threshold; the rest stays in its log (``chroma.sqlite3``) and is applied in memory by every
  client that opens the store. So the files on disk once a writer's client is closed stay as they are until the next
  write. :func:`recorded_index` (around a writer's client) marks the record ``writing`` once the client is open,
  before anything is written, and, after it is closed (whether the block ended well or not), records each file's
  size and sha256, read in blocks of 1 MiB.
* :func:`verify_index` compares the files with the record before a client opens the store: a file missing, or of
  another size or sha256, is one :class:`~llama_index_sac.apps.ingest.files.IngestError` naming the file and the
  repair. Where there is nothing to compare, it returns a note instead (never an error): no checksum recorded (a
  record of an earlier version, a store ``llama-sac ingest`` did not write), a writer at work now, or one that
  stopped before it recorded them (killed); the next ``ingest`` records them. A folder without
  ``index_metadata.pickle`` holds no persisted index (Chroma builds it from its log): nothing to compare.

The record file is ``chroma-index.json`` in the record folder (``DIR/.llama-sac-docstore/<collection>/``), written
to a temporary name and renamed into place: ``{"format": 1, "state": "writing"}``, or ``{"format": 1, "state":
"recorded", "segment": ID, "files": {NAME: {"bytes": N, "sha256": HEX}}}`` (``files`` empty when no index was
persisted, ``segment`` null when the store had no such collection). A Chroma server's files are out of reach: only
``chroma:DIR`` stores are checked.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from llama_index_sac._json_io import PersistedFileError, read_json
from llama_index_sac.apps.ingest.chroma_check import store_segment
from llama_index_sac.apps.ingest.files import IngestError, IngestRecord, StoreSpec

__all__ = ["DIGEST_FILE", "INDEX_FILES", "index_files", "recorded_index", "verify_index"]

#: The record file (in the ingest record's folder).
DIGEST_FILE = "chroma-index.json"
#: The files of a persisted Chroma HNSW index (``index_metadata.pickle`` marks it as persisted).
INDEX_FILES = ("header.bin", "data_level0.bin", "length.bin", "link_lists.bin", "index_metadata.pickle")
_PERSISTED = "index_metadata.pickle"
_FORMAT = 1
_BLOCK = 1 << 20
_MAX_BYTES = 64 << 10
_HEX = re.compile(r"[0-9a-f]{64}")


def _sha256(path: Path) -> tuple[int, str]:
    """(bytes, sha256 hex) of a regular file, read in blocks (opened non-blocking: a FIFO is refused, not waited on).

    Raises:
        OSError: not a regular file, or unreadable.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    with os.fdopen(fd, "rb", buffering=0) as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path.name} is not a regular file")
        digest, size, buffer = hashlib.sha256(), 0, bytearray(_BLOCK)
        view = memoryview(buffer)
        while read := handle.readinto(buffer):
            digest.update(view[:read])
            size += read
    return size, digest.hexdigest()


def index_files(spec: StoreSpec, collection: str) -> dict[str, Any]:
    """What :func:`recorded_index` records of ``collection``'s index as it is on disk now: ``{"segment": ID or None,
    "files": {NAME: {"bytes": N, "sha256": HEX}}}`` (``files`` empty when no index is persisted).

    Raises:
        OSError: a file of the index cannot be read.
    """
    found = store_segment(spec, collection)
    if found is None:
        return {"segment": None, "files": {}}
    folder = spec.path / found[0]
    files: dict[str, dict[str, Any]] = {}
    if (folder / _PERSISTED).is_file():
        for name in INDEX_FILES:
            if (folder / name).exists():
                size, sha = _sha256(folder / name)
                files[name] = {"bytes": size, "sha256": sha}
    return {"segment": found[0], "files": files}


def _path(record: IngestRecord) -> Path:
    return record.directory / DIGEST_FILE


def _write(record: IngestRecord, value: dict[str, Any]) -> None:
    _replace(record, json.dumps({"format": _FORMAT, **value}, indent=1, sort_keys=True).encode("ascii"))


def _replace(record: IngestRecord, data: bytes) -> None:
    """The record file holds ``data``: written to a temporary name, then renamed into place."""
    path = _path(record)
    record.directory.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{DIGEST_FILE}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _valid_files(files: Any) -> bool:
    return isinstance(files, dict) and all(
        name in INDEX_FILES and isinstance(entry, dict) and set(entry) == {"bytes", "sha256"}
        and type(entry["bytes"]) is int and entry["bytes"] >= 0
        and isinstance(entry["sha256"], str) and _HEX.fullmatch(entry["sha256"]) is not None
        for name, entry in files.items())


def _read(record: IngestRecord) -> dict[str, Any] | None:
    """The record file's value (``None``: there is none).

    Raises:
        IngestError: it is not a regular file, too large, not JSON, or not of its shape.
    """
    path = _path(record)
    try:
        value = read_json(path, expect=dict, max_bytes=_MAX_BYTES)
    except FileNotFoundError:
        return None
    except PersistedFileError as exc:
        problem = exc.problem
    else:
        state = value.get("state")
        if value.get("format") == _FORMAT and (state == "writing" or (
                state == "recorded" and isinstance(value.get("segment"), (str, type(None)))
                and _valid_files(value.get("files")))):
            return value
        problem = "is not of its shape (format, state, segment, files)"
    raise IngestError(f"the ingest record {path} {problem}: it is damaged; delete that file and run llama-sac ingest "
                      "again to record the checksums of the vector index anew")


def _difference(folder: Path, recorded: dict[str, Any]) -> str | None:
    """The first file of ``folder`` that differs from ``recorded`` (presence and sizes first, then sha256), said as
    ``"NAME problem"``; ``None`` when they all match."""
    if not recorded:
        if (folder / _PERSISTED).exists():
            return f"{_PERSISTED} is there, but no index was persisted when llama-sac ingest last wrote the store"
        return None
    for name in INDEX_FILES:
        path = folder / name
        if name not in recorded:
            if path.exists():
                return f"{name} is there, but was not when llama-sac ingest last wrote the store"
            continue
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            return f"{name} is missing"
        except OSError as exc:
            return f"{name} cannot be read ({exc.strerror or exc})"
        if size != recorded[name]["bytes"]:
            return f"{name} has {size} bytes, not the {recorded[name]['bytes']} recorded"
    for name, entry in recorded.items():
        try:
            sha = _sha256(folder / name)[1]
        except OSError as exc:
            return f"{name} cannot be read ({exc.strerror or exc})"
        if sha != entry["sha256"]:
            return f"{name} is not the file llama-sac ingest wrote (its sha256 differs from the one recorded)"
    return None


def verify_index(record: IngestRecord, spec: StoreSpec, collection: str, *, writer: bool = False) -> str | None:
    """Compare ``collection``'s index files with the checksums in ``record`` (module docstring), before a client
    opens the store.

    Args:
        record: the collection's ingest record.
        spec: a ``chroma:DIR`` store.
        collection: the collection.
        writer: the caller holds the record's lock and is about to write (``ingest``, ``rm``): the note says the
            checksums are recorded at its end.

    Returns:
        ``None`` when the files match (or there is nothing to compare); else a note saying why they cannot be
        verified.

    Raises:
        IngestError: a file differs from its checksum (named, with the repair), or the record file is damaged.
    """
    where = f"the vector index of {spec} (collection {collection!r})"
    fix = "this run records them" if writer else "llama-sac ingest records them"
    for attempt in range(3):
        recorded = _read(record)
        found = store_segment(spec, collection)
        if found is None:
            return None  # no such collection (yet): nothing for Chroma to load
        folder = spec.path / found[0]
        if not (folder / _PERSISTED).exists() and (recorded is None or recorded["state"] == "writing"
                                                    or recorded["segment"] != found[0]):
            return None  # no persisted index: Chroma builds it from its log, nothing to compare
        if recorded is None:
            return (f"{where} cannot be verified: its ingest record holds no checksums of it (written by an earlier "
                    f"version, or not by llama-sac ingest); {fix}")
        if recorded["state"] == "writing":
            if not writer and record.ingest_running():
                return f"{where} cannot be verified now: an ingest or rm is writing it"
            return f"{where} cannot be verified: the last ingest or rm stopped before it recorded its checksums; {fix}"
        if recorded["segment"] != found[0]:
            return (f"{where} cannot be verified: it is not the index the ingest record describes (segment "
                    f"{found[0]}, not {recorded['segment'] or 'none'}: the collection was made again by another "
                    f"tool?); {fix}")
        problem = _difference(folder, recorded["files"])
        if problem is None:
            return None
        if not writer and (record.ingest_running() or _read(record) != recorded):
            if attempt < 2:
                continue  # a writer changed it while it was read: compare with what it recorded
            return f"{where} cannot be verified now: an ingest or rm is writing it"
        raise IngestError(f"the chroma store {spec.path} is damaged (collection {collection!r}): its vector index file "
                          f"{found[0]}/{problem}; queries would return wrong results. Ingest again into a new "
                          "--vector-store (or restore the folder from a copy)")
    return None  # pragma: no cover - the loop returns or raises


def _stamps(spec: StoreSpec, collection: str) -> list[tuple[str, int, int, int, int]]:
    """(name, inode, bytes, mtime_ns, ctime_ns) of each file of the persisted index now (``[]``: none persisted),
    to tell whether a writer changed them."""
    found = store_segment(spec, collection)
    if found is None or not (spec.path / found[0] / _PERSISTED).exists():
        return []
    out = []
    for name in INDEX_FILES:
        with suppress(OSError):
            info = (spec.path / found[0] / name).stat()
            out.append((name, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns))
    return out


@contextmanager
def recorded_index(record: IngestRecord, spec: StoreSpec, collection: str) -> Iterator[Callable[[], None]]:
    """Around a writer's Chroma client (the client is closed before the block ends); gives ``start``, called once
    the client is open, before anything is written: from then on the record says ``writing``, and after the block it
    holds the checksums of the files on disk (whether the block ended well or not). A block that fails without
    changing a file leaves the record as it was (a run refused after opening the store writes nothing); if the
    files cannot be read after the block, the record stays ``writing`` and the next run says so.

    Raises:
        OSError: the record folder cannot be written (``start``, or after the block).
    """
    began: list[tuple[bytes | None, list[tuple[str, int, int, int, int]]]] = []

    def start() -> None:
        try:
            previous: bytes | None = _path(record).read_bytes()
        except FileNotFoundError:
            previous = None
        began.append((previous, _stamps(spec, collection)))
        _write(record, {"state": "writing"})

    try:
        yield start
    except BaseException:
        if began:
            previous, stamps = began[0]
            with suppress(OSError):
                if stamps != _stamps(spec, collection):
                    _write(record, {"state": "recorded", **index_files(spec, collection)})
                elif previous is None:
                    _path(record).unlink(missing_ok=True)
                else:
                    _replace(record, previous)
        raise
    if began:
        _write(record, {"state": "recorded", **index_files(spec, collection)})
