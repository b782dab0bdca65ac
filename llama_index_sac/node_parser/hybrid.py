"""``HybridNodeParser``: semantic sections first, then recursive character splitting inside each section.

The hybrid chunking of the SAC paper's comparison (Reuter et al., 2025, arXiv 2510.06999, section 3): a
:class:`SemanticNodeParser` finds where the topic shifts (the *sections*), then :func:`recursive_chunk_spans` cuts
each section to ``chunk_size``/``chunk_overlap`` characters. So chunks respect the size limit of the recursive
splitter (the SAC setting: 500 characters) and never straddle a topic shift.

Guarantees: every final chunk lies inside exactly one section; ``start_char_idx``/``end_char_idx`` are
offsets into the ORIGINAL document (section start + offset inside the section, never relative to the section) and
the SOURCE relationship is the original document; no chunk is longer than ``chunk_size`` (minus the metadata reserve
with ``count_metadata=True``), empty or whitespace-only; starts and ends strictly increase; overlap only ever occurs
between two chunks of the same section. Each node's metadata records its section:

* ``section_id``: the section's index in its document (0, 1, ...);
* ``section_start_char_idx`` / ``section_end_char_idx``: the section's span in the original document.

These keys are excluded from the embedding and LLM renderings (they are bookkeeping, not content).

Losslessness: sections tile the document; inside a section the recursive splitter only ever leaves out whitespace
that fits with no neighbouring chunk, so P-COVER always holds and, in the common case, P-LOSSLESS too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import Field, model_validator
from llama_index.core.schema import BaseNode, MetadataMode

from llama_index_sac.constants import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE
from llama_index_sac.embeddings.limits import OverflowPolicy, check_embed_limit
from llama_index_sac.node_parser.base import SpanNodeParser
from llama_index_sac.node_parser.recursive import DEFAULT_SEPARATORS, recursive_chunk_spans
from llama_index_sac.node_parser.semantic import SemanticNodeParser
from llama_index_sac.spans import Span

__all__ = ["HybridNodeParser", "SECTION_METADATA_KEYS", "SECTION_OPTIONS"]

#: Metadata keys the hybrid parser adds to every node.
SECTION_METADATA_KEYS = ("section_id", "section_start_char_idx", "section_end_char_idx")

#: ``HybridNodeParser.from_defaults`` keywords that go to the section parser -> its field names.
SECTION_OPTIONS: dict[str, str] = {
    "breakpoint_method": "breakpoint_method",
    "breakpoint_threshold_amount": "breakpoint_threshold_amount",
    "buffer_size": "buffer_size",
    "sentence_backend": "sentence_backend",
    "embed_batch_size": "embed_batch_size",
    "min_section_size": "min_chunk_size",
    "number_of_sections": "number_of_chunks",
}

#: For each document: ``(chunk span, section index)`` per final chunk.
_Located = list[list[tuple[Span, int]]]


def _default_section_parser() -> SemanticNodeParser:
    return SemanticNodeParser(max_chunk_size=None)


class HybridNodeParser(SpanNodeParser):
    """Semantic sections, then recursive character splitting inside each, as a LlamaIndex node parser.

    Example::

        parser = HybridNodeParser.from_defaults(chunk_size=500)
        nodes = parser.get_nodes_from_documents(documents)
        nodes[3].metadata["section_id"], nodes[3].start_char_idx   # offsets into the original document

    Args:
        section_parser: the :class:`SemanticNodeParser` that finds the sections (default: all-MiniLM-L6-v2,
            percentile 95, sections of unlimited size); its settings are part of this parser's cache key.
        chunk_size: the recursive stage's maximum chunk length, in characters; default 500 (the SAC paper's setting).
        chunk_overlap: the recursive stage's maximum overlap of consecutive chunks of one section, in characters,
            below ``chunk_size``; default 0.
        separators: the recursive stage's separator hierarchy, coarsest first.
        is_separator_regex: treat ``separators`` as regular expressions.
        on_embed_overflow: a node whose EMBED string is longer than the section parser's embedding model reads:
            ``"warn"`` (one ``EmbedLimitWarning`` per parse, the default), ``"raise"`` (``ValueError``) or
            ``"ignore"``.
        count_metadata: reserve room for the rendered metadata inside ``chunk_size`` (see :class:`SpanNodeParser`).
        id_func: node id function ``(i, document) -> str``; ``None`` gives deterministic ids.

    Raises:
        ValueError: a pydantic ``ValidationError`` for ``chunk_size <= 0``, ``chunk_overlap`` outside
            ``[0, chunk_size)``, an empty separator list.
    """

    section_parser: SemanticNodeParser = Field(
        default_factory=_default_section_parser,
        description="The semantic parser that finds the sections (its settings are in the cache key).",
    )
    chunk_size: int = Field(default=DEFAULT_CHUNK_SIZE, gt=0, description="Maximum final chunk length, in characters.")
    chunk_overlap: int = Field(
        default=DEFAULT_CHUNK_OVERLAP, ge=0,
        description="Maximum characters shared by consecutive chunks of one section (< chunk_size).",
    )
    separators: list[str] = Field(
        default_factory=lambda: list(DEFAULT_SEPARATORS),
        min_length=1,
        description="Separator hierarchy of the recursive stage, coarsest first.",
    )
    is_separator_regex: bool = Field(default=False, description="Treat separators as regular expressions.")
    on_embed_overflow: OverflowPolicy = Field(
        default="warn",
        exclude=True,
        description="When a node's EMBED string (chunk + embedded metadata) is longer than the section parser's "
        "embedding model reads (256 tokens for MiniLM): one EmbedLimitWarning per parse ('warn'), ValueError "
        "('raise') or nothing ('ignore'). Chunks are never cut, so it is not part of the cache key or the node "
        "ids. The section parser's own on_embed_overflow is not used: sections are not embedded.",
    )

    @model_validator(mode="after")
    def _check_settings(self) -> HybridNodeParser:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})"
            )
        return self

    @classmethod
    def class_name(cls) -> str:
        return "HybridNodeParser"

    @classmethod
    def from_defaults(cls, embed_model: BaseEmbedding | None = None, **kwargs: Any) -> HybridNodeParser:
        """Build a parser; ``embed_model=None`` means ``default_embedding_model()`` (all-MiniLM-L6-v2).

        Keywords are this parser's fields (``chunk_size``, ``chunk_overlap``, ``separators``...) or options of the
        section parser (:data:`SECTION_OPTIONS`: ``breakpoint_method``, ``breakpoint_threshold_amount``,
        ``buffer_size``, ``sentence_backend``, ``embed_batch_size``, ``min_section_size`` for its ``min_chunk_size``,
        ``number_of_sections`` for its ``number_of_chunks``: at most that many sections per document, cut at the
        largest meaning shifts); an option not given keeps the field's default. Sections are of unlimited size."""
        section = {SECTION_OPTIONS[key]: kwargs.pop(key) for key in list(kwargs) if key in SECTION_OPTIONS}
        if kwargs.get("separators") is not None:
            kwargs["separators"] = list(kwargs["separators"])
        else:
            kwargs.pop("separators", None)
        section_parser = SemanticNodeParser.from_defaults(embed_model=embed_model, max_chunk_size=None, **section)
        return cls(section_parser=section_parser, **kwargs)

    def _size_limit(self) -> int:
        return self.chunk_size

    # -- sections -> chunks (shared by every entry point) -----------------------------------------------------
    def _split_sections(self, texts: list[str], reserves: list[int], sections: list[list[Span]]) -> _Located:
        located: _Located = []
        for text, reserve, doc_sections in zip(texts, reserves, sections):
            size = self.chunk_size - reserve
            chunks: list[tuple[Span, int]] = []
            for k, (s, e) in enumerate(doc_sections):
                pieces = recursive_chunk_spans(
                    text[s:e],
                    chunk_size=size,
                    chunk_overlap=min(self.chunk_overlap, size - 1),
                    separators=self.separators,
                    is_separator_regex=self.is_separator_regex,
                )
                chunks.extend(((s + a, s + b), k) for a, b in pieces)
            located.append(chunks)
        return located

    def _sections(self, texts: list[str], show_progress: bool) -> list[list[Span]]:
        return self.section_parser._chunk_indices_many(texts, [0] * len(texts), show_progress)

    async def _asections(self, texts: list[str], show_progress: bool) -> list[list[Span]]:
        return await self.section_parser._achunk_indices_many(texts, [0] * len(texts), show_progress)

    def _chunk_indices_many(self, texts: list[str], reserves: list[int], show_progress: bool) -> list[list[Span]]:
        located = self._split_sections(texts, reserves, self._sections(texts, show_progress))
        return [[span for span, _ in doc] for doc in located]

    async def _achunk_indices_many(
        self, texts: list[str], reserves: list[int], show_progress: bool
    ) -> list[list[Span]]:
        located = self._split_sections(texts, reserves, await self._asections(texts, show_progress))
        return [[span for span, _ in doc] for doc in located]

    def _chunk_indices(self, text: str, reserve: int = 0) -> list[Span]:
        return self._chunk_indices_many([text], [reserve], False)[0]

    def _check_nodes(self, nodes: list[BaseNode]) -> None:
        check_embed_limit(
            [node.get_content(metadata_mode=MetadataMode.EMBED) for node in nodes],
            self.section_parser.embed_model,
            what="HybridNodeParser nodes (EMBED string: chunk + embedded metadata)",
            advice="lower chunk_size (English legal text has about 4 characters per MiniLM token) or exclude "
            "metadata keys from embedding.",
            on_overflow=self.on_embed_overflow,
        )

    def section_indices(self, text: str) -> list[Span]:
        """The semantic sections of ``text`` as ``(start, end)`` spans (they tile the text)."""
        return self._sections([text], False)[0]

    # -- nodes with their section recorded --------------------------------------------------------------------
    def _annotated(
        self, nodes: Sequence[BaseNode], texts: list[str], reserves: list[int], sections: list[list[Span]]
    ) -> list[BaseNode]:
        located = self._split_sections(texts, reserves, sections)
        out = self._assemble(nodes, [[span for span, _ in doc] for doc in located])
        flat = [(span, k, doc_sections[k]) for doc, doc_sections in zip(located, sections) for span, k in doc]
        for node, ((start, _), k, (sec_start, sec_end)) in zip(out, flat, strict=True):
            offset = (getattr(node, "start_char_idx", None) or 0) - start  # the input's offset in its original document
            node.metadata["section_id"] = k
            node.metadata["section_start_char_idx"] = sec_start + offset
            node.metadata["section_end_char_idx"] = sec_end + offset
            for keys in (node.excluded_embed_metadata_keys, node.excluded_llm_metadata_keys):
                keys.extend(key for key in SECTION_METADATA_KEYS if key not in keys)
        return out

    def _parse_nodes(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> list[BaseNode]:
        unique, texts, reserves = self._prepare(nodes)
        return self._annotated(unique, texts, reserves, self._sections(texts, show_progress))

    async def _aparse_nodes(
        self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any
    ) -> list[BaseNode]:
        unique, texts, reserves = self._prepare(nodes)
        return self._annotated(unique, texts, reserves, await self._asections(texts, show_progress))
