"""The input files, the vector store and the ingest record of ``llama-sac ingest``/``query``.

* :func:`find_files` / :func:`read_file`: folders and files in, LlamaIndex ``Document``s out (``.txt``/``.md`` as
  strict UTF-8; ``.pdf``/``.docx`` through ``SimpleDirectoryReader``'s readers when ``llama-index-readers-file`` is
  installed); one document per file, its id the absolute path, its metadata the stable part of LlamaIndex's file
  metadata.
* :class:`StoreSpec`: ``chroma:DIR`` (``chromadb.PersistentClient``, embedded), ``qdrant:DIR`` (``QdrantClient``
  local mode) or ``chroma-http://HOST:PORT`` (a Chroma server, ``chromadb.HttpClient``, whose ingest record lives in a
  local state directory); opened by :mod:`~llama_index_sac.apps.ingest.store`.
* :class:`IngestRecord`: ``DIR/.llama-sac-docstore/<collection>/`` holds what the next run needs: ``docstore.json``
  (LlamaIndex's ``SimpleDocumentStore``: one hash per document, no texts), ``settings.json`` (the settings the
  collection was built with: parser, summary and embedding model, and the kind of store, ``chroma`` or ``qdrant``),
  ``rows.json`` (the rows written for each document, to check that the store still holds them) and, while a round of
  writes is under way, ``pending.json`` (the ids of the new documents being written: if the run dies before the
  docstore is saved, the next run deletes their rows before anything else, so no row is left that the docstore does
  not know). Records written before ``rows.json`` and the store kind existed are read as they are.
"""

from __future__ import annotations

import json
import mimetypes
import os
import re
import urllib.parse
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from llama_index.core import SimpleDirectoryReader
from llama_index.core.schema import Document
from llama_index.core.storage.docstore import SimpleDocumentStore

__all__ = ["COLLECTION_PATTERN", "PLAIN_SUFFIXES", "RECORD_DIR", "IngestError", "IngestRecord", "StoreSpec",
           "check_collection", "default_state_dir", "find_files", "read_file", "rich_readers"]

#: Read as plain UTF-8 text, always; the exact file content is the document (offsets point into it).
PLAIN_SUFFIXES = (".txt", ".md")

#: Collection names both stores accept: 3 to 128 characters of ``[A-Za-z0-9._-]``, starting and ending with a
#: letter or digit (Chroma's rule, within Qdrant's).
COLLECTION_PATTERN = r"^[A-Za-z0-9](?:[A-Za-z0-9_-]|\.(?!\.)){1,126}[A-Za-z0-9]$"
#: The folder, inside the store's directory, of the ingest records (one subfolder per collection).
RECORD_DIR = ".llama-sac-docstore"
_FORMAT = 1


class IngestError(ValueError):
    """Bad input to ``ingest``/``query`` (a path, a store, a setting): the message names it; nothing was written."""


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

    def _read_json(self, path: Path) -> Any:
        try:
            return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
        except (OSError, ValueError) as exc:
            raise IngestError(f"the ingest record {path} cannot be read ({type(exc).__name__}: {exc}); delete the "
                              "store's directory to rebuild it") from None

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

    def settings(self) -> dict[str, Any] | None:
        """What ``settings.json`` holds (``None`` before the first run)."""
        value = self._read_json(self.settings_path)
        if value is not None and (not isinstance(value, dict) or value.get("format") != _FORMAT):
            raise IngestError(f"the ingest record {self.settings_path} has an unknown format; delete the store's "
                              "directory to rebuild it")
        return value

    def write_settings(self, value: dict[str, Any]) -> None:
        self._write_json(self.settings_path, {"format": _FORMAT, **value})

    def load_docstore(self) -> SimpleDocumentStore:
        """The saved docstore, or an empty one before the first run."""
        if not self.docstore_path.is_file():
            return SimpleDocumentStore()
        self._read_json(self.docstore_path)  # a clear error for a damaged file
        return SimpleDocumentStore.from_persist_path(str(self.docstore_path))

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
        value = self._read_json(self.rows_path)
        if value is not None and not (isinstance(value, dict) and all(isinstance(v, int) for v in value.values())):
            raise IngestError(f"the ingest record {self.rows_path} has an unknown format; delete the store's "
                              "directory to rebuild it")
        return dict(value or {})

    def save_rows(self, rows: dict[str, int]) -> None:
        self._write_json(self.rows_path, rows)

    def pending(self) -> list[str]:
        """The document ids of an unfinished round of writes (``[]`` when the last run finished)."""
        value = self._read_json(self.pending_path)
        return [str(v) for v in value] if isinstance(value, list) else []

    def set_pending(self, doc_ids: list[str]) -> None:
        self._write_json(self.pending_path, doc_ids)

    def clear_pending(self) -> None:
        self.pending_path.unlink(missing_ok=True)


