"""The generation of a collection's ingest record: a number that every ``ingest`` and ``rm`` bumps when it is done
writing, so that a running ``llama-sac serve`` notices a change made by any process and reopens the collection.

The number lives in ``generation`` in the record folder (``DIR/.llama-sac-docstore/<collection>/``), written to a
temporary name and renamed into place (a reader sees the old or the new number, never half a file). Writers hold the
record's lock (:meth:`~llama_index_sac.apps.ingest.files.IngestRecord.lock`), so two bumps never race. Reading it is
one small file read: cheap enough for every request.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from llama_index_sac.apps.ingest.files import IngestRecord

__all__ = ["GENERATION_FILE", "bump_generation", "bumped_when_written", "read_generation"]

#: The file name in the record folder.
GENERATION_FILE = "generation"
_MAX_BYTES = 64


def read_generation(record: IngestRecord) -> str:
    """The record's generation as its file holds it (stripped; ``""`` when there is no file yet or it cannot be
    read). Only compared for equality: any change of the text is a change of the collection."""
    try:
        with open(record.directory / GENERATION_FILE, "rb") as handle:
            return handle.read(_MAX_BYTES).decode("ascii", "replace").strip()
    except OSError:
        return ""


def bump_generation(record: IngestRecord) -> int:
    """Write the next generation (the current number + 1; 1 when there is none or it is not a number).

    Returns:
        The new number.

    Raises:
        OSError: the record folder cannot be written.
    """
    current = read_generation(record)
    number = int(current) + 1 if current.isascii() and current.isdigit() and len(current) < 19 else 1
    record.directory.mkdir(parents=True, exist_ok=True)
    path = record.directory / GENERATION_FILE
    tmp = path.with_name(f"{GENERATION_FILE}.{os.getpid()}.tmp")
    tmp.write_text(f"{number}\n", encoding="ascii")
    os.replace(tmp, path)
    return number


def _stamp(record: IngestRecord) -> tuple[tuple[int, int, int] | None, ...]:
    out: list[tuple[int, int, int] | None] = []
    for path in (record.rows_path, record.docstore_path):
        try:
            info = path.stat()
        except OSError:
            out.append(None)
            continue
        out.append((info.st_ino, info.st_mtime_ns, info.st_size))
    return tuple(out)


@contextmanager
def bumped_when_written(record: IngestRecord) -> Iterator[None]:
    """Bump the generation at the end of the block (an ``ingest`` run, under the record's lock) if the block rewrote
    the record's ``rows.json`` or ``docstore.json`` (as every write to the collection does), whether it ends well or
    not; a run that wrote nothing (nothing changed, or refused before writing) leaves the record as it was.

    Raises:
        OSError: the record folder cannot be written.
    """
    before = _stamp(record)
    try:
        yield
    finally:
        if _stamp(record) != before and record.exists():
            bump_generation(record)
