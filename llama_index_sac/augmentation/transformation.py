"""``SummaryAugmentationTransformation``: Summary-Augmented Chunking as a LlamaIndex ``TransformComponent``.

SAC (Reuter et al. 2025, arXiv 2510.06999, section 3): every chunk is embedded together with a short summary of its
WHOLE document, so the retriever can tell near-identical clauses of different contracts apart. Each node gets
``metadata["document_summary"]`` FIRST in its metadata, so LlamaIndex's own EMBED rendering puts the summary before
the chunk (``"document_summary: <summary>\\n\\n<chunk text>"``); the node's text and offsets are not touched. Other
metadata keys are left out of the embedding unless ``embed_other_metadata=True``; the summary is trimmed at a word
boundary when summary + chunk would exceed the embedding model's input (the chunk never is); a failed summary raises
or, with ``on_error="skip"``, marks the document's nodes so a re-run retries exactly them; ``cache_dir`` stores the
summaries on disk. Placements (after the parser, recommended; before it), the rendering, the bookkeeping keys, the
limits, errors, recovery and the cache in full: ``docs/augmentation.md``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from typing import Any, Literal

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import Field, PrivateAttr, SerializeAsAny, field_serializer, field_validator
from llama_index.core.schema import BaseNode, Document, TextNode, TransformComponent

from llama_index_sac.augmentation.fit import (
    EmbedBudget,
    FitReport,
    character_budget,
    fit_embed_strings,
    model_budget,
    settings_embed_model,
    warn_unfitted,
)
from llama_index_sac.augmentation.summarizing import summarize_groups
from llama_index_sac.documents import DocumentGroup, group_by_document, is_document
from llama_index_sac.embeddings.identity import embedding_identity
from llama_index_sac.embeddings.limits import EmbedLimitWarning, embedding_max_tokens, token_length_function
from llama_index_sac.node_parser.base import callable_identity
from llama_index_sac.summarizers.base import BaseSummarizer, SummaryResult, run_sync
from llama_index_sac.summarizers.cache import SummaryCache, SummaryCacheError
from llama_index_sac.summarizers.extractive import ExtractiveSummarizer
from llama_index_sac.tables import markdown_table_header, markdown_tables

__all__ = [
    "BOOKKEEPING_KEYS",
    "EmbedLimitWarning",
    "SummaryAugmentationTransformation",
    "markdown_table_header",
    "token_length_function",
]

logger = logging.getLogger(__name__)

#: Metadata keys the transformation writes for bookkeeping (never embedded, never shown to the LLM).
BOOKKEEPING_KEYS = ("summary_strategy", "summary_truncated", "summary_cut", "summary_source", "summary_cache_error",
                    "summary_error", "summary_trimmed")


# -- the transformation ----------------------------------------------------------------------------------------
class SummaryAugmentationTransformation(TransformComponent):
    """Attach one summary per source document to every node of that document (SAC). See the module docstring for
    the EMBED rendering, placements, limits, errors, cache and fitting rules.

    Example::

        pipeline = IngestionPipeline(transformations=[
            RecursiveCharacterNodeParser(chunk_size=500),
            SummaryAugmentationTransformation(summarizer=ExtractiveSummarizer(max_chars=150), embed_model=embed_model,
                                              cache_dir="~/.cache/llama-index-sac/summaries"),
            embed_model,
        ])

    Raises:
        SummarizationError: a document's summary failed (after the summarizer's retries) and ``on_error="raise"``.
        ValueError: document text cannot be reconstructed (nodes without offsets, disagreeing overlaps), or
            ``on_embed_overflow="raise"`` and an EMBED string exceeds the limit.

    Warns:
        EmbedLimitWarning: once per call, with the counts, when chunks exceed the limit on their own (``"trim"``) or
            EMBED strings exceed it (``"warn"``).
    """

    summarizer: SerializeAsAny[BaseSummarizer] = Field(
        default_factory=ExtractiveSummarizer,
        description="Writes one summary per document; the offline ExtractiveSummarizer by default.",
    )
    summary_key: str = Field(default="document_summary", min_length=1, description="Metadata key of the summary.")
    table_header_key: str | None = Field(
        default="table_header",
        description="Metadata key receiving the markdown table header for chunks holding rows of a table whose "
        "header lies outside the chunk; None disables it.",
    )
    embed_other_metadata: bool = Field(
        default=False,
        description="False (content-only): other metadata keys present on the node are excluded from the EMBED "
        "text, so only the summary (and table header) augments the chunk. True: leave them as they are.",
    )
    include_summary_in_llm: bool = Field(
        default=False, description="Also show the summary in the LLM rendering (MetadataMode.LLM)."
    )
    embed_summary: bool = Field(
        default=True,
        description="Embed the summary with every chunk (SAC). False: write it to the metadata only (e.g. for "
        "DocumentAwareRetriever's document index over chunks embedded alone).",
    )
    metadata_template: str | None = Field(
        default=None, description="Set each node's metadata_template (None: keep it, LlamaIndex '{key}: {value}')."
    )
    text_template: str | None = Field(
        default=None,
        description="Set each node's text_template (None: keep it, LlamaIndex '{metadata_str}\\n\\n{content}', "
        "i.e. summary first).",
    )
    embed_model: BaseEmbedding | None = Field(
        default=None,
        description="The embedding model the nodes will be embedded with: its input limit and tokenizer bound each "
        "EMBED string (on_embed_overflow). None: the model set as Settings.embed_model, else nothing is measured "
        "(one EmbedLimitWarning says so) unless embed_limit is set. Serialized as its identity and limit.",
    )
    embed_limit: int | None = Field(
        default=None, gt=0,
        description="Input limit for the EMBED string, in the unit of embed_length_function (characters by "
        "default); overrides embed_model's limit. None: embed_model's limit, or no check.",
    )
    embed_length_function: Callable[[str], int] | None = Field(
        default=None, description="Measures EMBED strings for embed_limit (None: characters); see "
        "token_length_function()."
    )
    on_embed_overflow: Literal["trim", "warn", "raise"] = Field(
        default="trim",
        description="When EMBED strings exceed the limit: trim each one's summary at a word boundary to fit (chunks "
        "too long alone: one EmbedLimitWarning with counts), one EmbedLimitWarning without trimming, or ValueError.",
    )
    on_error: Literal["raise", "skip"] = Field(
        default="raise",
        description="A document whose summary fails after retries: raise SummarizationError, or record "
        "'summary_error' on its nodes and go on.",
    )
    num_workers: int = Field(default=4, ge=1, description="Maximum concurrent summarizer (LLM) requests.")
    show_progress: bool = Field(default=False, description="Show a progress bar over documents.")
    cache_dir: str | None = Field(
        default=None, exclude=True,
        description="Directory of the persistent summary cache (None: no cache). Not part of the settings hash.",
    )

    _calls: int = PrivateAttr(default=0)
    _epoch: int = PrivateAttr(default=0)  # failures recorded by this object (see failure_epoch)
    _memo: dict[str, SummaryResult] = PrivateAttr(default_factory=dict)  # summaries by cache key, without cache_dir
    _budget: tuple[int, EmbedBudget | None] | None = PrivateAttr(default=None)  # (id of embed_model, its budget)
    _last_fit: FitReport = PrivateAttr(default_factory=FitReport)
    _warned_unfitted: bool = PrivateAttr(default=False)

    @field_validator("cache_dir", mode="before")
    @classmethod
    def _path_to_str(cls, value: Any) -> Any:
        return os.fspath(value) if isinstance(value, os.PathLike) else value

    @field_serializer("embed_length_function")
    def _serialize_length(self, fn: Callable[[str], int] | None) -> str | None:
        return callable_identity(fn)

    @field_serializer("embed_model")
    def _serialize_embed_model(self, model: BaseEmbedding | None) -> dict[str, Any] | None:
        if model is None:
            return None
        return {**embedding_identity(model), "max_tokens": embedding_max_tokens(model),
                "text_instruction": getattr(model, "text_instruction", None)}

    @classmethod
    def class_name(cls) -> str:
        return "SummaryAugmentationTransformation"

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        """Settings (as LlamaIndex's ingestion cache hashes them), plus ``summarizer_identity`` and, once a summary
        has failed, ``failure_epoch`` (so the next run misses the cached output that holds the failed nodes)."""
        data = super().to_dict(**kwargs)
        data["summarizer_identity"] = self.summarizer.identity()
        fitted_to = self._settings_model()
        if fitted_to is not None:  # EMBED strings are fitted to Settings.embed_model: a new one, a new output
            data["settings_embed_model"] = self._serialize_embed_model(fitted_to)
        epoch = self.failure_epoch
        if epoch:
            data["failure_epoch"] = epoch
        return data

    @property
    def failure_epoch(self) -> int:
        """How many calls had a failed summary: this object's count, or the count kept in ``cache_dir``, whichever
        is larger (0 when none ever failed). Only ever grows; see the module docstring (Recovery)."""
        cache = self.cache
        stored = cache.failure_epoch() if cache is not None else 0
        return max(self._epoch, stored)

    def note_failure_epoch(self, epoch: int) -> None:
        """Raise this object's ``failure_epoch`` to at least ``epoch`` (used by ``SACIngestionPipeline``, which
        keeps the epoch in the ingestion cache so that it travels with ``persist``/``load``)."""
        self._epoch = max(self._epoch, int(epoch))

    @property
    def last_embed_fit(self) -> FitReport:
        """The counts of the last call's fitting (``on_embed_overflow="trim"``): nodes measured, summaries trimmed,
        chunks over the limit on their own."""
        return self._last_fit

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
        groups = group_by_document(nodes, kwargs.get("documents"), self._inherited_metadata)
        reset = getattr(self.summarizer, "reset_circuit", None)
        if callable(reset):  # a new call tries an endpoint that was down again
            reset()
        await self._summarize_all(groups, show_progress)
        self._record_failures(groups)
        for group in groups:
            self._apply(group)
        self._fit_embed_limit(nodes)
        return nodes

    # -- grouping -------------------------------------------------------------------------------------------
    def _inherited_metadata(self, node: BaseNode) -> dict[str, Any]:
        own = {self.summary_key, *BOOKKEEPING_KEYS}
        if self.table_header_key:
            own.add(self.table_header_key)
        return {k: v for k, v in node.metadata.items() if k not in own}

    # -- summarizing ----------------------------------------------------------------------------------------
    def _usable_cache(self) -> SummaryCache | None:
        """The cache, checked once per call: ``on_error="raise"`` refuses an unusable location before any summary,
        ``"skip"`` reads from it (hits) and reports every document whose summary could not be stored."""
        cache = self.cache
        if cache is None:
            return None
        problem = cache.check_writable()
        if problem is not None and self.on_error == "raise":
            raise SummaryCacheError(f"summary cache {cache.directory} cannot be used: {problem}")
        return cache

    async def _summarize_all(self, groups: list[DocumentGroup], show_progress: bool) -> None:
        self._calls += await summarize_groups(
            groups, self.summarizer, cache=self._usable_cache(), memo=self._memo, on_error=self.on_error,
            concurrency=self.num_workers, show_progress=show_progress,
        )

    def _record_failures(self, groups: list[DocumentGroup]) -> None:
        """After a call with failed summaries: raise ``failure_epoch`` (this object, and ``cache_dir`` when set)."""
        if not any(g.error is not None for g in groups):
            return
        epoch = self.failure_epoch + 1
        self._epoch = epoch
        cache = self.cache
        if cache is not None:
            try:
                cache.set_failure_epoch(epoch)
            except OSError as exc:
                logger.warning("could not record the failure epoch in %s (%s): a re-run in another process may "
                               "reuse LlamaIndex's cached output of this call", cache.directory, exc)

    # -- writing --------------------------------------------------------------------------------------------
    def _apply(self, group: DocumentGroup) -> None:
        tables = markdown_tables(group.text) if self.table_header_key and group.text and "|" in group.text else []
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
            if tables and not is_document(node) and isinstance(node, TextNode):
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
            if group.cache_error is not None:
                new["summary_cache_error"] = group.cache_error
            if group.error is not None:
                new["summary_error"] = group.error
            node.metadata = new
            excluded_embed = set(node.excluded_embed_metadata_keys) | set(BOOKKEEPING_KEYS)
            if self.embed_summary:
                excluded_embed.discard(self.summary_key)
            else:
                excluded_embed.add(self.summary_key)
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

    def _settings_model(self) -> BaseEmbedding | None:
        """``Settings.embed_model`` when it is the model EMBED strings are fitted to (no embed_model, no
        embed_limit), else None."""
        return settings_embed_model() if self.embed_model is None and self.embed_limit is None else None

    def _fit_embed_limit(self, nodes: Sequence[BaseNode]) -> None:
        embedded = [n for n in nodes if not isinstance(n, Document)]  # documents are not embedded; their chunks are
        budget: EmbedBudget | None = None
        if self.embed_limit is not None:
            budget = character_budget(self.embed_limit, self.embed_length_function)
        else:
            model = self.embed_model if self.embed_model is not None else settings_embed_model()
            if model is not None:
                if self._budget is None or self._budget[0] != id(model):
                    self._budget = (id(model), model_budget(model))  # a tokenizer, built once
                budget = self._budget[1]
            elif embedded and self.embed_summary and not self._warned_unfitted:
                self._warned_unfitted = True
                warn_unfitted()
        self._last_fit = fit_embed_strings(embedded, self.summary_key, budget, self.on_embed_overflow)