# -- input files -------------------------------------------------------------------------------------------------------
def rich_readers() -> dict[str, Any]:
    """``SimpleDirectoryReader`` file extractors for .pdf (whole document) and .docx, when installed."""
    try:
        from llama_index.readers.file import DocxReader, PDFReader
    except ImportError:
        return {}
    return {".pdf": PDFReader(return_full_document=True), ".docx": DocxReader()}


def find_files(paths: Sequence[str | os.PathLike[str]], suffixes: Sequence[str]) -> tuple[list[Path], list[Path]]:
    """The files to read (sorted, absolute, without duplicates) and the folders given.

    Folders are walked recursively; hidden entries (a name starting with ``.``) inside them and files with other
    suffixes are left out; symbolic links to folders are not followed (links to files are read).

    Raises:
        IngestError: no path, a path that does not exist, or no file with one of ``suffixes``.
    """
    if not paths:
        raise IngestError("no PATH given: name folders or files to ingest")
    files: set[Path] = set()
    folders: list[Path] = []
    for given in paths:
        path = Path(os.path.abspath(os.path.expanduser(given)))
        if path.is_dir():
            folders.append(path)
            for root, dirs, names in os.walk(path):
                dirs[:] = [d for d in dirs if not d.startswith(".")]
                files.update(Path(root, n) for n in names
                             if not n.startswith(".") and Path(n).suffix.lower() in suffixes)
        elif path.exists():
            files.add(path)
        else:
            raise IngestError(f"{given}: no such file or folder")
    if not files:
        raise IngestError(f"no {'/'.join(suffixes)} files in {', '.join(str(p) for p in paths)}")
    return sorted(files), folders


def _file_metadata(path: Path) -> dict[str, Any]:
    meta: dict[str, Any] = {"file_path": str(path), "file_name": path.name}
    file_type = mimetypes.guess_type(path.name)[0]
    if file_type:
        meta["file_type"] = file_type
    meta["file_size"] = path.stat().st_size
    return meta


def read_file(path: Path, readers: dict[str, Any]) -> Document:
    """The document of one file: id = its absolute path, text = the file's text (pages or parts a reader returns
    separately are joined by a blank line: one summary per file), metadata = the stable file metadata.

    Raises:
        OSError, UnicodeDecodeError, Exception: the file cannot be read (missing target, not UTF-8, a reader error).
    """
    suffix = path.suffix.lower()
    meta = _file_metadata(path)
    if suffix in PLAIN_SUFFIXES:
        text = path.read_bytes().decode("utf-8")
    elif suffix in readers:
        parts = SimpleDirectoryReader.load_file(path, file_metadata=lambda _: dict(meta), file_extractor=readers,
                                                raise_on_error=True)
        text = "\n\n".join(part.text for part in parts)
    else:
        raise ValueError(f"{suffix} files need llama-index-readers-file (pip install llama-index-readers-file)")
    return Document(id_=str(path), text=text, metadata=meta)


def why_unreadable(exc: BaseException) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text ({exc})"
    cause = exc.__cause__ if exc.__cause__ is not None else exc
    return f"{type(cause).__name__}: {cause}"
