"""``llama-sac query`` / ``serve``: the top-k chunks of questions in a collection written by ``llama-sac ingest``.

:class:`Searcher` opens the collection and loads the embedding model once, then answers any number of questions
(``query`` with many questions, ``serve`` for its whole life); :func:`query` is one question. Only reads: the folder
must already be a store of the kind named (checked before any client is opened,
:func:`~llama_index_sac.apps.ingest.store.check_store_folder`), so a wrong folder or kind is refused without
creating anything. An embedding model other than the collection's is refused by name before it is loaded.
:func:`check_question` is the rule for a question (text, UTF-8, not empty); :func:`model_loading_progress` switches
the embedding model's loading bars (``transformers`` and ``huggingface_hub``) off and on again, for ``--no-progress``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from llama_index.core import VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import BaseNode, NodeWithScore, TransformComponent

from llama_index_sac.apps.ingest.document_index import load_document_index
from llama_index_sac.apps.ingest.files import IngestError, IngestRecord, StoreSpec
from llama_index_sac.apps.ingest.generation import read_generation
from llama_index_sac.apps.ingest.store import open_store, store_errors
from llama_index_sac.embeddings.default import EMBED_PRECISIONS, EmbeddingBackendOptions, default_embedding_model
from llama_index_sac.embeddings.model import DEFAULT_EMBED_MODEL_NAME
from llama_index_sac.retrievers.document_aware import DocumentAwareRetriever
from llama_index_sac.retrievers.document_index import DocumentIndex
from llama_index_sac.sentences import sentence_spans
from llama_index_sac.settings import model_space, recorded_space

__all__ = ["DEFAULT_DOCUMENT_AWARE", "MAX_K", "QueryHit", "Searcher", "check_k", "check_question", "load_model",
           "matched_passage", "model_loading_progress", "query"]

#: Questions are ranked by :class:`~llama_index_sac.DocumentAwareRetriever` with its defaults unless told otherwise
#: (``document_aware=False``, ``--plain``): the best setup measured.
DEFAULT_DOCUMENT_AWARE = True
#: The largest ``k`` a query may ask for (the stores' clients overflow on huge values).
MAX_K = 10_000
_DEFAULT_NAMES = {None, DEFAULT_EMBED_MODEL_NAME, DEFAULT_EMBED_MODEL_NAME.rsplit("/", 1)[-1]}
_WORDS = re.compile(r"\w{3,}")
_LEFT_OUT, _LEFT_OUT_AFTER = "[...] ", " [...]"
_COMMON = frozenset("the and for are any but not all can has have had its was were will with from that this these "
                    "those what which who whom whose when where why how does did may shall must should would could "
                    "there their they them than then into under upon".split())


def _keys(text: str) -> set[str]:
    """The words of ``text`` as compared with the question's: lower case, a plural ``s`` dropped, the first five
    letters (``governs``/``governed``, ``law``/``laws`` match); common function words left out."""
    keys = set()
    for word in _WORDS.findall(text.lower()):
        if word not in _COMMON:
            keys.add((word[:-1] if len(word) > 3 and word.endswith("s") else word)[:5])
    return keys


_HEADING_WORD = re.compile(r"[\W_]*(?:[A-Z0-9§]|(?:and|of|the|or|for|to|in|on|a)\W*$)")
_HEADING_MAX_WORDS = 8


def _with_headings_joined(text: str, spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` (sentences tiling ``text``) with each run of headings joined to the sentence after it: a heading
    is at most :data:`_HEADING_MAX_WORDS` words, each opening with a capital, a digit or ``§`` (punctuation before
    it allowed) or a joining word ("Price and Payment."). The last sentence stays as it is."""
    joined: list[tuple[int, int]] = []
    start: int | None = None
    for i, (s, e) in enumerate(spans):
        start = s if start is None else start
        words = text[s:e].split()
        if i + 1 < len(spans) and len(words) <= _HEADING_MAX_WORDS and all(_HEADING_WORD.match(w) for w in words):
            continue
        joined.append((start, e))
        start = None
    return joined


