"""``BaseSummarizer``: the interface every document summarizer of Summary-Augmented Chunking implements.

A summarizer turns the FULL text of one document into one short string (at most about ``max_chars`` characters)
that :class:`~llama_index_sac.SummaryAugmentationTransformation` attaches to every chunk of that
document (SAC, Reuter et al. 2025, arXiv 2510.06999, section 3). The interface is small:

* :meth:`BaseSummarizer.summarize` / :meth:`BaseSummarizer.asummarize` return a :class:`SummaryResult` (the summary
  plus how it was made). Both run ONE body: a subclass implements :meth:`BaseSummarizer._asummarize` (I/O-bound
  summarizers, e.g. LLM calls) or :meth:`BaseSummarizer._summarize` (CPU-bound ones); the other entry point is
  derived from it.
* :meth:`BaseSummarizer.identity` names everything that changes the output (class, model, prompts, ``max_chars``,
  fitted corpus...). The summary cache keys on it, and the transformation puts it in its ``to_dict()`` so the
  LlamaIndex ingestion cache tells two summarizers apart.
* :meth:`BaseSummarizer.fit` (optional) sees the corpus before summarizing; see ``requires_fit``.

Document metadata: ``metadata_keys`` names metadata keys whose values are folded into the summary. The default,
:data:`IDENTITY_METADATA_KEYS` (``file_name``, then ``title``), folds in the document's identity when the document
has it: a ``file_name`` (or ``file_path``) as the file's stem (URL-decoded, directories and extension dropped, ``_``
as spaces: ``NDA_ResConnect.txt`` -> ``NDA ResConnect``), a ``title`` as written; a key the document lacks is
skipped. ``metadata_keys=[]`` is content-only (the summary depends on the document text alone).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import threading
import urllib.parse
from collections.abc import Coroutine, Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, TypeVar

from llama_index.core.bridge.pydantic import Field
from llama_index.core.schema import BaseComponent

from llama_index_sac.constants import DEFAULT_SUMMARY_CHARS

__all__ = [
    "IDENTITY_METADATA_KEYS",
    "BaseSummarizer",
    "SummarizationError",
    "SummaryResult",
    "clean_text",
    "cut_at_word_boundary",
    "normalize_summary",
    "run_sync",
]


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine from sync code and return its result, re-raising its exceptions unchanged.

    Every call of a thread runs on ONE event loop that lives as long as the thread (without a running loop: on the
    calling thread; inside one, e.g. Jupyter or an async framework: on one background thread with its own loop,
    context variables copied). An async client an LLM keeps between calls (its connection pool is bound to the loop
    that opened it) therefore works on every call, where a new loop per call (``asyncio.run``) would find the
    previous one closed. Interrupting the call (Ctrl-C) cancels the coroutine. Unlike
    ``llama_index.core.async_utils.asyncio_run`` it never mistakes a ``RuntimeError`` raised by the coroutine for
    an event-loop problem."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        loop = _thread_loop()
        task = loop.create_task(coro)
        try:
            return loop.run_until_complete(task)
        except BaseException:
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    loop.run_until_complete(task)
            raise
    future = asyncio.run_coroutine_threadsafe(coro, _background_loop())  # the caller's context is copied
    try:
        return future.result()
    except BaseException:
        future.cancel()
        raise


_LOCAL = threading.local()
_BACKGROUND: list[asyncio.AbstractEventLoop] = []
_BACKGROUND_LOCK = threading.Lock()


def _thread_loop() -> asyncio.AbstractEventLoop:
    """This thread's event loop for :func:`run_sync` (created on first use, never closed)."""
    loop = getattr(_LOCAL, "loop", None)
    if loop is None or loop.is_closed():
        loop = asyncio.new_event_loop()
        _LOCAL.loop = loop
    return loop  # type: ignore[no-any-return]


def _background_loop() -> asyncio.AbstractEventLoop:
    """The event loop of one daemon thread, for :func:`run_sync` called inside a running loop."""
    with _BACKGROUND_LOCK:
        if not _BACKGROUND:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="llama-index-sac-run-sync", daemon=True).start()
            _BACKGROUND.append(loop)
        return _BACKGROUND[0]


T = TypeVar("T")


class SummarizationError(Exception):
    """A document could not be summarized (after the retries the summarizer allows).

    Attributes:
        doc_id: the document (source node) id, when known.
        attempts: how many requests were made for the failing step (0 when unknown).
    """

    def __init__(self, message: str, *, doc_id: str | None = None, attempts: int = 0) -> None:
        super().__init__(message)
        self.doc_id = doc_id
        self.attempts = attempts


