"""The input files, the vector store and the ingest record of ``llama-sac ingest``/``query``.

* :func:`read_file`: one file (found by :func:`~llama_index_sac.apps.ingest.walk.find_files`) in, a LlamaIndex
  ``Document`` out (``.txt``/``.md`` as strict UTF-8; ``.pdf``/``.docx`` page by page,
  :mod:`~llama_index_sac.apps.ingest.readers`, regular files only and within limits); one document per file, its id
  given by the caller (``ingest``: the folder label and the path inside the folder,
  :mod:`~llama_index_sac.apps.ingest.identity`), its metadata the stable part of LlamaIndex's file metadata (and a
  PDF's or DOCX's page table, :mod:`~llama_index_sac.apps.ingest.pages`).
* :class:`StoreSpec`: ``chroma:DIR`` (``chromadb.PersistentClient``, embedded), ``qdrant:DIR`` (``QdrantClient``
  local mode) or ``chroma-http://HOST:PORT`` (a Chroma server, ``chromadb.HttpClient``, whose ingest record lives in a
  local state directory); opened by :mod:`~llama_index_sac.apps.ingest.store`.
* :class:`IngestRecord`: ``DIR/.llama-sac-docstore/<collection>/`` holds what the next run needs: ``docstore.json``
  (LlamaIndex's ``SimpleDocumentStore``: one hash per document, no texts), ``settings.json`` (the settings the
  collection was built with: parser, summary and embedding model, and the kind of store, ``chroma`` or ``qdrant``),
  ``rows.json`` (the rows written for each document, to check that the store still holds them); beside them
  ``folders.json`` (:mod:`~llama_index_sac.apps.ingest.identity`), ``journal.jsonl`` (the documents committed
  since, :mod:`~llama_index_sac.apps.ingest.journal`) and, for a Chroma store, ``chroma-index.json`` (the checksums
  of its vector index files, :mod:`~llama_index_sac.apps.ingest.chroma_digest`). ``pending.json`` (new documents of
  an unfinished round) is only read, from records of earlier versions. Records written before ``rows.json`` and the
  store kind existed are read as they are.
"""

from __future__ import annotations

import json
import mimetypes
import os
import re
import stat
import urllib.parse
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from llama_index.core.schema import Document
from llama_index.core.storage.docstore import SimpleDocumentStore

from llama_index_sac._json_io import PersistedFileError, read_json
from llama_index_sac.apps.ingest.pages import paged_document
from llama_index_sac.apps.ingest.pdf_text import pdf_text
from llama_index_sac.apps.ingest.readers import Unreadable, docx_text, pdf_pages, read_limited, shown

__all__ = ["COLLECTION_PATTERN", "MAX_FILE_BYTES", "MAX_PAGES", "PLAIN_SUFFIXES", "RECORD_DIR",
           "SUFFIXES", "IngestError", "IngestRecord", "StoreSpec", "Unreadable", "check_collection",
           "default_state_dir", "read_file", "why_unreadable"]

#: Read as plain UTF-8 text, always; the exact file content is the document (offsets point into it).
PLAIN_SUFFIXES = (".txt", ".md")
#: Every suffix read (``.pdf`` with pypdf, ``.docx`` with python-docx: the ``documents`` extra).
SUFFIXES = (*PLAIN_SUFFIXES, ".pdf", ".docx")
#: Default limits of one file: bytes read (and, for a DOCX, unpacked), and pages of a PDF or DOCX.
MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_PAGES = 2000

#: Collection names both stores accept: 3 to 128 characters of ``[A-Za-z0-9._-]``, starting and ending with a
#: letter or digit (Chroma's rule, within Qdrant's).
COLLECTION_PATTERN = r"^[A-Za-z0-9](?:[A-Za-z0-9_-]|\.(?!\.)){1,126}[A-Za-z0-9]$"
#: The folder, inside the store's directory, of the ingest records (one subfolder per collection).
RECORD_DIR = ".llama-sac-docstore"
#: The largest ingest record file read (bytes): a docstore of a million documents is about 200 MB.
RECORD_MAX_BYTES = 256 << 20
_FORMAT = 1


class IngestError(ValueError):
    """Bad input to ``ingest``/``query`` (a path, a store, a setting): the message names it; nothing was written."""


def _short(value: Any) -> str:
    """A JSON value for a message: at most 40 characters."""
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= 40 else text[:37] + "..."


def _damaged(path: Path, problem: str) -> IngestError:
    return IngestError(f"the ingest record {path} {problem}: it is damaged; delete the store's directory (or "
                       "ingest into a new --vector-store) to rebuild it")


