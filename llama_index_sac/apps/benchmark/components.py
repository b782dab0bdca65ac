"""The components a run configuration can use: the library's settings models
(:mod:`llama_index_sac.settings`), plus the benchmark's own choices.

* ``parser``: ``recursive``, ``semantic``, ``hybrid``, the library's :data:`~llama_index_sac.settings.ParserSettings`;
* ``summarizer``: ``none`` (the baselines), ``extractive`` (plus ``terms``: the term table fitted on the run's
  documents or the shipped one), ``llm`` (plus ``prompt``: generic or expert, per dataset);
* ``augmentation``: the documents' metadata embedded with every chunk;
* ``document_retrieval``: :class:`~llama_index_sac.settings.DocumentRetrievalSettings`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, get_args

from llama_index.core.bridge.pydantic import BaseModel, ConfigDict, Field, model_serializer

from llama_index_sac import settings as library
from llama_index_sac.augmentation.transformation import SummaryAugmentationTransformation
from llama_index_sac.embeddings.default import EMBED_BACKENDS, EMBED_PRECISIONS
from llama_index_sac.embeddings.onnx_export import GRAPH_KINDS
from llama_index_sac.settings import (
    AnyParserSettings,
    ComponentSettings,
    DocumentRetrievalSettings,
    HybridParserSettings,
    ParserSettings,
    RecursiveParserSettings,
    SemanticParserSettings,
    kinds_of,
)

__all__ = [
    "DOCUMENT_METADATA_KEYS",
    "EmbedBackendChoice",
    "EmbedGraphChoice",
    "EmbedPrecisionChoice",
    "ParserChoice",
    "SummarizerChoice",
    "PARSER_KINDS",
    "SUMMARIZER_KINDS",
    "AugmentationSettings",
    "ComponentSettings",
    "DocumentRetrievalSettings",
    "ExtractiveSummarizerSettings",
    "HybridParserSettings",
    "LLMSummarizerSettings",
    "NoSummarizerSettings",
    "ParserSettings",
    "PromptChoice",
    "RecursiveParserSettings",
    "SemanticParserSettings",
    "SummarizerSettings",
    "settings_class",
]

#: The LLM summary prompts: generic (the SAC prompt) or expert (document-type specific).
PromptChoice = Literal["generic", "expert"]


class NoSummarizerSettings(ComponentSettings):
    """No document summary: the chunks are embedded alone (the baselines)."""

    kind: Literal["none"] = "none"


class ExtractiveSummarizerSettings(library.ExtractiveSummarizerSettings):
    """The library's extractive summarizer settings, and the term table the run weighs key terms against."""

    builder_fields: ClassVar[frozenset[str]] = frozenset({"terms"})

    terms: Literal["corpus", "shipped"] = Field(
        default="corpus",
        description="The document frequencies key terms are weighted against: corpus (a TermStatistics table fitted "
        "on every document of the run, before any summary is written: the published runs) or shipped (the "
        "package's legal-terms-v1 table, what ExtractiveSummarizer() uses by default).",
    )


class LLMSummarizerSettings(library.LLMSummarizerSettings):
    """The library's LLM summarizer settings, and the prompt (generic, or expert per dataset)."""

    builder_fields: ClassVar[frozenset[str]] = frozenset({"model", "api_base", "prompt"})

    prompt: PromptChoice = Field(
        default="generic",
        description="generic (the SAC prompt) or expert (document-type specific prompts for contractnli/nda, "
        "privacy_qa, maud and cuad; other datasets get the generic prompt).",
    )


AnySummarizerSettings = NoSummarizerSettings | ExtractiveSummarizerSettings | LLMSummarizerSettings
#: A configuration's ``summarizer``: one of the summarizer settings, chosen by ``kind`` (default ``none``).
SummarizerSettings = Annotated[AnySummarizerSettings, Field(discriminator="kind")]


#: The metadata keys every benchmark document carries (``RetrievalBenchmark.to_documents``).
DocumentMetadataKey = Literal["file_path", "file_name", "dataset"]
DOCUMENT_METADATA_KEYS: tuple[str, ...] = get_args(DocumentMetadataKey)


class AugmentationSettings(BaseModel):
    """What is embedded with every chunk besides its text and (SAC) its document's summary."""

    model_config = ConfigDict(extra="forbid")

    embed_metadata: list[DocumentMetadataKey] = Field(
        default_factory=list,
        description="Document metadata keys embedded with every chunk: [] (the SAC paper's setting) or ['file_path'] "
        "(what LlamaIndex's SimpleDirectoryReader does out of the box).",
    )
    embed_summary: bool = Field(
        default=True,
        description="Embed the summary with every chunk (SAC). False: the summary only feeds the document-aware "
        "retriever's document index (chunks embedded alone, as the baseline).",
    )
    on_embed_overflow: Literal["trim", "warn"] = Field(
        default=SummaryAugmentationTransformation.model_fields["on_embed_overflow"].default,
        description="An EMBED string longer than the embedding model reads: trim its summary to fit (the default) "
        "or leave it to the model's truncation, with one warning (the published runs before trimming).",
    )

    @model_serializer(mode="wrap")
    def _as_recorded(self, handler: Any) -> dict[str, Any]:
        """``warn`` is not written: results recorded before trimming existed have no such key, and mean it."""
        data = dict(handler(self))
        if data.get("on_embed_overflow") == "warn":
            del data["on_embed_overflow"]
        return data


_PARSERS = kinds_of(AnyParserSettings)
_SUMMARIZERS = kinds_of(AnySummarizerSettings)
#: The parser kinds, in declaration order (``recursive`` first: the default).
PARSER_KINDS: tuple[str, ...] = tuple(_PARSERS)
#: The summarizer kinds, in declaration order (``none`` first: the default).
SUMMARIZER_KINDS: tuple[str, ...] = tuple(_SUMMARIZERS)


def settings_class(section: str, kind: str) -> type[ComponentSettings] | None:
    """The settings class of ``kind`` in ``section`` (``"parser"`` or ``"summarizer"``), or None if unknown."""
    sections: dict[str, dict[str, Any]] = {"parser": _PARSERS, "summarizer": _SUMMARIZERS}
    return sections.get(section, {}).get(kind)


# the CLI's choices, read from the declarations above (type checkers see plain strings)
if TYPE_CHECKING:
    ParserChoice = str
    SummarizerChoice = str
    EmbedBackendChoice = str
    EmbedPrecisionChoice = str
    EmbedGraphChoice = str
else:
    EmbedBackendChoice = Literal[EMBED_BACKENDS]
    EmbedPrecisionChoice = Literal[EMBED_PRECISIONS]
    EmbedGraphChoice = Literal[GRAPH_KINDS]
    ParserChoice = Literal[PARSER_KINDS]
    SummarizerChoice = Literal[tuple(k for k in SUMMARIZER_KINDS if k != "none")]  # --summarizer: of SAC configs