@dataclass(frozen=True)
class SummaryResult:
    """One document's summary and how it was made.

    Attributes:
        summary: the summary text ("" only for an empty document).
        strategy: ``"single"`` (the whole document in one LLM call), ``"map_reduce"`` (windows summarized, then the
            partial summaries summarized), ``"head_tail"`` (only the start and the end of an overlong document were
            read), ``"extractive"`` or ``"empty"`` (blank document, no call).
        truncated: True when the summarizer did NOT read the whole document (``head_tail``).
        cut: True when the final summary was longer than allowed and was cut at a word boundary.
        llm_calls: LLM requests made, retries included (0 for extractive summaries and cache hits).
    """

    summary: str
    strategy: str
    truncated: bool = False
    cut: bool = False
    llm_calls: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SummaryResult:
        """Inverse of :meth:`to_json`; raises ``ValueError`` on a malformed mapping."""
        try:
            summary, strategy = data["summary"], data["strategy"]
            truncated, cut = data.get("truncated", False), data.get("cut", False)
            calls = data.get("llm_calls", 0)
        except (KeyError, TypeError) as exc:
            raise ValueError(f"malformed summary record: {exc!r}") from exc
        if not isinstance(summary, str) or not isinstance(strategy, str):
            raise ValueError("malformed summary record: summary and strategy must be strings")
        if not isinstance(truncated, bool) or not isinstance(cut, bool) or not isinstance(calls, int):
            raise ValueError("malformed summary record: truncated/cut must be bools, llm_calls an int")
        return cls(summary=summary, strategy=strategy, truncated=truncated, cut=cut, llm_calls=calls)


_WS = re.compile(r"\s+")
_PREFIX = re.compile(r"^(?:\*\*)?(?:document\s+)?summary(?:\*\*)?\s*[:\-]\s*", re.IGNORECASE)


#: Lone UTF-16 surrogates (not encodable as UTF-8): replaced by U+FFFD.
_SURROGATES = re.compile("[\ud800-\udfff]")
#: Control characters (C0 but tab/newline/return, DEL, C1) and bidirectional-text controls (LRM/RLM, ALM,
#: embeddings, overrides, isolates), which a summary never needs and which can disguise text: removed.
_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def clean_text(text: str) -> str:
    """``text`` with every lone surrogate (U+D800..U+DFFF, which UTF-8 cannot encode) replaced by U+FFFD; the rest
    unchanged. Every summary leaves :meth:`BaseSummarizer.summarize` through it, so a summary can always be stored
    and embedded."""
    return _SURROGATES.sub("\ufffd", text)


def normalize_summary(text: str) -> str:
    """Clean a model's answer: lone surrogates replaced by U+FFFD, control and bidirectional-text control
    characters removed, whitespace (newlines included) collapsed to single spaces, a leading ``Summary:`` label and
    one pair of surrounding quotes or backticks dropped."""
    out = _WS.sub(" ", _CONTROLS.sub("", clean_text(text))).strip()
    out = _PREFIX.sub("", out).strip()
    if len(out) >= 2 and out[0] == out[-1] and out[0] in "\"'`":
        out = out[1:-1].strip()
    return out


def cut_at_word_boundary(text: str, limit: int) -> str:
    """``text`` if it has at most ``limit`` characters, else its longest prefix of at most ``limit`` characters that
    ends at a word boundary (trailing punctuation and spaces removed). A single word longer than ``limit`` is cut
    at ``limit`` characters (the limit is the guarantee)."""
    if limit <= 0:
        raise ValueError(f"limit must be > 0, got {limit}")
    if len(text) <= limit:
        return text
    head = text[: limit + 1]
    cut = max(head.rfind(" "), head.rfind("\n"))
    out = text[:cut] if cut > 0 else text[:limit]
    return out.rstrip(" \t\n,;:-(").rstrip() or text[:limit]


#: The default ``metadata_keys`` of every summarizer: the document identity a file or a reader usually gives
#: (``SimpleDirectoryReader`` writes ``file_name``; many readers a ``title``), folded in when present.
IDENTITY_METADATA_KEYS: tuple[str, ...] = ("file_name", "title")


def _file_stem(value: str) -> str:
    base = os.path.basename(urllib.parse.unquote(value))
    stem, _ = os.path.splitext(base)
    return stem.replace("_", " ").strip() or base


