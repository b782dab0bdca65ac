"""The vector store of ``llama-sac ingest``/``query``: what a folder holds, opening it, its errors, its rows.

* :func:`check_store_folder`: before any client is created, the folder must be a store of the kind asked for (or,
  for ``ingest``, missing, empty or a plain folder to create it in); a store of the other kind, or another kind than
  the ingest record names, is refused. ``query`` only reads: a folder that is not a complete store of that kind is
  refused without opening it, so nothing is ever created there. What marks a store: Chroma's
  ``chroma.sqlite3`` (``chromadb.PersistentClient``); Qdrant local mode's ``meta.json`` (its collections) with
  ``collection/<name>/storage.sqlite`` for each (``QdrantClient(path=...)``; it also keeps a ``.lock`` file there).
* :func:`open_store`: the collection's LlamaIndex vector store (``ChromaVectorStore`` / ``QdrantVectorStore``; a
  Chroma server through ``chromadb.HttpClient``, with no folder to check), its
  row count and its rows per document; the client is always closed again (Qdrant's local mode locks its folder).
  The stores' own errors (a damaged database file, a full disk), raised while opening, reading or writing, become one
  :class:`~llama_index_sac.apps.ingest.files.IngestError` naming the store and the cause, chosen by exception type.
* :func:`check_rows`: the ingest record is a cache of what the store holds; this compares the two (the recorded row
  count of every document against the store's) and names the documents whose rows are missing, so that ``ingest``
  writes them again instead of trusting the record.
"""

from __future__ import annotations

import pickle
import sqlite3
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llama_index.core.vector_stores.types import BasePydanticVectorStore

from llama_index_sac._json_io import PersistedFileError, read_json
from llama_index_sac._util import require_extra
from llama_index_sac.apps.ingest.chroma_check import check_chroma_index
from llama_index_sac.apps.ingest.chroma_digest import recorded_index, verify_index
from llama_index_sac.apps.ingest.files import IngestError, IngestRecord, StoreSpec, check_collection
from llama_index_sac.apps.ingest.qdrant_check import check_qdrant_points

__all__ = ["OpenedStore", "RowCheck", "check_rows", "check_store_folder", "open_store", "store_errors",
           "store_kinds"]

_MARKERS = {"chroma": "chroma.sqlite3", "qdrant": "meta.json"}
#: Seconds a Chroma server may take to answer one request (and to accept a connection: at most 10) before the
#: command gives up with one error; chromadb's ``HttpClient`` alone waits for ever on a server that stopped answering.
CHROMA_HTTP_TIMEOUT_S = 120.0
_PAGE = 1000  # rows per read when counting rows per document
_META_MAX_BYTES = 16 << 20  # a Qdrant meta.json: a few hundred bytes per collection


def store_kinds(path: Path) -> list[str]:
    """The kinds of store whose files ``path`` holds (``[]``: none; both after a client of each was opened there)."""
    return [kind for kind, marker in _MARKERS.items() if (path / marker).is_file()]


def check_store_folder(spec: StoreSpec, recorded_kind: str | None, *, create: bool) -> None:
    """Refuse a folder that is not a store of ``spec.kind`` before any client opens it (module docstring).

    Args:
        spec: the store asked for.
        recorded_kind: the kind the collection's ingest record names (``None``: no record, or an older one).
        create: ``ingest`` (a missing, empty or plain folder is fine: the store is created there) or ``query``
            (the folder must hold a complete store of that kind).

    Raises:
        IngestError: the folder is a file, holds the other kind of store, the record names the other kind, or
            (``create=False``) it is missing, is not a store of that kind, or is a damaged Qdrant store.
    """
    path, other = spec.path, "qdrant" if spec.kind == "chroma" else "chroma"
    if spec.url is not None:  # a Chroma server: no folder to check; its record must be one of a Chroma server's
        if recorded_kind is not None and recorded_kind != spec.kind:
            raise IngestError(f"--state-dir: {path} holds the ingest record of a {recorded_kind} store, not of "
                              f"{spec}: use another --state-dir")
        return
    if path.exists() and not path.is_dir():
        raise IngestError(f"--vector-store: {path} is not a directory")
    if recorded_kind is not None and recorded_kind != spec.kind:
        raise IngestError(f"--vector-store: {path} holds a {recorded_kind} store (its ingest record says so), not a "
                          f"{spec.kind} one: use {recorded_kind}:{path}")
    if not path.is_dir():
        if create:
            return
        raise IngestError(f"--vector-store: {path} does not exist (nothing was ingested there)")
    kinds = store_kinds(path)
    if spec.kind not in kinds and other in kinds:
        raise IngestError(f"--vector-store: {path} holds a {other} store, not a {spec.kind} one: use {other}:{path}")
    if spec.kind == "qdrant" and (path / "meta.json").exists():
        _qdrant_collections(spec)  # before the client parses it
    if create:
        return
    marker = path / _MARKERS[spec.kind]
    if spec.kind not in kinds or marker.stat().st_size == 0:
        raise IngestError(f"--vector-store: {path} is not a {spec.kind} store (no {marker.name}"
                          f"{' with data' if marker.is_file() else ''}): nothing was ingested there")
    if spec.kind == "qdrant":
        _check_qdrant_files(spec)


