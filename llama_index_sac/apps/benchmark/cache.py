"""On-disk embedding cache of the evaluation runner (SQLite, stdlib only); summaries use ``summarizers.cache``.

Keys are sha256 digests of the content *and* of everything that determines the value (the embedding model's
identity and whether the text is embedded as a query or a document), so a cache
hit can never return a value computed under other settings, and a re-run that changes only ``k`` or the report
re-embeds nothing. The default location is ``~/.cache/llama-index-sac`` (``$XDG_CACHE_HOME`` honoured), overridable
with ``LLAMA_SAC_CACHE_DIR`` or the CLI's ``--cache-dir``.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import PrivateAttr
from tqdm.auto import tqdm

from llama_index_sac._util import default_cache_dir
from llama_index_sac._warn import caller_stacklevel

__all__ = ["CachedEmbedding", "EmbeddingCache", "EmbeddingCacheWarning", "content_key", "default_cache_dir"]


class EmbeddingCacheWarning(UserWarning):
    """Some cached embedding vectors were unusable (truncated, of another dimension than the model's, NaN or
    infinite values): they were treated as misses and computed again."""


def content_key(identity: Any, text: str) -> str:
    """sha256 hex digest of a JSON-serialisable ``identity`` (settings) together with ``text``."""
    head = json.dumps(identity, sort_keys=True, default=str).encode()
    digest = hashlib.sha256(head)
    digest.update(b"\x00")
    digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


class _SqliteStore:
    def __init__(self, path: Path, table: str, value_type: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path, self.table = path, table
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(path), check_same_thread=False, timeout=60)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute(f"CREATE TABLE IF NOT EXISTS {table} (key TEXT PRIMARY KEY, value {value_type})")
        self._conn.commit()

    def get_many(self, keys: Sequence[str]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for rows in self.iter_many(keys):
            found.update(rows)
        return found

    def iter_many(self, keys: Sequence[str], chunk: int = 500) -> Iterator[list[tuple[str, Any]]]:
        """The stored ``(key, value)`` rows of ``keys``, ``chunk`` keys per query (only one chunk in memory)."""
        for i in range(0, len(keys), chunk):
            part = list(keys[i : i + chunk])
            marks = ",".join("?" * len(part))
            with self._lock:
                rows = self._conn.execute(f"SELECT key, value FROM {self.table} WHERE key IN ({marks})", part)
                found = rows.fetchall()
            yield found

    def present(self, keys: Sequence[str], chunk: int = 500) -> set[str]:
        """The ``keys`` that have a row (values not read)."""
        found: set[str] = set()
        for i in range(0, len(keys), chunk):
            part = list(keys[i : i + chunk])
            with self._lock:
                rows = self._conn.execute(
                    f"SELECT key FROM {self.table} WHERE key IN ({','.join('?' * len(part))})", part).fetchall()
            found.update(key for (key,) in rows)
        return found

    def put_many(self, items: Sequence[tuple[str, Any]]) -> None:
        with self._lock:
            self._conn.executemany(f"INSERT OR REPLACE INTO {self.table} (key, value) VALUES (?, ?)", items)
            self._conn.commit()

    def close(self) -> None:
        self._conn.close()


class _Rows:
    """A float32 matrix of ``n`` rows filled one row at a time; allocated at the first row (its dimension)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self._matrix: np.ndarray | None = None

    def put(self, row: int, vector: np.ndarray, source: str) -> None:
        if vector.ndim != 1:
            raise RuntimeError(f"{source} embedding of shape {vector.shape}: a vector must be 1-D")
        if self._matrix is None:
            self._matrix = np.empty((self.n, vector.shape[0]), dtype=np.float32)
        if vector.shape[0] != self._matrix.shape[1]:
            raise RuntimeError(f"{source} embedding of dimension {vector.shape[0]} among vectors of dimension "
                               f"{self._matrix.shape[1]}: one model identity must give one dimension")
        self._matrix[row] = vector

    @property
    def matrix(self) -> np.ndarray:
        return self._matrix if self._matrix is not None else np.zeros((self.n, 0), dtype=np.float32)