@dataclass(frozen=True)
class StoreSpec:
    """Where the vector store lives: ``kind`` (``"chroma"``, ``"qdrant"`` or ``"chroma-http"``) and an absolute
    directory: the store's own for the embedded stores; for a Chroma server (``url``), the local state directory that
    holds the ingest record (:func:`default_state_dir` unless given)."""

    kind: Literal["chroma", "qdrant", "chroma-http"]
    path: Path
    url: str | None = None

    @classmethod
    def parse(cls, spec: str, state_dir: str | os.PathLike[str] | None = None) -> StoreSpec:
        """``"chroma:DIR"``, ``"qdrant:DIR"`` (``~`` expanded, made absolute) or ``"chroma-http://HOST:PORT"`` (a
        Chroma server, ``chroma run``; its ingest record in ``state_dir``).

        Raises:
            IngestError: another form, an unknown kind, an empty directory, a URL without host or port, or
                ``state_dir`` with an embedded store.
        """
        spec = str(spec)
        if spec.startswith(_HTTP_PREFIX):
            host, port = _host_port(spec)
            state = state_dir if state_dir is not None else default_state_dir(host, port)
            return cls("chroma-http", Path(os.path.abspath(os.path.expanduser(state))), f"http://{host}:{port}")
        kind, sep, rest = spec.partition(":")
        if not sep or kind not in ("chroma", "qdrant") or not rest.strip():
            raise IngestError(f"--vector-store: expected chroma:DIR, qdrant:DIR or {_HTTP_PREFIX}HOST:PORT, "
                              f"got {spec!r}")
        if state_dir is not None:
            raise IngestError(f"--state-dir applies to {_HTTP_PREFIX}HOST:PORT stores (an embedded store keeps its "
                              "ingest record in its own folder)")
        path = Path(os.path.abspath(os.path.expanduser(rest)))
        return cls("chroma" if kind == "chroma" else "qdrant", path)

    @property
    def host_port(self) -> tuple[str, int]:
        """A Chroma server's host and port."""
        assert self.url is not None
        host, _, port = self.url.removeprefix("http://").rpartition(":")
        return host.strip("[]"), int(port)

    def __str__(self) -> str:
        return f"{_HTTP_PREFIX}{self.url.removeprefix('http://')}" if self.url else f"{self.kind}:{self.path}"


_HTTP_PREFIX = "chroma-http://"


def _host_port(spec: str) -> tuple[str, int]:
    try:
        parts = urllib.parse.urlsplit("http://" + spec.removeprefix(_HTTP_PREFIX))
        host, port = parts.hostname, parts.port
    except ValueError:
        host = port = None
    if not host or port is None or parts.path.strip("/") or parts.query or parts.username:
        raise IngestError(f"--vector-store: expected {_HTTP_PREFIX}HOST:PORT (a Chroma server, chroma run), "
                          f"got {spec[:200]!r}")
    return (f"[{host}]" if ":" in host else host), port