def matched_passage(text: str, question: str, max_chars: int | None) -> str:
    """At most ``max_chars`` characters of the chunk ``text``: the passage that matched ``question``.

    The passage is made of whole sentences (:func:`~llama_index_sac.sentences.sentence_spans`): the sentence that
    shares the most distinct words with the question (words of three or more letters but common function words, the
    first five letters, a plural ``s`` dropped; the first sentence on a tie), then the sentences after it and before
    it, alternately, while they fit. A heading ("6. Governing Law.", "ARTICLE VIII.": at most eight words, each
    capitalised, a number or a joining word) is one sentence with the sentence after it, so it is never shown
    alone. ``"[...]"`` marks text left out at either end and counts in ``max_chars``; a sentence longer than the
    room is cut at a space (or at the limit). Whitespace runs are shown as one space. Linear in the text.

    Args:
        text: the chunk.
        question: the question asked.
        max_chars: the most characters shown (at least 1); ``None``: the whole chunk.

    Returns:
        The whole chunk (whitespace runs as one space) when it fits, else the passage.

    Raises:
        ValueError: ``max_chars`` below 1.
    """
    if max_chars is not None and max_chars < 1:
        raise ValueError(f"max_chars must be at least 1, got {max_chars}")
    flat = " ".join(text.split())
    if max_chars is None or len(flat) <= max_chars:
        return flat
    room = max_chars - len(_LEFT_OUT) - len(_LEFT_OUT_AFTER)
    if room < 1:
        return flat[:max_chars]
    spans = sentence_spans(flat)  # they tile the text; each ends with its following space, if any
    asked = _keys(question)
    spans = _with_headings_joined(flat, spans)
    scores = [len(asked & _keys(flat[s:e])) for s, e in spans]
    first = last = scores.index(max(scores))

    def width(a: int, b: int) -> int:  # the characters of sentences a..b, without the last one's space
        return spans[b][1] - spans[a][0] - (flat[spans[b][1] - 1] == " ")

    grew = True
    while grew:
        grew = False
        if last + 1 < len(spans) and width(first, last + 1) <= room:
            last, grew = last + 1, True
        if first > 0 and width(first - 1, last) <= room:
            first, grew = first - 1, True
    begin, end = spans[first][0], spans[first][0] + width(first, last)
    if end - begin > room:  # one sentence longer than the room: its start, cut at a space
        cut = flat.rfind(" ", begin, begin + room + 1)
        end = cut if cut > begin else begin + room
    return (_LEFT_OUT if begin > 0 else "") + flat[begin:end] + (_LEFT_OUT_AFTER if end < len(flat) else "")


@contextmanager
def model_loading_progress(enabled: bool) -> Iterator[None]:
    """With ``enabled=False``, no progress bar while a model loads in the block (``transformers``' and
    ``huggingface_hub``'s own switch, ``transformers.utils.logging.disable_progress_bar``); restored afterwards.
    Nothing to do when ``enabled`` or when transformers is not installed."""
    hf_logging: Any
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        hf_logging = None
    if enabled or hf_logging is None or not hf_logging.is_progress_bar_enabled():
        yield
        return
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.enable_progress_bar()


def load_model(name: str | None, show_progress: bool, options: EmbeddingBackendOptions | None = None) -> BaseEmbedding:
    """:func:`~llama_index_sac.default_embedding_model` by name (``None``: all-MiniLM-L6-v2) on the runtime of
    ``options``, its loading bar shown or not (torch; on ONNX there is none, and transformers is not imported).

    Raises:
        IngestError: the model cannot be loaded (not available offline, the ``hf`` extra missing...).
    """
    options = options if options is not None else EmbeddingBackendOptions()
    torch_backend = options.resolved(name) == "torch"  # ONNX shows no loading bar: transformers is not imported
    with model_loading_progress(show_progress) if torch_backend else nullcontext():
        try:
            return default_embedding_model(name, backend=options.backend, precision=options.precision,
                                           num_threads=options.num_threads, device=options.device)
        except Exception as exc:  # EmbeddingModelError, an ImportError naming the extra, an error of the backend
            raise IngestError(f"embedding model {name or 'default'!r} cannot be loaded: {exc}") from None


