"""``SummaryCache``: a persistent, process-safe cache of document summaries on disk.

Key rule (:func:`summary_cache_key`): ``sha256`` of the canonical JSON encoding of

    ["llama-index-sac/summary/v1", {"text": <full document text>, "metadata": <folded metadata>,
                                    "summarizer": <summarizer.identity()>}]

JSON is a structured, unambiguous encoding (strings are quoted and escaped, so no two different inputs give the
same bytes, unlike a plain concatenation). The document id is deliberately NOT part of the key: the same text
summarized by the same summarizer gives the same summary whatever the document is called, and a re-ingestion under
new ids makes zero LLM calls. "Folded metadata" is only the metadata the summarizer reads (``metadata_keys``), so
content-only summaries ignore metadata entirely.

Storage: one JSON file per entry, ``<directory>/<key[:2]>/<key>.json``. A write goes to a temporary file in the same
folder (``fsync``\\ed), then ``os.replace`` puts it in place atomically, so a reader in another process sees either
no entry or a whole one, and concurrent writers of one key (which write the same content) cannot interleave. An
entry that cannot be read (truncated by a crash of an older writer, edited, wrong key, wrong format) is logged and
treated as a miss; the next write replaces it, and so is an entry whose summary is empty (a document with text
always has a summary). Errors are never cached: a failed document is retried next run.

Reading an entry is bounded: only a regular file of at most :data:`ENTRY_MAX_BYTES` bytes is read (a FIFO or device
in its place is refused without blocking), nested at most 8 levels, and its shape is checked (the format, its key,
a summary string without lone surrogates, no longer than the ``max_chars`` the caller passes: the summarizer's own
bound). Every other entry is a miss, logged as a warning and counted in :attr:`SummaryCache.rejected`. The content of
a well-formed entry is trusted: whoever can write the cache folder chooses the summaries (``docs/security.md``).

Faults: reads never raise (an unreadable entry, a missing or misplaced folder: a miss); writes raise ``OSError``
(read-only or full disk, a file where a folder should be) for the caller to report per document;
:meth:`SummaryCache.check_writable` tells up front whether the location can be written at all.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from llama_index_sac._json_io import PersistedFileError, has_lone_surrogate, parse_json, read_json, read_regular_file
from llama_index_sac._util import stable_hash
from llama_index_sac.summarizers.base import SummaryResult, clean_text

__all__ = ["ENTRY_MAX_BYTES", "CacheReadWarning", "CacheWriteWarning", "SummaryCache", "SummaryCacheError",
           "summary_cache_key"]

#: The largest cache entry read, in bytes (a summary of a few hundred characters takes well under 4 KiB).
ENTRY_MAX_BYTES = 256 * 1024

logger = logging.getLogger(__name__)

_FORMAT = 1
_DOMAIN = "llama-index-sac/summary/v1"
_EPOCH_FILE = "failure-epoch.json"


class SummaryCacheError(OSError):
    """The summary cache location cannot be used at all (not creatable, not writable, a file in the way)."""


class CacheReadWarning(UserWarning):
    """Some summary-cache entries were unusable (damaged, too large, not a regular file, a summary longer than the
    summarizer writes): they were treated as misses and summarized again."""


class CacheWriteWarning(UserWarning):
    """Some summaries could not be stored in the summary cache (they were still used; the next run recomputes them)."""


def summary_cache_key(
    text: str, summarizer_identity: Mapping[str, Any], metadata: Mapping[str, str] | None = None
) -> str:
    """The cache key (64 hex characters) of one summary; see the module docstring for the rule.

    Raises:
        TypeError: ``text`` is not a ``str`` or the identity/metadata are not JSON-serializable.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__}")
    value = {"text": text, "metadata": dict(metadata or {}), "summarizer": dict(summarizer_identity)}
    try:
        return stable_hash(value, _DOMAIN)
    except TypeError as exc:
        raise TypeError(f"summary cache key inputs must be JSON-serializable: {exc}") from exc