class BaseSummarizer(BaseComponent):
    """Interface: one document text in, one :class:`SummaryResult` out.

    Subclasses implement :meth:`_asummarize` (async, I/O-bound) or override :meth:`_summarize` (sync, CPU-bound);
    they must call neither entry point of the other style themselves. The entry points check the input
    (``TypeError`` for non-``str`` text) and return ``SummaryResult("", "empty")`` for a blank text without
    calling the model.
    """

    #: True for summarizers that must see the corpus first (:meth:`fit`).
    requires_fit: ClassVar[bool] = False
    #: True when calls are slow and I/O-bound (LLM requests): the transformation then bounds their concurrency.
    uses_llm: ClassVar[bool] = False

    max_chars: int = Field(default=DEFAULT_SUMMARY_CHARS, gt=0,
                           description="Target length of the summary, in characters.")
    metadata_keys: list[str] = Field(
        default_factory=lambda: list(IDENTITY_METADATA_KEYS),
        description="Document metadata keys whose values are folded into the summary, in this order, when the "
        "document has them (file_name/file_path as the file's stem). Default ['file_name', 'title']: the "
        "document's identity. []: content-only, the summary depends on the document text alone.",
    )

    @classmethod
    def class_name(cls) -> str:
        return "BaseSummarizer"

    # -- identity ---------------------------------------------------------------------------------------------
    def max_summary_chars(self) -> int | None:
        """The longest summary this summarizer returns, in characters (``None``: not bounded). The summary cache
        serves no longer entry."""
        return None

    def identity(self) -> dict[str, Any]:
        """Everything that changes this summarizer's output, as a JSON-serializable dict (used in cache keys).

        Subclasses extend it (model, prompts, fitted corpus...). It never contains a document id."""
        return {
            "class": self.class_name(),
            "max_chars": self.max_chars,
            "metadata_keys": list(self.metadata_keys),
        }

    def identity_hash(self) -> str:
        """``sha256`` of the canonical JSON of :meth:`identity`."""
        blob = json.dumps(self.identity(), sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    # -- corpus ----------------------------------------------------------------------------------------------
    @property
    def is_fitted(self) -> bool:
        """True when the summarizer can summarize (always, unless ``requires_fit``)."""
        return True

    def fit(self, texts: Iterable[str]) -> BaseSummarizer:
        """See the corpus (full document texts) before summarizing; a no-op unless ``requires_fit``."""
        return self

    # -- metadata folding -------------------------------------------------------------------------------------
    def folded_metadata(self, metadata: Mapping[str, Any] | None) -> dict[str, str]:
        """The ``metadata_keys`` present in ``metadata`` as ``{key: str(value)}`` (in ``metadata_keys`` order).

        Values of ``file_name``/``file_path`` are reduced to the file's stem (URL-decoded, ``_`` as spaces), so a
        path does not spend the summary budget on directories. Empty for content-only summarizers."""
        if not self.metadata_keys or not metadata:
            return {}
        out: dict[str, str] = {}
        for key in self.metadata_keys:
            if key in metadata and metadata[key] is not None and str(metadata[key]).strip():
                value = str(metadata[key]).strip()
                out[key] = _file_stem(value) if key in ("file_name", "file_path") else value
        return out

    # -- summarizing ------------------------------------------------------------------------------------------
    def _summarize(self, text: str, metadata: dict[str, str]) -> SummaryResult:
        """Sync body; the default runs :meth:`_asummarize` on an event loop."""
        return run_sync(self._asummarize(text, metadata, None))

    async def _asummarize(
        self, text: str, metadata: dict[str, str], limiter: asyncio.Semaphore | None
    ) -> SummaryResult:
        """Async body; the default runs :meth:`_summarize` (for CPU-bound summarizers)."""
        return self._summarize(text, metadata)

    @staticmethod
    def _check_text(text: Any) -> None:
        if not isinstance(text, str):
            raise TypeError(f"text must be str, got {type(text).__name__}")

    def summarize(self, text: str, metadata: Mapping[str, Any] | None = None) -> SummaryResult:
        """Summarize one document.

        Args:
            text: the FULL document text (characters).
            metadata: the document's metadata; only ``metadata_keys`` are read.

        Raises:
            TypeError: ``text`` is not a ``str``.
            SummarizationError: the summary could not be made (LLM summarizers, after their retries).
        """
        self._check_text(text)
        if not text.strip():
            return SummaryResult(summary="", strategy="empty")
        return _cleaned(self._summarize(text, self.folded_metadata(metadata)))

    async def asummarize(
        self,
        text: str,
        metadata: Mapping[str, Any] | None = None,
        *,
        limiter: asyncio.Semaphore | None = None,
    ) -> SummaryResult:
        """Async :meth:`summarize`. ``limiter`` bounds concurrent LLM requests (each request holds it)."""
        self._check_text(text)
        if not text.strip():
            return SummaryResult(summary="", strategy="empty")
        return _cleaned(await self._asummarize(text, self.folded_metadata(metadata), limiter))


def _cleaned(result: SummaryResult) -> SummaryResult:
    """``result`` with :func:`clean_text` applied to its summary (a summarizer of any kind: LLM answers, a
    subclass's own text)."""
    summary = clean_text(result.summary)
    return result if summary == result.summary else SummaryResult(
        summary=summary, strategy=result.strategy, truncated=result.truncated, cut=result.cut,
        llm_calls=result.llm_calls)