def check_question(question: Any, where: str = "the question") -> str:
    """``question`` if it is a non-empty string that is valid Unicode text (encodable as UTF-8).

    A command-line argument that is not UTF-8 arrives with its bytes as lone surrogates (Python's
    ``surrogateescape``); they are refused here, naming the first bad byte.

    Raises:
        IngestError: not a string, empty or only whitespace, or not UTF-8 text (``where`` names it).
    """
    if not isinstance(question, str):
        raise IngestError(f"{where} must be a string, got {type(question).__name__}")
    try:
        question.encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(question[exc.start])
        what = f"byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"lone surrogate U+{code:04X}"
        raise IngestError(f"{where} is not UTF-8 text ({what} at character {exc.start + 1})") from None
    if not question.strip():
        raise IngestError(f"{where} is empty")
    return question


def check_k(k: Any, name: str = "--k") -> int:
    """``k`` if it is an integer from 1 to :data:`MAX_K`; ``name`` is how the message names it (the option, or the
    JSON key of a request).

    Raises:
        IngestError: anything else.
    """
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        shown = json.dumps(k) if isinstance(k, (bool, int, float, str)) or k is None else repr(k)
        raise IngestError(f"{name} must be an integer from 1 to {MAX_K}, got {shown}"[:200])
    return k


@dataclass(frozen=True)
class QueryHit:
    """One retrieved chunk: its document, character offsets ``[start, end)`` in the document, the store's score
    (higher is closer), the document's summary, the chunk text and, when the reader recorded them, the pages
    ``(first, last)`` the chunk lies on (metadata ``page_start``/``page_end``)."""

    doc_id: str
    start: int | None
    end: int | None
    score: float | None
    summary: str | None
    text: str
    pages: tuple[int, int] | None = None

    @classmethod
    def from_node(cls, hit: NodeWithScore) -> QueryHit:
        node, meta = hit.node, hit.node.metadata
        first, last = meta.get("page_start"), meta.get("page_end", meta.get("page_start"))
        pages = (int(first), int(last)) if isinstance(first, int) and isinstance(last, int) else None
        return cls(doc_id=node.ref_doc_id or node.node_id, start=getattr(node, "start_char_idx", None),
                   end=getattr(node, "end_char_idx", None), score=hit.score, summary=meta.get("document_summary"),
                   text=node.get_content(), pages=pages)

    def to_dict(self) -> dict[str, Any]:
        """The hit as JSON: ``document``, ``pages`` (``{"start", "end"}`` or ``null``), ``start``, ``end``,
        ``score``, ``summary``, ``text``."""
        pages = None if self.pages is None else {"start": self.pages[0], "end": self.pages[1]}
        return {"document": self.doc_id, "pages": pages, "start": self.start, "end": self.end, "score": self.score,
                "summary": self.summary, "text": self.text}


class _ReadOnly(TransformComponent):
    """The transformations of the :class:`Searcher`'s index, which only reads: any insert is refused (and LlamaIndex's
    default node parser, whose tokenizer takes a while to load, is not built)."""

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        raise IngestError("the collection is open for questions only: write with llama-sac ingest")