class SummaryCache:
    """Summaries on disk, keyed by :func:`summary_cache_key` (see the module docstring for guarantees).

    Args:
        directory: the cache folder (created on first write). Keep it outside the repository, e.g.
            ``~/.cache/llama-index-sac/summaries``.

    Example::

        cache = SummaryCache("~/.cache/llama-index-sac/summaries")
        key = summary_cache_key(text, summarizer.identity())
        result = cache.get(key) or summarizer.summarize(text)
        cache.put(key, result)
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory).expanduser()
        #: How many entries :meth:`get` refused as unusable (each logged).
        self.rejected = 0

    def __repr__(self) -> str:
        return f"SummaryCache({str(self.directory)!r})"

    @staticmethod
    def _check_key(key: str) -> None:
        if not isinstance(key, str) or len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
            raise ValueError(f"cache key must be 64 lowercase hex characters (a sha256), got {key!r}")

    def path_for(self, key: str) -> Path:
        """Where the entry for ``key`` lives."""
        self._check_key(key)
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str, *, max_chars: int | None = None) -> SummaryResult | None:
        """The cached result for ``key``, or ``None``: missing, or unusable (see the module docstring: logged as a
        warning and counted in :attr:`rejected`). Never raises but for a malformed ``key`` (``ValueError``).

        Args:
            key: the entry's key (:func:`summary_cache_key`).
            max_chars: the longest summary to serve (the summarizer's ``max_summary_chars()``); ``None``: any.
        """
        path = self.path_for(key)
        try:
            raw = read_regular_file(path, max_bytes=ENTRY_MAX_BYTES)
        except FileNotFoundError:
            return None
        except NotADirectoryError:  # a misplaced cache: no entry
            return None
        except (OSError, PersistedFileError) as exc:
            if isinstance(exc, PersistedFileError) and isinstance(exc.__cause__, NotADirectoryError):
                return None
            self._reject(path, f"could not be read ({getattr(exc, 'problem', exc)})")
            return None
        try:
            data = parse_json(raw, path, expect=dict, max_depth=8)
            if data.get("format") != _FORMAT or data.get("key") != key:
                raise ValueError("unexpected format or key")
            result = SummaryResult.from_json(data["result"])
            if not result.summary.strip():
                raise ValueError("empty summary")
            if has_lone_surrogate(result.summary) or clean_text(result.summary) != result.summary:
                raise ValueError("the summary holds a lone surrogate")
            if max_chars is not None and len(result.summary) > max_chars:
                raise ValueError(f"the summary has {len(result.summary)} characters, more than {max_chars}")
        except (ValueError, KeyError, TypeError) as exc:
            self._reject(path, f"is corrupt ({getattr(exc, 'problem', exc)})")
            return None
        return SummaryResult(
            summary=result.summary, strategy=result.strategy, truncated=result.truncated, cut=result.cut, llm_calls=0
        )

    def _reject(self, path: Path, why: str) -> None:
        self.rejected += 1
        logger.warning("summary cache entry %s %s: treated as a miss", path, why)

    def put(self, key: str, result: SummaryResult, identity: Mapping[str, Any] | None = None) -> Path:
        """Store ``result`` under ``key`` atomically (temporary file + ``os.replace``); returns the entry path.

        ``identity`` (optional, the summarizer's) is stored alongside for inspection; it is not read back."""
        path = self.path_for(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        if clean_text(result.summary) != result.summary:  # a lone surrogate: stored as U+FFFD, never a crash
            result = SummaryResult(summary=clean_text(result.summary), strategy=result.strategy,
                                   truncated=result.truncated, cut=result.cut, llm_calls=result.llm_calls)
        record = {"format": _FORMAT, "key": key, "result": result.to_json()}
        if identity is not None:
            record["summarizer"] = dict(identity)
        # ASCII: any string (a lone surrogate in the identity too) is written as a JSON escape, never a crash
        data = json.dumps(record, ensure_ascii=True, sort_keys=True, default=str).encode("ascii")
        fd, tmp = tempfile.mkstemp(prefix=f".{key[:16]}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise
        return path

    def check_writable(self) -> str | None:
        """``None`` when an entry can be written here, else what is wrong (one line). Creates the folder; writes
        and removes one probe file."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, probe = tempfile.mkstemp(prefix=".probe.", dir=self.directory)
            os.close(fd)
            os.unlink(probe)
        except OSError as exc:
            return f"{type(exc).__name__}: {exc.strerror or exc}"
        return None

    # -- failure epoch (see SummaryAugmentationTransformation, Recovery) --------------------------------------
    def failure_epoch(self) -> int:
        """The failure epoch stored here (0 when none or unreadable)."""
        try:
            data = read_json(self.directory / _EPOCH_FILE, expect=dict, max_bytes=4096)
            epoch = data.get("epoch", 0)
        except (OSError, ValueError):
            return 0
        return epoch if isinstance(epoch, int) and not isinstance(epoch, bool) and epoch > 0 else 0

    def set_failure_epoch(self, epoch: int) -> None:
        """Store ``max(epoch, stored)`` atomically. Raises ``OSError`` when it cannot be written."""
        epoch = max(int(epoch), self.failure_epoch())
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self.directory / f".{_EPOCH_FILE}.{uuid.uuid4().hex}.tmp"
        try:
            tmp.write_text(json.dumps({"epoch": epoch}), encoding="utf-8")
            os.replace(tmp, self.directory / _EPOCH_FILE)
        finally:
            tmp.unlink(missing_ok=True)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def keys(self) -> Iterator[str]:
        """Keys of the entries on disk (readable or not)."""
        if not self.directory.is_dir():
            return
        for path in sorted(self.directory.glob("??/*.json")):
            yield path.stem

    def __len__(self) -> int:
        return sum(1 for _ in self.keys())