def _qdrant_collections(spec: StoreSpec) -> dict[str, Any]:
    """The collections of a Qdrant store's ``meta.json``, read by the bounded reader (a regular file of at most
    :data:`_META_MAX_BYTES`, nested at most 64 levels, an object whose ``collections`` is an object of objects)."""
    meta_path = spec.path / "meta.json"
    try:
        meta = read_json(meta_path, expect=dict, max_bytes=_META_MAX_BYTES)
    except (OSError, PersistedFileError) as exc:
        problem = exc.problem if isinstance(exc, PersistedFileError) else f"cannot be read ({exc})"
        raise IngestError(f"the qdrant store {spec.path} is damaged: its meta.json {problem}; restore it from a "
                          "copy, or delete the folder and ingest again to rebuild it") from None
    collections = meta.get("collections")
    if not isinstance(collections, dict) or not all(isinstance(c, dict) for c in collections.values()):
        raise IngestError(f"the qdrant store {spec.path} is damaged: its meta.json lists no collections; "
                          "delete the folder and ingest again to rebuild it")
    return collections


def _check_qdrant_files(spec: StoreSpec) -> None:
    """Qdrant's local client creates the storage of every collection its ``meta.json`` lists when it is missing:
    for ``query``, each must be there already."""
    for name in _qdrant_collections(spec):
        storage = spec.path / "collection" / str(name) / "storage.sqlite"
        if not storage.is_file() or storage.stat().st_size == 0:
            raise IngestError(f"the qdrant store {spec.path} is damaged: collection {name!r} has no "
                              f"{storage.relative_to(spec.path)}; delete the folder and ingest again to rebuild it")


def store_errors(kind: str) -> tuple[type[BaseException], ...]:
    """The exception types a store's client raises while reading or writing a damaged or unwritable store."""
    if kind == "chroma-http":  # the server's errors, and the HTTP client's when it is down or unreachable
        httpx = require_extra("httpx", "vectorstores", "the chroma server")
        return (*store_errors("chroma"), httpx.HTTPError)
    if kind == "chroma":
        chroma_errors = require_extra("chromadb.errors", "vectorstores", "the chroma vector store")
        return (chroma_errors.ChromaError, sqlite3.Error)
    return (sqlite3.Error,)


#: What ``QdrantClient(path=...)`` raises on damaged files: sqlite3 errors (``storage.sqlite``), JSON and pydantic
#: errors (``meta.json``, both ``ValueError``), a ``meta.json`` of another shape, points that do not unpickle.
_QDRANT_OPEN_ERRORS = (sqlite3.Error, ValueError, TypeError, KeyError, AttributeError, pickle.UnpicklingError,
                       EOFError, OSError)


def _store_error(spec: StoreSpec, exc: BaseException, doing: str) -> IngestError:
    first = (str(exc).strip().splitlines() or [""])[0]
    if spec.url is not None:
        return IngestError(f"the chroma server {spec.url} cannot be {doing} ({type(exc).__name__}: {first}); is "
                           f"it running (chroma run --path DIR --host HOST --port PORT) and reachable from here?")
    return IngestError(f"the {spec.kind} store {spec.path} cannot be {doing} ({type(exc).__name__}: {first}); "
                       "restore it from a copy, or delete the folder and ingest again to rebuild it")