class EmbeddingCache:
    """Embedding vectors stored as float32 blobs, keyed by (model identity, "text"/"query", text).

    A cached vector is used only when it is whole and finite and has the dimension of its model (recorded per model
    identity and kind in the ``dimensions`` table when vectors are first computed; a cache without the record
    computes one vector to learn it). Any other is a miss, computed again and counted in :attr:`rejected`, with one
    :class:`EmbeddingCacheWarning` per call: never a traceback, never a wrong vector served.

    Args:
        cache_dir: folder of ``embeddings.sqlite``.
    """

    def __init__(self, cache_dir: str | Path) -> None:
        path = Path(cache_dir) / "embeddings.sqlite"
        self._store = _SqliteStore(path, "embeddings", "BLOB")
        self._dims = _SqliteStore(path, "dimensions", "INTEGER")
        self.hits = 0
        self.misses = 0
        #: Cached vectors refused as unusable (each computed again).
        self.rejected = 0

    @staticmethod
    def _place(out: _Rows, row: int, blob: Any, dim: int) -> bool:
        """Put the cached vector ``blob`` in ``row`` if it is a whole float32 vector of ``dim`` finite values."""
        if not isinstance(blob, bytes) or dim <= 0 or len(blob) != 4 * dim:
            return False
        vector = np.frombuffer(blob, dtype=np.float32)
        if not bool(np.isfinite(vector).all()):
            return False
        out.put(row, vector, "cached")
        return True

    def _dimension(self, head: str, texts: Sequence[str], first_row: int,
                   compute: Callable[[list[str]], Sequence[Sequence[float]]]) -> int:
        """The recorded dimension of a model identity and kind (``head``), else one vector's, computed and
        recorded."""
        recorded = self._dims.get_many([head]).get(head)
        if isinstance(recorded, int) and not isinstance(recorded, bool) and recorded > 0:
            return recorded
        vectors = compute([texts[first_row]])
        if len(vectors) != 1:
            raise RuntimeError(f"embedding model returned {len(vectors)} vectors for 1 text")
        dim = int(np.asarray(vectors[0], dtype=np.float32).reshape(-1).shape[0])
        self._dims.put_many([(head, dim)])
        return dim

    def embed(
        self,
        texts: Sequence[str],
        identity: Any,
        kind: str,
        compute: Callable[[list[str]], list[list[float]]],
        batch_size: int = 256,
        show_progress: bool = False,
        desc: str = "Embedding",
    ) -> list[list[float]]:
        """:meth:`embed_array` as Python lists of floats (the float32 values, one list per text, same order)."""
        if not len(texts):
            return []
        matrix = self.embed_array(texts, identity, kind, compute, batch_size, show_progress, desc)
        return matrix.astype(np.float64).tolist()  # type: ignore[no-any-return]

    def embed_array(
        self,
        texts: Sequence[str],
        identity: Any,
        kind: str,
        compute: Callable[[list[str]], Sequence[Sequence[float]]],
        batch_size: int = 256,
        show_progress: bool = False,
        desc: str = "Embedding",
    ) -> np.ndarray:
        """Vectors for ``texts`` as one C-contiguous float32 matrix of shape ``(len(texts), dim)`` (row ``i`` for
        ``texts[i]``; ``(0, 0)`` for no text), computing only the missing ones with ``compute`` in batches.

        ``kind`` is ``"text"`` or ``"query"`` (models may embed the two differently). Identical texts are computed
        once, in order of length (less padding per batch). Values are stored after each batch, so an interrupted
        run keeps what it computed. ``texts`` may be a lazy sequence: it is iterated once for the keys, and only
        the texts to compute are read again (by index); the cached vectors are read in chunks straight into the
        matrix, so at most one matrix of vectors is held (``4 * dim`` bytes per text), never a list of floats.

        Raises:
            RuntimeError: ``compute`` returned another number of vectors than texts, or a vector (computed or
                cached) whose dimension differs from the others'.
        """
        head = hashlib.sha256(json.dumps({"model": identity, "kind": kind}, sort_keys=True, default=str).encode())
        head.update(b"\x00")  # the prefix of content_key({"model": identity, "kind": kind}, text)
        first: dict[str, int] = {}  # key -> first row with it
        repeats: list[tuple[int, int]] = []  # (row, first row of the same text)
        n = 0
        for n, text in enumerate(texts, start=1):
            digest = head.copy()
            digest.update(text.encode("utf-8", "surrogatepass"))
            row = first.setdefault(digest.hexdigest(), n - 1)
            if row != n - 1:
                repeats.append((n - 1, row))
        out = _Rows(n)
        unique = list(first)
        present = self._store.present(unique)
        todo = [k for k in unique if k not in present]  # first-occurrence order
        head_key = head.hexdigest()
        recorded = self._dims.get_many([head_key]).get(head_key)
        dim = recorded if isinstance(recorded, int) and not isinstance(recorded, bool) and recorded > 0 else None
        del unique
        bar = tqdm(total=len(todo), desc=desc, unit="text", disable=not show_progress or not todo)

        def compute_rows(keys: list[str]) -> int:
            """Compute, store and place the vectors of ``keys`` (in length order); their dimension."""
            # Similar lengths side by side: a model pads each batch to its longest text, so length order wastes
            # less. The output keeps the input order.
            keys = sorted(keys, key=lambda k: len(texts[first[k]]))
            width = 0
            for i in range(0, len(keys), batch_size):
                batch = keys[i : i + batch_size]
                computed = compute([texts[first[k]] for k in batch])
                if len(computed) != len(batch):
                    raise RuntimeError(f"embedding model returned {len(computed)} vectors for {len(batch)} texts")
                arrays = [np.asarray(v, dtype=np.float32) for v in computed]
                for k, v in zip(batch, arrays):
                    out.put(first[k], v, "computed")
                    width = v.shape[0]
                self._store.put_many([(k, v.tobytes()) for k, v in zip(batch, arrays)])
                bar.update(len(batch))
            return width

        try:
            if todo:
                width = compute_rows(todo)
                if dim is not None and width != dim and any(
                        isinstance(blob, bytes) and len(blob) == 4 * dim
                        for rows in self._store.iter_many(sorted(present)) for _, blob in rows):
                    raise RuntimeError(f"computed embedding of dimension {width} among vectors of dimension {dim}: "
                                       "one model identity must give one dimension")
                if width != dim:  # first vectors of this identity, or a record no cached vector agrees with
                    self._dims.put_many([(head_key, width)])
                dim = width
            elif dim is None and present:  # everything cached, no recorded dimension (an older cache): learn it
                dim = self._dimension(head_key, texts, first[next(iter(present))], compute)
            rejected = [key for rows in self._store.iter_many(sorted(present)) for key, blob in rows
                        if not self._place(out, first[key], blob, dim or 0)]
            if rejected:
                self.rejected += len(rejected)
                warnings.warn(f"{len(rejected)} cached embedding(s) in {self._store.path} were unusable (truncated, "
                              f"not of the model's dimension {dim}, or NaN/infinite values): computed again",
                              EmbeddingCacheWarning, stacklevel=caller_stacklevel())
                bar.total = len(todo) + len(rejected)
                width = compute_rows(rejected)
                if width != dim:  # the record was wrong (edited): the model's vectors say the dimension
                    self._dims.put_many([(head_key, width)])
        finally:
            bar.close()
        self.misses += len(todo) + len(rejected)
        self.hits += n - len(todo) - len(rejected)  # served without computing (from disk, or a repeat in ``texts``)
        matrix = out.matrix
        for row, source in repeats:
            matrix[row] = matrix[source]
        return matrix

    def close(self) -> None:
        self._store.close()
        self._dims.close()