def default_state_dir(host: str, port: int) -> Path:
    """Where the ingest record of a Chroma server's collections lives unless ``--state-dir`` says otherwise:
    ``$XDG_STATE_HOME/llama-sac/chroma-http-HOST-PORT`` (``~/.local/state`` when ``XDG_STATE_HOME`` is unset)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base, "llama-sac", f"chroma-http-{host.strip('[]').replace(':', '_')}-{port}")


def check_collection(name: str) -> str:
    """``name`` if both stores accept it as a collection name.

    Raises:
        IngestError: see :data:`COLLECTION_PATTERN`.
    """
    if not isinstance(name, str) or not re.fullmatch(COLLECTION_PATTERN, name):
        raise IngestError(f"--collection: {name!r} is not a valid collection name (3 to 128 characters: letters, "
                          "digits, '.', '_', '-', starting and ending with a letter or digit)")
    return name


class IngestRecord:
    """``DIR/.llama-sac-docstore/<collection>/``: the docstore, the settings and the pending list (module docstring).

    Every file is written to a temporary name and renamed into place, so a crash leaves the previous version.
    """

    def __init__(self, spec: StoreSpec, collection: str) -> None:
        self.directory = spec.path / RECORD_DIR / check_collection(collection)
        self.docstore_path = self.directory / "docstore.json"
        self.settings_path = self.directory / "settings.json"
        self.pending_path = self.directory / "pending.json"
        self.rows_path = self.directory / "rows.json"

    def _read_json(self, path: Path, expect: type) -> Any:
        """The JSON value of a record file (``None`` when it is missing), read by the bounded reader."""
        try:
            return read_json(path, expect=expect, max_bytes=RECORD_MAX_BYTES)
        except FileNotFoundError:
            return None
        except PersistedFileError as exc:
            raise _damaged(path, exc.problem) from None

    def _write_json(self, path: Path, value: Any) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(value, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold ``lock`` in the record folder for the block, so that two ``ingest`` runs never write one collection
        at once (an advisory ``flock``, released by the system if the process dies; not available on Windows).
        When the block fails before anything but the lock was written in folders it created (a store that cannot be
        opened), those folders are removed again: a failed run leaves nothing behind.

        Raises:
            IngestError: another process holds it.
        """
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            yield
            return
        created = [d for d in (self.directory.parent.parent, self.directory.parent, self.directory) if not d.exists()]
        self.directory.mkdir(parents=True, exist_ok=True)
        lock = self.directory / "lock"
        with open(lock, "a+b") as handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise IngestError(f"another llama-sac ingest is writing to {self.directory.parent.parent} "
                                  f"(collection {self.directory.name!r}): wait for it to finish") from None
            try:
                yield
            except BaseException:
                if created and [p.name for p in self.directory.iterdir()] == ["lock"]:  # failed before writing
                    lock.unlink()
                    for folder in reversed(created):
                        if not any(folder.iterdir()):
                            folder.rmdir()
                raise
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def ingest_running(self) -> bool:
        """Whether an ``ingest`` holds :meth:`lock` now (tested with a shared lock taken and released at once;
        nothing is created: ``False`` when there is no lock file)."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            return False
        try:
            handle = open(self.directory / "lock", "rb")  # noqa: SIM115 - closed below
        except OSError:
            return False
        with handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
            return False

    def exists(self) -> bool:
        return self.settings_path.is_file()

    def check(self) -> None:
        """Read every file of the record once, so that a damaged one is refused before a store is opened.

        Raises:
            IngestError: a record file is not a regular file, too large, not JSON, or not of its shape.
        """
        self.settings()
        self.load_docstore()
        self.rows()
        self.pending()

    def settings(self) -> dict[str, Any] | None:
        """What ``settings.json`` holds (``None`` before the first run): ``format``, ``settings`` (an object),
        ``embed_model_name`` (a string or null) and, in newer records, ``store`` (``chroma`` or ``qdrant``).

        Raises:
            IngestError: the file is not a regular file, too large, not JSON, or not of that shape.
        """
        value = self._read_json(self.settings_path, dict)
        if value is None:
            return None
        if value.get("format") != _FORMAT:
            raise _damaged(self.settings_path, f"has an unknown format ({_short(value.get('format'))})")
        if not isinstance(value.get("settings"), dict):
            raise _damaged(self.settings_path, f"has no settings object (settings: {_short(value.get('settings'))})")
        if not isinstance(value.get("embed_model_name"), (str, type(None))):
            raise _damaged(self.settings_path, "has an embed_model_name that is not a string")
        if value.get("store") not in (None, "chroma", "qdrant", "chroma-http"):
            raise _damaged(self.settings_path, f"names an unknown kind of store ({_short(value.get('store'))})")
        return value

    def write_settings(self, value: dict[str, Any]) -> None:
        self._write_json(self.settings_path, {"format": _FORMAT, **value})

    def load_docstore(self) -> SimpleDocumentStore:
        """The saved docstore, or an empty one before the first run."""
        value = self._read_json(self.docstore_path, dict)
        if value is None:
            return SimpleDocumentStore()
        for name, entries in value.items():  # SimpleKVStore's layout: {collection: {key: {field: value}}}
            if not isinstance(entries, dict) or not all(isinstance(entry, dict) for entry in entries.values()):
                raise _damaged(self.docstore_path, f"is not a LlamaIndex docstore ({_short(name)} is not an object "
                                                   "of objects)")
            if name.endswith("/metadata") and not all(isinstance(e.get("doc_hash", ""), str) for e in entries.values()):
                raise _damaged(self.docstore_path, "is not a LlamaIndex docstore (a doc_hash is not a string)")
        return SimpleDocumentStore.from_dict(value)

    def save_docstore(self, docstore: SimpleDocumentStore) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self.docstore_path.with_name(self.docstore_path.name + ".tmp")
        docstore.persist(str(tmp))
        os.replace(tmp, self.docstore_path)

    def store_kind(self) -> str | None:
        """The kind of store (``chroma``/``qdrant``) the record was written for (``None``: no record, or an older
        one that did not say)."""
        value = (self.settings() or {}).get("store")
        return str(value) if value is not None else None

    def rows(self) -> dict[str, int]:
        """The rows written for each document (``{}`` for records older than ``rows.json``)."""
        value = self._read_json(self.rows_path, dict)
        if value is not None and not all(type(v) is int and v >= 0 for v in value.values()):
            raise _damaged(self.rows_path, "has an unknown format (a row count is not a whole number)")
        return dict(value or {})

    def save_rows(self, rows: dict[str, int]) -> None:
        self._write_json(self.rows_path, rows)

    def pending(self) -> list[str]:
        """The document ids of an unfinished round of writes (``[]`` when the last run finished)."""
        value = self._read_json(self.pending_path, list)
        if value is not None and not all(isinstance(v, str) for v in value):
            raise _damaged(self.pending_path, "has an unknown format (a document id is not a string)")
        return list(value or [])

    def set_pending(self, doc_ids: list[str]) -> None:
        self._write_json(self.pending_path, doc_ids)

    def clear_pending(self) -> None:
        self.pending_path.unlink(missing_ok=True)


# -- input files -------------------------------------------------------------------------------------------------------
def _outside(path: Path, folders: Sequence[Path]) -> str | None:
    """Why ``path``, a link found in one of ``folders``, is not followed (its target lies outside), else None."""
    found = os.path.join(os.path.realpath(path.parent), path.name)  # where it was found, the folder's links resolved
    within = [f for f in folders if found.startswith(str(f) + os.sep)]
    if not within or not os.path.islink(path) or not os.path.exists(path):
        return None  # a broken link: read_limited says so
    target = os.path.realpath(path)
    if any(target.startswith(os.path.realpath(f) + os.sep) for f in within):
        return None
    return (f"a link to {shown(target)}, outside {shown(within[0])}: not followed (name the file itself to ingest "
            "it)")


def read_file(path: Path, max_file_bytes: int = MAX_FILE_BYTES, max_pages: int = MAX_PAGES,
              folders: Sequence[Path] = (), doc_id: str | None = None) -> Document:
    """The document of one file: id = ``doc_id`` (default its absolute path; also its ``file_path`` metadata), text =
    the file's text (``.txt``/``.md``: the exact content as strict UTF-8; ``.pdf``/``.docx``: the extracted text, with
    its page table when pages are known, :mod:`~llama_index_sac.apps.ingest.pages`), metadata = the stable file
    metadata.

    Args:
        path: the file (a link is followed when it was named, or when its target lies inside the folder of
            ``folders`` it was found in).
        max_file_bytes: the most bytes read from a file (for a DOCX also the most its ZIP unpacks to).
        max_pages: the most pages of a PDF or DOCX.
        folders: the folders given to the run (real paths).
        doc_id: the document's id (default: the absolute path).

    Raises:
        Unreadable: the file is not read; the message says why (readers.py: not a regular file, over a limit,
            not UTF-8, encrypted, damaged, no text layer, a link not followed, vanished, an unsupported type).
    """
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        raise Unreadable("its name is not valid UTF-8 (rename the file to ingest it)") from None
    why = _outside(path, folders)
    if why is not None:
        raise Unreadable(why, forget=True)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        try:
            mode = os.stat(path).st_mode
        except OSError:
            mode = stat.S_IFREG
        if not stat.S_ISREG(mode):
            read_limited(path, max_file_bytes)  # raises: names what it is
        raise Unreadable(f"not a file type llama-sac ingest reads ({', '.join(SUFFIXES)})")
    data = read_limited(path, max_file_bytes)
    doc_id = doc_id or str(path)
    meta: dict[str, Any] = {"file_path": doc_id, "file_name": path.name}
    file_type = mimetypes.guess_type(path.name)[0]
    if file_type:
        meta["file_type"] = file_type
    meta["file_size"] = len(data)
    if suffix in PLAIN_SUFFIXES:
        try:
            return Document(id_=doc_id, text=data.decode("utf-8"), metadata=meta)
        except UnicodeDecodeError as exc:
            raise Unreadable(f"not UTF-8 text ({exc})") from None
    try:
        if suffix == ".pdf":
            text, starts = pdf_text(pdf_pages(data, max_pages))
            return paged_document(doc_id, text, starts, meta)
        text, maybe = docx_text(data, max_file_bytes, max_pages)
        return paged_document(doc_id, text, maybe, meta)
    except ImportError as exc:
        raise Unreadable(f"{suffix} files need the documents extra (pip install 'llama-index-sac[documents]'; "
                         f"{exc})") from None


def why_unreadable(exc: BaseException) -> str:
    """One line: why a file could not be read."""
    if isinstance(exc, Unreadable):
        return str(exc)
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text ({exc})"
    cause = exc.__cause__ if exc.__cause__ is not None else exc
    return f"{type(cause).__name__}: {cause}"