@dataclass
class OpenedStore:
    """An open collection: its LlamaIndex vector store, its number of rows on opening, a counter of its rows now,
    a reader of its rows per document (``{ref_doc_id: rows}``, every row read once; given a dict, it also
    fills it with each document's summary, ``document_summary``) and, for a Chroma store whose vector index could not
    be compared with its recorded checksums, the note that says why
    (:func:`~llama_index_sac.apps.ingest.chroma_digest.verify_index`)."""

    vector_store: BasePydanticVectorStore
    rows: int
    count_rows: Callable[[], int]
    document_rows: Callable[..., Counter[str]]
    unverified: str | None = None


def _count(metadatas: Any, counts: Counter[str], summaries: dict[str, str] | None = None) -> int:
    for meta in metadatas or []:
        meta = meta or {}
        doc_id = str(meta.get("ref_doc_id") or meta.get("doc_id") or "")
        counts[doc_id] += 1
        if summaries is not None and isinstance(meta.get("document_summary"), str):
            summaries.setdefault(doc_id, meta["document_summary"])
    return len(metadatas or [])


@contextmanager
def open_store(spec: StoreSpec, collection: str, *, create: bool, empty_ok: bool = False,
               recorded_kind: str | None = None, writes: bool | None = None) -> Iterator[OpenedStore]:
    """The collection, open for the block; the client is closed when the block ends.

    Args:
        spec: the store.
        collection: the collection name (see :func:`~llama_index_sac.apps.ingest.files.check_collection`).
        create: create the directory and the collection if missing (``ingest``); else both must exist and nothing is
            created (``query``).
        empty_ok: with ``create=False``, a missing Qdrant collection is an empty one (its ingest record lists it:
            ``QdrantVectorStore`` creates the collection with its first row, and no file gave one).
        recorded_kind: the kind of store the collection's ingest record names (see :func:`check_store_folder`).
        writes: the block writes the collection (default: ``create``), holding the record's lock. A Chroma store's
            vector index is compared with the checksums of its ingest record before the client opens it, and a
            writer's are recorded anew once its client is closed (:mod:`~llama_index_sac.apps.ingest.chroma_digest`).

    Raises:
        IngestError: see :func:`check_store_folder`; the collection is missing (``create=False``); the directory is
            in use by another process (Qdrant's lock); a Chroma vector index that is damaged or differs from its
            recorded checksums; the store cannot be opened, read or written (its client's error, by type: a damaged
            database file, a full disk), raised in the block too.
        ImportError: the ``vectorstores`` extra is not installed.
    """
    check_collection(collection)
    check_store_folder(spec, recorded_kind, create=create)
    what = f"the {spec.kind} vector store"
    errors = store_errors(spec.kind)
    open_errors: tuple[type[BaseException], ...] = (*errors, ValueError, OSError)
    if spec.kind in ("chroma", "chroma-http"):
        unverified: str | None = None
        recording: AbstractContextManager[Callable[[], None]] = nullcontext(lambda: None)
        if spec.kind == "chroma":
            check_chroma_index(spec, collection)  # before hnswlib reads a damaged index (or finds none)
            record = IngestRecord(spec, collection)
            written = create if writes is None else writes
            unverified = verify_index(record, spec, collection, writer=written)
            if written:
                recording = recorded_index(record, spec, collection)
        with recording as start:  # a writer's checksums: recorded once the client below is closed
            yield from _chroma(spec, collection, create, what, errors, open_errors, unverified, start)
        return
    qdrant_client = require_extra("qdrant_client", "vectorstores", what)
    qdrant = require_extra("llama_index.vector_stores.qdrant", "vectorstores", what)
    if (spec.path / "meta.json").is_file():  # every row a plain point before the client unpickles them
        check_qdrant_points(spec, [str(name) for name in _qdrant_collections(spec)])
    try:
        qclient = qdrant_client.QdrantClient(path=str(spec.path))
    except RuntimeError as exc:  # "Storage folder ... is already accessed by another instance of Qdrant client"
        raise IngestError(f"--vector-store: {spec.path} is in use by another process ({exc})") from None
    except _QDRANT_OPEN_ERRORS as exc:
        raise _store_error(spec, exc, "opened") from exc
    try:
        exists = qclient.collection_exists(collection)
        if not create and not exists and not empty_ok:
            raise IngestError(_missing(spec, collection, [c.name for c in qclient.get_collections().collections]))

        def qdrant_count() -> int:
            return int(qclient.count(collection).count) if qclient.collection_exists(collection) else 0

        def qdrant_rows(summaries: dict[str, str] | None = None) -> Counter[str]:
            counts: Counter[str] = Counter()
            offset = None
            for _ in range(qdrant_count() // _PAGE + 2):  # bounded: the rows now, and one more page
                if not qclient.collection_exists(collection):
                    break
                points, offset = qclient.scroll(collection, limit=_PAGE, offset=offset,
                                                with_payload=["ref_doc_id", "doc_id", "document_summary"],
                                                with_vectors=False)
                _count([p.payload for p in points], counts, summaries)
                if offset is None:
                    break
            return counts

        store = qdrant.QdrantVectorStore(collection_name=collection, client=qclient)
        yield OpenedStore(store, int(qclient.count(collection).count) if exists else 0, qdrant_count, qdrant_rows)
    except errors as exc:
        raise _store_error(spec, exc, "read or written") from exc
    finally:
        qclient.close()


def _chroma(spec: StoreSpec, collection: str, create: bool, what: str, errors: tuple[type[BaseException], ...],
            open_errors: tuple[type[BaseException], ...], unverified: str | None,
            start: Callable[[], None]) -> Iterator[OpenedStore]:
    """The body of :func:`open_store` for Chroma (embedded or a server): the client opened, ``start`` called, the
    collection yielded, the client closed."""
    chromadb = require_extra("chromadb", "vectorstores", what)
    chroma = require_extra("llama_index.vector_stores.chroma", "vectorstores", what)
    options = chromadb.Settings(anonymized_telemetry=False)
    try:
        if spec.url is not None:
            host, port = spec.host_port
            _heartbeat(spec.url)  # the client's own first requests have no timeout
            client = chromadb.HttpClient(host=host, port=port, settings=options)
            _bounded_waits(client)
        else:
            client = chromadb.PersistentClient(path=str(spec.path), settings=options)
    except open_errors as exc:
        _forget_failed_chroma(str(spec.path))
        raise _store_error(spec, exc, "opened") from exc
    try:
        try:
            names = [getattr(c, "name", c) for c in client.list_collections()]
            if not create and collection not in names:
                raise IngestError(_missing(spec, collection, names))
            found = (client.get_or_create_collection(collection, metadata={"hnsw:space": "cosine"}) if create
                     else client.get_collection(collection))
            rows = int(found.count())
        except IngestError:
            raise
        except open_errors as exc:
            raise _store_error(spec, exc, "opened") from exc

        def chroma_count() -> int:
            return int(found.count())

        def chroma_rows(summaries: dict[str, str] | None = None) -> Counter[str]:
            counts: Counter[str] = Counter()
            for page in range(chroma_count() // _PAGE + 2):  # bounded: the rows now, and one more page
                got = found.get(include=["metadatas"], limit=_PAGE, offset=page * _PAGE)
                if _count(got["metadatas"], counts, summaries) < _PAGE:
                    break
            return counts

        start()  # a writer's record says "writing" from here
        yield OpenedStore(chroma.ChromaVectorStore(chroma_collection=found), rows, chroma_count, chroma_rows,
                          unverified)
    except errors as exc:  # raised in the block: reading or writing the store
        raise _store_error(spec, exc, "read or written") from exc
    finally:
        client.close()


def _timeout() -> Any:
    httpx = require_extra("httpx", "vectorstores", "the chroma server")
    return httpx.Timeout(CHROMA_HTTP_TIMEOUT_S, connect=min(10.0, CHROMA_HTTP_TIMEOUT_S))


def _heartbeat(url: str) -> None:
    """Ask the Chroma server at ``url`` for its heartbeat, within :data:`CHROMA_HTTP_TIMEOUT_S`.

    Raises:
        httpx.HTTPError: no answer in time, no server there, or an error status.
    """
    httpx = require_extra("httpx", "vectorstores", "the chroma server")
    httpx.get(f"{url}/api/v2/heartbeat", timeout=_timeout()).raise_for_status()


def _bounded_waits(client: Any) -> None:
    """Give the HTTP session of a ``chromadb.HttpClient`` the timeouts of :data:`CHROMA_HTTP_TIMEOUT_S` (chromadb
    creates it with none and has no option for it; if a release moves the session, this does nothing)."""
    session = getattr(getattr(client, "_server", None), "_session", None)
    if session is not None and hasattr(session, "timeout"):
        session.timeout = _timeout()


def _forget_failed_chroma(path: str) -> None:
    """chromadb caches one ``System`` per path and keeps it when it failed to start (a damaged ``chroma.sqlite3``):
    every later client of that path in this process would fail with an ``AttributeError``. Drop it when no client
    uses it, so that a repaired store opens again without restarting the process."""
    shared = sys.modules.get("chromadb.api.shared_system_client")
    cache = getattr(shared, "SharedSystemClient", None)
    # private attributes of chromadb: if a release renames them, this does nothing (the store still reports its error)
    refcounts = getattr(cache, "_identifier_to_refcount", None)
    systems = getattr(cache, "_identifier_to_system", None)
    if isinstance(refcounts, dict) and isinstance(systems, dict) and not refcounts.get(path):
        systems.pop(path, None)


def _missing(spec: StoreSpec, collection: str, names: list[str]) -> str:
    found = ", ".join(sorted(names)) if names else "none"
    return f"--collection: {spec} has no collection {collection!r} (collections: {found})"


@dataclass
class RowCheck:
    """What :func:`check_rows` found: the documents to write again (``repair``: recorded with rows the store does not
    hold as recorded, or holding rows the record does not list), the store's rows of each (``store_rows``, empty
    when the fast check passed) and, when something is wrong, the warning line that says so."""

    repair: set[str] = field(default_factory=set)
    store_rows: Counter[str] = field(default_factory=Counter)
    warning: str | None = None


def check_rows(spec: StoreSpec, opened: OpenedStore, recorded: list[str], counts: dict[str, int]) -> RowCheck:
    """Compare the ingest record with the store.

    Args:
        spec: the store (for the warning).
        opened: the open collection.
        recorded: the document ids of the docstore.
        counts: rows per document as recorded (updated in place: a document of an older record, without a count,
            gets the store's count when the store holds rows of it).

    Returns:
        Nothing to repair when every recorded document has a count and they add up to the store's rows (no row is
        read); else the store's rows per document are read once and compared.
    """
    if all(doc_id in counts for doc_id in recorded) and sum(counts[d] for d in recorded) == opened.count_rows():
        return RowCheck()
    store = opened.document_rows()
    missing = set()
    for doc_id in recorded:
        if doc_id not in counts and store.get(doc_id, 0) > 0:
            counts[doc_id] = store[doc_id]  # an older record: the store's rows are taken as recorded
        elif store.get(doc_id, 0) != counts.get(doc_id, 0) or doc_id not in counts:
            missing.add(doc_id)
    unknown = set(store) - set(recorded) - {""}
    check = RowCheck(repair=missing | unknown, store_rows=store)
    if missing:
        found = sum(store.get(d, 0) for d in missing)
        held = (f"{found} of their {sum(counts[d] for d in missing)} rows" if all(d in counts for d in missing)
                else f"{found} row(s) of them")
        check.warning = (f"{spec} does not hold the rows its ingest record lists for {len(missing)} of {len(recorded)} "
                         f"document(s) (it holds {held}): they are ingested again")
    if unknown:
        check.warning = ((check.warning + "; it also") if check.warning else f"{spec}") + (
            f" holds rows of {len(unknown)} document(s) its ingest record does not list: they are replaced when "
            "their files are ingested")
    return check