class CachedEmbedding(BaseEmbedding):
    """A ``BaseEmbedding`` that answers document-text embeddings from an :class:`EmbeddingCache` and computes only
    the missing ones with ``inner``; queries go to ``inner`` unchanged.

    The runner hands it to the semantic and hybrid parsers, so the sentence vectors they need are computed once and
    then shared by every configuration and every later run (the same sentence text under the same model identity is
    the same vector). ``model_name`` is the inner model's, so parsers that record the model's identity record the
    same one.

    Args:
        inner: the embedding model that computes missing vectors.
        cache: the cache (not closed by this object).
        identity: JSON-serialisable identity of ``inner`` (part of every cache key).
    """

    _inner: BaseEmbedding = PrivateAttr()
    _cache: EmbeddingCache = PrivateAttr()
    _identity: Any = PrivateAttr()

    def __init__(self, inner: BaseEmbedding, cache: EmbeddingCache, identity: Any) -> None:
        super().__init__(model_name=inner.model_name, embed_batch_size=max(1, min(2048, 4 * inner.embed_batch_size)))
        self._inner, self._cache, self._identity = inner, cache, identity

    @classmethod
    def class_name(cls) -> str:
        return "SacCachedEmbedding"

    @property
    def wrapped_embedding(self) -> BaseEmbedding:
        """The inner model: :func:`~llama_index_sac.embeddings.limits.embedding_token_counter` and
        :func:`~llama_index_sac.embeddings.limits.embedding_max_tokens` read its tokenizer and input limit."""
        return self._inner

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._cache.embed(texts, self._identity, "text", self._inner.get_text_embedding_batch)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embedding(text)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        # one batched lookup + computation (the base class would make one call per text); local models are CPU-bound
        return self._get_text_embeddings(texts)

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._inner.get_query_embedding(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return await self._inner.aget_query_embedding(query)
