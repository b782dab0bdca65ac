"""The input files, the vector store and the ingest record of ``llama-sac ingest``/``query``.

* :func:`find_files` / :func:`read_file`: folders and files in, LlamaIndex ``Document``s out (``.txt``/``.md`` as
  strict UTF-8; ``.pdf``/``.docx`` through ``SimpleDirectoryReader``'s readers when ``llama-index-readers-file`` is
  installed); one document per file, its id the absolute path, its metadata the stable part of LlamaIndex's file
  metadata.
* :class:`StoreSpec`: ``chroma:DIR`` (``chromadb.PersistentClient``, embedded) or ``qdrant:DIR`` (``QdrantClient``
  local mode), opened by :func:`open_store` through LlamaIndex's ``ChromaVectorStore`` / ``QdrantVectorStore`` and
  always closed again (Qdrant's local mode locks its folder while a client is open).
* :class:`IngestRecord`: ``DIR/.llama-sac-docstore/<collection>/`` holds what the next run needs: ``docstore.json``
  (LlamaIndex's ``SimpleDocumentStore``: one hash per document, no texts), ``settings.json`` (the settings the
  collection was built with: parser, summary and embedding model) and, while a round of writes is under way,
  ``pending.json`` (the ids of the new documents being written: if the run dies before the docstore is saved, the next
  run deletes their rows before anything else, so no row is left that the docstore does not know).
"""

from __future__ import annotations

import json
import mimetypes
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from llama_index.core import SimpleDirectoryReader
from llama_index.core.schema import Document
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.vector_stores.types import BasePydanticVectorStore

from llama_index_sac._util import require_extra

__all__ = ["COLLECTION_PATTERN", "PLAIN_SUFFIXES", "RECORD_DIR", "IngestError", "IngestRecord", "StoreSpec",
           "check_collection", "find_files", "open_store", "read_file", "rich_readers"]

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
    """Where the vector store lives: ``kind`` (``"chroma"`` or ``"qdrant"``) and an absolute directory."""

    kind: Literal["chroma", "qdrant"]
    path: Path

    @classmethod
    def parse(cls, spec: str) -> StoreSpec:
        """``"chroma:DIR"`` or ``"qdrant:DIR"`` (``~`` expanded, made absolute).

        Raises:
            IngestError: another form, an unknown kind or an empty directory.
        """
        kind, sep, rest = str(spec).partition(":")
        if not sep or kind not in ("chroma", "qdrant") or not rest.strip():
            raise IngestError(f"--vector-store: expected chroma:DIR or qdrant:DIR, got {spec!r}")
        path = Path(os.path.abspath(os.path.expanduser(rest)))
        return cls("chroma" if kind == "chroma" else "qdrant", path)

    def __str__(self) -> str:
        return f"{self.kind}:{self.path}"


def check_collection(name: str) -> str:
    """``name`` if both stores accept it as a collection name.

    Raises:
        IngestError: see :data:`COLLECTION_PATTERN`.
    """
    if not isinstance(name, str) or not re.fullmatch(COLLECTION_PATTERN, name):
        raise IngestError(f"--collection: {name!r} is not a valid collection name (3 to 128 characters: letters, "
                          "digits, '.', '_', '-', starting and ending with a letter or digit)")
    return name


@contextmanager
def open_store(spec: StoreSpec, collection: str, *, create: bool) -> Iterator[tuple[BasePydanticVectorStore, int]]:
    """The collection's LlamaIndex vector store and its number of rows; the client is closed when the block ends.

    Args:
        spec: the store.
        collection: the collection name (see :func:`check_collection`).
        create: create the directory and the collection if missing (``ingest``); else both must exist (``query``).

    Raises:
        IngestError: the directory is missing (``create=False``) or is not a directory, the collection is missing
            (``create=False``), or the directory is in use by another process (Qdrant's lock).
        ImportError: the ``vectorstores`` extra is not installed.
    """
    check_collection(collection)
    if spec.path.exists() and not spec.path.is_dir():
        raise IngestError(f"--vector-store: {spec.path} is not a directory")
    if not create and not spec.path.is_dir():
        raise IngestError(f"--vector-store: {spec.path} does not exist (nothing was ingested there)")
    what = f"the {spec.kind} vector store"
    if spec.kind == "chroma":
        chromadb = require_extra("chromadb", "vectorstores", what)
        chroma = require_extra("llama_index.vector_stores.chroma", "vectorstores", what)
        client = chromadb.PersistentClient(path=str(spec.path),
                                           settings=chromadb.Settings(anonymized_telemetry=False))
        try:
            names = [getattr(c, "name", c) for c in client.list_collections()]
            if not create and collection not in names:
                raise IngestError(_missing(spec, collection, names))
            found = client.get_or_create_collection(collection, metadata={"hnsw:space": "cosine"})
            yield chroma.ChromaVectorStore(chroma_collection=found), int(found.count())
        finally:
            client.close()
        return
    qdrant_client = require_extra("qdrant_client", "vectorstores", what)
    qdrant = require_extra("llama_index.vector_stores.qdrant", "vectorstores", what)
    try:
        client = qdrant_client.QdrantClient(path=str(spec.path))
    except RuntimeError as exc:  # "Storage folder ... is already accessed by another instance of Qdrant client"
        raise IngestError(f"--vector-store: {spec.path} is in use by another process ({exc})") from None
    try:
        exists = client.collection_exists(collection)
        if not create and not exists:
            raise IngestError(_missing(spec, collection, [c.name for c in client.get_collections().collections]))
        rows = int(client.count(collection).count) if exists else 0
        yield qdrant.QdrantVectorStore(collection_name=collection, client=client), rows
    finally:
        client.close()


def _missing(spec: StoreSpec, collection: str, names: list[str]) -> str:
    found = ", ".join(sorted(names)) if names else "none"
    return f"--collection: {spec} has no collection {collection!r} (collections: {found})"


class IngestRecord:
    """``DIR/.llama-sac-docstore/<collection>/``: the docstore, the settings and the pending list (module docstring).

    Every file is written to a temporary name and renamed into place, so a crash leaves the previous version.
    """

    def __init__(self, spec: StoreSpec, collection: str) -> None:
        self.directory = spec.path / RECORD_DIR / check_collection(collection)
        self.docstore_path = self.directory / "docstore.json"
        self.settings_path = self.directory / "settings.json"
        self.pending_path = self.directory / "pending.json"

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

        Raises:
            IngestError: another process holds it.
        """
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            yield
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        with open(self.directory / "lock", "a+b") as handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise IngestError(f"another llama-sac ingest is writing to {self.directory.parent.parent} "
                                  f"(collection {self.directory.name!r}): wait for it to finish") from None
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

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