class Searcher:
    """A collection open for questions: the store opened and the embedding model loaded once (a context manager;
    the store's client is closed on exit).

    The embedding model is ``embed_model``, else ``embed_model_name``, else the one the collection was ingested with.
    With ``document_aware`` (the default, :data:`DEFAULT_DOCUMENT_AWARE`),
    :class:`~llama_index_sac.DocumentAwareRetriever` with its defaults ranks the chunks (its document index is the one
    ``ingest`` saved for the collection's current state, :mod:`~llama_index_sac.apps.ingest.document_index`, else read
    from the collection once, on opening); else plain dense retrieval. While an
    ``ingest`` holds the collection's lock and the collection has no row yet (or does not exist yet),
    ``ingest_in_progress`` is true and every search returns ``[]``.

    :meth:`refresh` reopens the store and reloads the document index when the record's generation
    (:mod:`~llama_index_sac.apps.ingest.generation`) changed since: an ``ingest`` or ``rm`` from any process. A hit
    whose row is gone (deleted by another process since the store was opened: no document id and no text) is never
    returned; ``dropped`` counts those of the last search.

    Attributes (after entering): ``rows`` (the collection's rows on opening), ``ingest_in_progress``, ``generation``
    (the record's generation when opened), ``dropped``, ``unverified`` (a Chroma store's vector index that could not
    be compared with the checksums ``ingest`` recorded: the note that says why, else ``None``;
    :mod:`~llama_index_sac.apps.ingest.chroma_digest`).

    Raises (on entering):
        IngestError: a missing store or collection, a folder that is not a store of that kind (or whose ingest
            record names the other kind), a damaged store (a Chroma vector index that differs from the checksums
            ``ingest`` recorded), a store that cannot be read, or an embedding model other than the
            collection's (refused by name before loading when ``embed_model_name`` names another model).
    """

    def __init__(self, store: StoreSpec | str, *, collection: str = "llama-sac",
                 embed_model: BaseEmbedding | None = None, embed_model_name: str | None = None,
                 embed_options: EmbeddingBackendOptions | None = None, document_aware: bool = DEFAULT_DOCUMENT_AWARE,
                 show_progress: bool = True) -> None:
        self.spec = store if isinstance(store, StoreSpec) else StoreSpec.parse(store)
        self.collection = collection
        self._embed, self._name, self._options = embed_model, embed_model_name, embed_options
        self.document_aware, self.show_progress = document_aware, show_progress
        self.rows, self.ingest_in_progress, self.dropped = 0, False, 0
        self.generation: str | None = None
        self.unverified: str | None = None
        self._stack = ExitStack()
        self._index: VectorStoreIndex | None = None
        self._documents: DocumentIndex | None = None

    def __enter__(self) -> Searcher:
        try:
            self._open()
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stack.close()

    def refresh(self) -> bool:
        """Reopen the collection when the record's generation changed since it was opened (the embedding model is
        kept); nothing when it did not.

        Returns:
            Whether it was reopened.

        Raises:
            IngestError: as on entering; the searcher is then closed, and the next call tries again.
        """
        if read_generation(IngestRecord(self.spec, self.collection)) == self.generation:
            return False
        self._stack.close()
        self._stack = ExitStack()
        self._index, self._documents, self.rows, self.ingest_in_progress = None, None, 0, False
        self.generation = self.unverified = None
        try:
            self._open()
        except BaseException:
            self._stack.close()
            self._index, self._documents, self.generation = None, None, None
            raise
        return True

    def _open(self) -> None:
        record = IngestRecord(self.spec, self.collection)
        self.generation = read_generation(record)  # before reading: a change while opening is seen next time
        recorded = record.settings()
        built = (recorded or {}).get("settings", {}).get("embed_model") or {}
        if self._embed is None and self._name is not None and built:
            self._check_name(recorded or {}, built)
        running = record.ingest_running()
        try:
            opened = self._stack.enter_context(open_store(self.spec, self.collection, create=False,
                                                          empty_ok=record.exists(),
                                                          recorded_kind=record.store_kind()))
        except IngestError:
            if running:  # the first ingest has not created the store or the collection yet
                self.ingest_in_progress = True
                return
            raise
        self.rows, self.unverified = opened.rows, opened.unverified
        if opened.rows == 0:
            self.ingest_in_progress = running
            return
        name = self._name if self._name is not None else (recorded or {}).get("embed_model_name")
        try:
            precision = (recorded or {}).get("embed_precision", "float32")
            if self._embed is None and precision not in EMBED_PRECISIONS:
                raise IngestError(f"collection {self.collection!r} was embedded at precision {precision!r}, which "
                                  "llama-sac query does not offer: query it through the API with that model")
            options = self._options if self._options is not None else EmbeddingBackendOptions()
            embed = self._embed if self._embed is not None else load_model(name, self.show_progress, options)
            self._embed = embed  # kept by refresh()
        except ValueError as exc:
            raise IngestError(str(exc)) from None
        space = recorded_space(built) if built else None
        if space is not None and space != model_space(embed):
            raise IngestError(f"collection {self.collection!r} was embedded with {space}, not {model_space(embed)}: "
                              "pass that --embed-model / --embed-precision")
        self._index = VectorStoreIndex.from_vector_store(opened.vector_store, embed_model=embed,
                                                         transformations=[_ReadOnly()])
        if self.document_aware:
            try:  # the index ingest saved for this state of the collection, else read from the chunks
                self._documents = load_document_index(record) or DocumentIndex.from_source(opened.vector_store)
            except ValueError as exc:  # no summaries: not a SAC collection
                raise IngestError(f"--document-aware: {exc}") from None

    def _check_name(self, recorded: dict[str, Any], built: dict[str, Any]) -> None:
        """Refuse ``embed_model_name`` at once when it is not the model the collection was built with."""
        asked = DEFAULT_EMBED_MODEL_NAME if self._name in _DEFAULT_NAMES else self._name
        if asked in (built.get("model_name"), recorded.get("embed_model_name")):
            return
        used = built.get("model_name") or recorded.get("embed_model_name") or "another model"
        raise IngestError(f"--embed-model: collection {self.collection!r} was embedded with {used}, not "
                          f"{self._name}: leave --embed-model out (the collection's model is used) or pass that one")

    @property
    def embed_model(self) -> BaseEmbedding | None:
        """The embedding model the questions are embedded with (``None`` until the collection has rows)."""
        return self._embed

    def search(self, question: str, k: int = 5) -> list[QueryHit]:
        """The ``k`` chunks closest to ``question``, best first (``[]`` for an empty collection); equal scores ordered
        by document id, then start offset, whatever order the store returned them in.

        Raises:
            IngestError: an empty or non-UTF-8 question, ``k`` outside 1 to :data:`MAX_K`, a store that cannot be read
                or answer (e.g. a query vector of another dimension than the collection's).
        """
        check_question(question)
        check_k(k)
        self.dropped = 0
        if self._index is None:
            return []
        try:
            if self._documents is not None:
                hits = DocumentAwareRetriever.from_defaults(self._index, self._documents, similarity_top_k=k).retrieve(
                    question)
            else:
                hits = self._index.as_retriever(similarity_top_k=k).retrieve(question)
        except store_errors(self.spec.kind) as exc:  # e.g. vectors of another dimension than the collection's
            first = (str(exc).strip().splitlines() or [""])[0]
            raise IngestError(f"{self.spec} cannot answer ({type(exc).__name__}: {first}); was the collection "
                              "built with another --embed-model?") from None
        kept = [h for h in hits if h.node.ref_doc_id is not None or h.node.get_content()]
        self.dropped = len(hits) - len(kept)  # rows deleted under the open store: ghosts, never returned
        found = [QueryHit.from_node(h) for h in kept]
        # equal scores in the order of every store (NumpyVectorStore's too): document id, then offset
        return sorted(found, key=lambda h: (-(h.score or 0.0), h.doc_id, -1 if h.start is None else h.start))


def query(question: str, store: StoreSpec | str, *, collection: str = "llama-sac", k: int = 5,
          embed_model: BaseEmbedding | None = None, embed_model_name: str | None = None,
          embed_options: EmbeddingBackendOptions | None = None, document_aware: bool = DEFAULT_DOCUMENT_AWARE,
          show_progress: bool = True) -> list[QueryHit]:
    """The ``k`` chunks of the collection closest to ``question``, best first (``[]`` for an empty collection): one
    question through a :class:`Searcher` (see it for the arguments). Nothing is created or written.

    Raises:
        IngestError: an empty or non-UTF-8 question, ``k`` outside 1 to :data:`MAX_K`, and see :class:`Searcher`.
    """
    check_question(question)
    check_k(k)
    with Searcher(store, collection=collection, embed_model=embed_model, embed_model_name=embed_model_name,
                  embed_options=embed_options, document_aware=document_aware, show_progress=show_progress) as searcher:
        return searcher.search(question, k)
