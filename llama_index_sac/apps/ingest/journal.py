"""The write-ahead journal of ``llama-sac ingest``: every document is committed on its own, as soon as it is done.

``journal.jsonl`` in the ingest record (one JSON object per line, appended and flushed to disk with ``fsync``):

* ``{"write": ID}`` before the store's rows of document ``ID`` change (its old rows deleted, its new rows added);
* ``{"done": ID, "hash": H, "rows": N}`` once its ``N`` new rows are in the store: from now on the record vouches
  for them (docstore hash ``H``, ``N`` rows);
* ``{"forget": ID}`` once its rows are deleted and it is no longer recorded (removed, or its summary failed).

The record is ``docstore.json`` + ``rows.json`` with the journal replayed on top (:func:`replay`). A document with a
``write`` and no later ``done`` or ``forget`` was being written when the run stopped (an interrupt, a kill, a crash,
a full disk): the store may hold some, all or none of its new rows and the docstore may hold its old hash, so it is
not trusted: the next run deletes its rows, forgets it and writes it again. This is what makes a crash between a
changed document's new rows and the save of the docstore safe: the old hash is never taken as vouching for the new
rows. The journal is folded into ``docstore.json`` and ``rows.json`` after every round and at the end of the run
(:meth:`Journal.clear`); replaying an entry twice changes nothing, so a crash during that fold is harmless.
"""

from __future__ import annotations

import json
import os
from typing import Any

from llama_index.core.storage.docstore import SimpleDocumentStore

from llama_index_sac.apps.ingest.files import IngestError, IngestRecord

__all__ = ["Journal", "replay"]

_MAX_LINE = 65536  # characters of one entry: a document id and a hash


class Journal:
    """``journal.jsonl`` of an ingest record (module docstring)."""

    def __init__(self, record: IngestRecord) -> None:
        self.path = record.directory / "journal.jsonl"

    def append(self, **entry: Any) -> None:
        """Append one entry and flush it to disk before returning."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry, sort_keys=True) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def entries(self) -> list[dict[str, Any]]:
        """The entries, in order; a last line cut short by a crash is left out.

        Raises:
            IngestError: a line that is not an entry (a damaged or edited journal).
        """
        if not self.path.is_file():
            return []
        out: list[dict[str, Any]] = []
        try:
            with open(self.path, encoding="utf-8") as handle:
                lines = list(handle)
        except (OSError, ValueError) as exc:
            raise self._damaged(f"{type(exc).__name__}: {exc}") from None
        for number, line in enumerate(lines, 1):
            entry = self._parse(line)
            if entry is None:
                if number == len(lines) and not line.endswith("\n"):
                    break  # the append a crash cut short
                raise self._damaged(f"line {number} is not an entry")
            out.append(entry)
        return out

    @staticmethod
    def _parse(line: str) -> dict[str, Any] | None:
        if len(line) > _MAX_LINE or not line.startswith("{") or line.count("{") != 1:
            return None  # entries are flat objects: no nesting to recurse into
        try:
            entry = json.loads(line)
        except ValueError:
            return None
        kinds = [k for k in ("write", "done", "forget") if isinstance(entry.get(k), str)]
        if len(kinds) != 1 or (kinds == ["done"] and not (isinstance(entry.get("hash"), str)
                                                          and type(entry.get("rows")) is int)):
            return None
        return dict(entry)

    def _damaged(self, why: str) -> IngestError:
        return IngestError(f"the ingest record {self.path} cannot be read ({why}); delete the store's directory to "
                           "rebuild it")

    def clear(self) -> None:
        """Forget every entry (after they were folded into ``docstore.json`` and ``rows.json``)."""
        self.path.unlink(missing_ok=True)


def replay(entries: list[dict[str, Any]], docstore: SimpleDocumentStore, counts: dict[str, int]) -> list[str]:
    """Apply ``entries`` to ``docstore`` and ``counts`` (in place); the documents left half-written, in order."""
    open_writes: dict[str, None] = {}
    for entry in entries:
        if "write" in entry:
            open_writes[entry["write"]] = None
        elif "done" in entry:
            doc_id = entry["done"]
            docstore.set_document_hash(doc_id, entry["hash"])
            counts[doc_id] = entry["rows"]
            open_writes.pop(doc_id, None)
        else:
            doc_id = entry["forget"]
            docstore.delete_document(doc_id, raise_error=False)
            counts.pop(doc_id, None)
            open_writes.pop(doc_id, None)
    return list(open_writes)
