"""``llama-sac ls`` and ``llama-sac rm``: the documents of a collection written by ``llama-sac ingest``.

:func:`list_documents` reads the ingest record (docstore, row counts and journal, folder labels) and the store (the
rows and the summary of each document) and returns both; nothing is written. :func:`remove` deletes documents, by
id (``contracts/2024/acme-nda.txt``), by a folder inside a label (``contracts/2024``) or by a whole label
(``contracts``): their rows from the store, their entries from the docstore and the record, journaled like ``ingest``
(:mod:`~llama_index_sac.apps.ingest.journal`) and under the same lock, so an interrupted ``rm`` is finished by the
next ``ingest`` or ``rm``.

Names that differ only in Unicode normalisation (``café.txt`` written precomposed, NFC, and decomposed, NFD, as macOS
writes it) are two files and two documents. :func:`shown_id` shows an id that is not NFC with its combining characters
escaped and its form marked (``cafe\\u0301.txt (NFD)``), so ``ls`` shows twins apart; :func:`remove` refuses a target
that matches twins only up to normalisation and names them all, and accepts ``\\uXXXX`` escapes to name one exactly.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

from llama_index_sac.apps.ingest.files import IngestError, IngestRecord, StoreSpec
from llama_index_sac.apps.ingest.generation import bump_generation
from llama_index_sac.apps.ingest.identity import Folder, document_path, load_folders, save_folders
from llama_index_sac.apps.ingest.journal import Journal, replay
from llama_index_sac.apps.ingest.store import open_store

__all__ = ["Listing", "ListedDocument", "Removal", "escaped_id", "list_documents", "remove", "shown_id"]


@dataclass(frozen=True)
class ListedDocument:
    """One document: its id, the path of its file now (``None``: an id of no recorded folder), its rows in the store
    (``chunks``), the rows the record lists (``recorded``), its summary (``None``: no row holds one) and whether a
    run stopped while writing it (it is written again by the next ``ingest``)."""

    doc_id: str
    path: str | None
    chunks: int
    recorded: int | None
    summary: str | None
    interrupted: bool = False


@dataclass
class Listing:
    """What :func:`list_documents` found: the folder labels and the documents (sorted by id)."""

    folders: dict[str, Folder] = field(default_factory=dict)
    documents: list[ListedDocument] = field(default_factory=list)


def _record(spec: StoreSpec, collection: str) -> IngestRecord:
    record = IngestRecord(spec, collection)
    if spec.kind != "chroma-http" and not spec.path.is_dir():
        raise IngestError(f"--vector-store: {spec} does not exist (nothing was ingested there)")
    if not record.exists():
        raise IngestError(f"--collection: nothing was ingested into collection {collection!r} of {spec} (no "
                          f"{record.settings_path})")
    return record


def list_documents(store: StoreSpec | str, collection: str = "llama-sac") -> Listing:
    """The documents of ``collection`` with their rows and summaries (module docstring).

    Raises:
        IngestError: no ingest record for the collection, a record that cannot be read, or a store that is not of
            that kind or cannot be read (see :func:`~llama_index_sac.apps.ingest.store.open_store`).
    """
    spec = store if isinstance(store, StoreSpec) else StoreSpec.parse(store)
    record = _record(spec, collection)
    docstore, counts = record.load_docstore(), record.rows()
    interrupted = set(replay(Journal(record).entries(), docstore, counts))
    folders = load_folders(record)
    summaries: dict[str, str] = {}
    with open_store(spec, collection, create=False, empty_ok=True, recorded_kind=record.store_kind()) as opened:
        rows = opened.document_rows(summaries)
    ids = sorted(set(docstore.get_all_document_hashes().values()) | interrupted)
    documents = []
    for doc_id in ids:
        path = document_path(doc_id, folders)
        documents.append(ListedDocument(doc_id, str(path) if path is not None else None, rows.get(doc_id, 0),
                                        counts.get(doc_id), summaries.get(doc_id), doc_id in interrupted))
    return Listing(folders, documents)


@dataclass
class Removal:
    """What :func:`remove` did: the documents removed, their rows deleted from the store, the labels dropped."""

    documents: list[str] = field(default_factory=list)
    rows: int = 0
    labels: list[str] = field(default_factory=list)


_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})|\\U([0-9a-fA-F]{8})")


def _decomposed(char: str) -> bool:
    """A character NFC would join to the one before it: a combining mark, or a Hangul jamo."""
    return bool(unicodedata.combining(char)) or unicodedata.category(char).startswith("M") or (
        "\u1100" <= char <= "\u11ff")


def shown_id(doc_id: str) -> str:
    """``doc_id`` as ``ls`` prints it: as it is when it is NFC; otherwise its combining characters written as
    ``\\uXXXX`` and its form marked (``cafe\\u0301.txt (NFD)``, ``... (not NFC)``), so that twins look different."""
    if unicodedata.is_normalized("NFC", doc_id):
        return doc_id
    text = "".join(f"\\u{ord(c):04x}" if _decomposed(c) else c for c in doc_id)
    return f"{text} ({'NFD' if unicodedata.is_normalized('NFD', doc_id) else 'not NFC'})"


def escaped_id(doc_id: str) -> str:
    """``doc_id`` with every character outside ASCII written as ``\\uXXXX`` (``\\UXXXXXXXX``): a spelling that names
    exactly one of two twins, and that :func:`remove` accepts."""
    return "".join(c if c.isascii() else (f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}")
                   for c in doc_id)


def _matches(key: str, ids: Sequence[str]) -> list[str]:
    return [d for d in ids if d == key or d.startswith(key + "/")]


def _chosen(target: str, ids: Sequence[str]) -> list[str]:
    """The documents ``target`` names (an id, or a folder inside a label): exactly, when it is written with
    ``\\u`` escapes or no document differs from it only in normalisation; else the documents equal to it up to NFC
    when they are not twins of each other.

    Raises:
        IngestError: the target matches twins (names equal up to normalisation): all of them are named.
    """
    key = target.strip().rstrip("/")
    if _ESCAPE.search(key) and not _matches(key, ids):  # a literal backslash in a name wins over an escape
        return _matches(_ESCAPE.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), key), ids)
    exact = _matches(key, ids)
    folded = unicodedata.normalize("NFC", key)
    nfc = {d: unicodedata.normalize("NFC", d) for d in ids}
    alike = [d for d in ids if nfc[d] == folded or nfc[d].startswith(folded + "/")]  # linear in the ids
    if set(alike) == set(exact):
        return exact
    if not exact and len(alike) == len({nfc[d] for d in alike}):
        return alike  # written in another form than the only document of that name
    raise IngestError(f"nothing removed: {target!r} names documents whose names differ only in Unicode normalisation "
                      f"(NFC/NFD): {', '.join(escaped_id(d) for d in alike[:6])}{' ...' if len(alike) > 6 else ''}; "
                      "name one exactly as written here (\\u escapes are accepted)")


def remove(targets: Sequence[str], store: StoreSpec | str, collection: str = "llama-sac") -> Removal:
    """Remove the documents ``targets`` name (module docstring); a label none of whose documents is left is dropped.

    Raises:
        IngestError: no target, a target that names no document and no label (then nothing is removed), no ingest
            record, another ``ingest``/``rm`` writing the collection, or a store that cannot be opened or written.
    """
    if not targets:
        raise IngestError("no TARGET given: name documents (see llama-sac ls) or folder labels to remove")
    spec = store if isinstance(store, StoreSpec) else StoreSpec.parse(store)
    record = _record(spec, collection)
    journal = Journal(record)
    out = Removal()
    with record.lock(), open_store(spec, collection, create=False, empty_ok=True,
                                   recorded_kind=record.store_kind(), writes=True) as opened:
        docstore, counts = record.load_docstore(), record.rows()
        interrupted = replay(journal.entries(), docstore, counts)
        folders = load_folders(record)
        ids = sorted(set(docstore.get_all_document_hashes().values()) | set(interrupted))
        chosen: dict[str, None] = {}
        unknown = []
        for target in targets:
            key = target.strip().rstrip("/")
            found = _chosen(target, ids)
            if not found and key not in folders:
                unknown.append(target)
            chosen.update(dict.fromkeys(found))
        if unknown:
            raise IngestError(f"nothing removed: no document or folder label {', '.join(map(repr, unknown))} in "
                              f"collection {collection!r} of {spec} (llama-sac ls lists them)")
        before = opened.count_rows()
        for doc_id in chosen:
            journal.append(write=doc_id)
            opened.vector_store.delete(doc_id)
            docstore.delete_document(doc_id, raise_error=False)
            docstore.delete_ref_doc(doc_id, raise_error=False)
            counts.pop(doc_id, None)
            journal.append(forget=doc_id)
        out.documents = list(chosen)
        out.rows = before - opened.count_rows()
        left = set(ids) - set(chosen)
        for target in targets:
            key = target.strip().rstrip("/")
            if key in folders and not any(d.startswith(key + "/") for d in left):
                del folders[key]
                out.labels.append(key)
        save_folders(record, folders)
        record.save_rows(counts)
        record.save_docstore(docstore)
        journal.clear()
        for doc_id in interrupted:  # still to be written again by the next ingest
            if doc_id not in chosen:
                journal.append(write=doc_id)
        bump_generation(record)  # a running serve reopens the collection
    return out
