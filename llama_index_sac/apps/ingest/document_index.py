"""The collection's :class:`~llama_index_sac.DocumentIndex` kept in the ingest record, so that ``llama-sac query`` and
``serve`` open a document-aware collection without reading every stored chunk.

``ingest`` writes ``documents.<state>.json`` (:meth:`DocumentIndex.save`) into the record folder at the end of a run
that wrote, removed or repaired anything (or when the file for the current state is missing), reading the collection
once under its lock. ``<state>`` is 16 hex digits of the sha256 of the record's ``docstore.json`` and ``rows.json``
(both rewritten by every ``ingest`` and ``rm`` that changes the collection) and of the index's recipe (the dump of
the default :class:`~llama_index_sac.retrievers.options.DocumentPriorOptions`, every option of the prior, the file
format and the package version). ``query`` loads the file of the current
state; when there is none (an ``rm`` since, a record from before this file, a non-SAC collection) it reads the
collection as before, so a stale index is never used.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from llama_index_sac.apps.ingest.files import IngestRecord
from llama_index_sac.retrievers.document_index import FORMAT, DocumentIndex
from llama_index_sac.retrievers.options import DocumentPriorOptions

__all__ = ["document_index_path", "load_document_index", "record_state", "save_document_index"]

_PREFIX = "documents."


def _recipe() -> bytes:
    from llama_index_sac import __version__

    return json.dumps({"options": DocumentPriorOptions().model_dump(), "format": FORMAT, "version": __version__},
                      sort_keys=True).encode()


def record_state(record: IngestRecord) -> str:
    """sha256 (hex) of the record's ``docstore.json`` and ``rows.json`` (empty when missing) and of the recipe."""
    digest = hashlib.sha256(_recipe())
    for path in (record.docstore_path, record.rows_path):
        digest.update(b"\0" + path.name.encode() + b"\0")
        try:
            digest.update(path.read_bytes())
        except FileNotFoundError:
            pass
    return digest.hexdigest()


def document_index_path(record: IngestRecord, state: str | None = None) -> Path:
    """``documents.<16 hex digits of the state>.json`` in the record folder (the current state by default)."""
    return record.directory / f"{_PREFIX}{(state or record_state(record))[:16]}.json"


def save_document_index(record: IngestRecord, vector_store: Any) -> Path | None:
    """Build the collection's index from ``vector_store`` (all its chunks) and save it for the record's current state,
    removing the files of other states; nothing is read when the file of this state exists already.

    Returns:
        The file, or ``None`` when no chunk carries a document summary (nothing to index; stale files are removed).
    """
    path = document_index_path(record)
    if not path.is_file():
        try:
            index: DocumentIndex | None = DocumentIndex.from_source(vector_store)
        except ValueError:  # no summaries: an empty collection
            index = None
        if index is not None:
            index.save(path)
    for old in record.directory.glob(f"{_PREFIX}*.json"):
        if old != path:
            old.unlink(missing_ok=True)
    return path if path.is_file() else None


def load_document_index(record: IngestRecord) -> DocumentIndex | None:
    """The index saved for the record's current state, or ``None`` when there is none (or it cannot be read: the
    caller then reads the collection)."""
    path = document_index_path(record)
    try:
        return DocumentIndex.load(path)
    except (OSError, ValueError):
        return None
