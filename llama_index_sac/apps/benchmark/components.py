"""The settings of each component a run configuration can use, taken from the components themselves.

Each class below is the settings of one component *kind* (``kind`` is the discriminator of the union it belongs to):
a subset of the component's own pydantic fields, copied field by field with :func:`component_field` (type, default,
bounds and description come from the component: ``RecursiveCharacterNodeParser.chunk_size`` is the one place the
default chunk size is written), plus the few harness-only choices (``terms``, ``model``, ``api_base``, ``prompt``).
After the field checks, every settings object is validated by the component itself (:meth:`ComponentSettings.check`
instantiates it with placeholder models: ``MockEmbedding``/``MockLLM``, nothing is loaded), so the component's cross-
field rules (``chunk_overlap < chunk_size``, prompt variables...) apply once, in the component.

* ``parser``: ``recursive``, ``semantic``, ``hybrid`` (``RecursiveCharacterNodeParser``, ``SemanticNodeParser``,
  ``HybridNodeParser``);
* ``summarizer``: ``none``, ``extractive``, ``llm`` (no summary, ``ExtractiveSummarizer``, ``LLMSummarizer``);
* ``augmentation``: the documents' metadata embedded with every chunk.
"""

from __future__ import annotations

import copy
from typing import Annotated, Any, ClassVar, Literal, get_args

from llama_index.core.bridge.pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM

from llama_index_sac.node_parser import HybridNodeParser, RecursiveCharacterNodeParser, SemanticNodeParser
from llama_index_sac.node_parser.semantic import BreakpointMethod
from llama_index_sac.retrievers.document_aware import (
    DEFAULT_CANDIDATE_TOP_K,
    DEFAULT_FOCUS_DOCUMENTS,
    DEFAULT_NAME_WEIGHT,
    DEFAULT_PRIOR_WEIGHT,
)
from llama_index_sac.retrievers.document_names import DEFAULT_MAX_DOCUMENT_FREQUENCY
from llama_index_sac.sentences import SentenceBackend
from llama_index_sac.summarizers import ExtractiveSummarizer, LLMSummarizer

__all__ = [
    "DOCUMENT_METADATA_KEYS",
    "PARSER_KINDS",
    "SUMMARIZER_KINDS",
    "PromptChoice",
    "AugmentationSettings",
    "ComponentSettings",
    "ExtractiveSummarizerSettings",
    "HybridParserSettings",
    "LLMSummarizerSettings",
    "NoSummarizerSettings",
    "ParserSettings",
    "RecursiveParserSettings",
    "SemanticParserSettings",
    "SummarizerSettings",
    "component_field",
    "settings_class",
]


def component_field(component: type[BaseModel], name: str) -> Any:
    """A copy of the pydantic field ``name`` of ``component`` (default, bounds, description), to declare the same
    field on a settings model: ``chunk_size: int = component_field(RecursiveCharacterNodeParser, "chunk_size")``.

    Raises:
        KeyError: ``component`` has no field ``name``.
    """
    return copy.deepcopy(component.model_fields[name])


def _messages(exc: ValidationError) -> str:
    return "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())


class ComponentSettings(BaseModel):
    """Base of the settings of one component kind: unknown keys are refused, values coerced (``"400"`` -> 400)."""

    model_config = ConfigDict(extra="forbid")

    #: Fields that are not the component's own (harness choices): left out of :meth:`component_kwargs`.
    harness_fields: ClassVar[frozenset[str]] = frozenset()

    def component_kwargs(self) -> dict[str, Any]:
        """The settings as keyword arguments of the component (``kind`` and :attr:`harness_fields` left out)."""
        return self.model_dump(exclude={"kind", *self.harness_fields})

    def check(self) -> None:
        """Instantiate the component with placeholder models (subclasses); raises ``ValidationError`` if it refuses."""

    @model_validator(mode="after")
    def _validated_by_the_component(self) -> ComponentSettings:
        try:
            self.check()
        except ValidationError as exc:  # the component's own rule, e.g. chunk_overlap < chunk_size
            raise ValueError(_messages(exc)) from None
        return self


# -- node parsers ------------------------------------------------------------------------------------------------


class RecursiveParserSettings(ComponentSettings):
    """``RecursiveCharacterNodeParser(chunk_size, chunk_overlap)``: the SAC paper's fixed-size chunks."""

    kind: Literal["recursive"] = "recursive"
    chunk_size: int = component_field(RecursiveCharacterNodeParser, "chunk_size")
    chunk_overlap: int = component_field(RecursiveCharacterNodeParser, "chunk_overlap")

    def check(self) -> None:
        RecursiveCharacterNodeParser(**self.component_kwargs())


class SemanticParserSettings(ComponentSettings):
    """``SemanticNodeParser``: sentence groups cut where the meaning shifts (sizes in characters)."""

    kind: Literal["semantic"] = "semantic"
    breakpoint_method: BreakpointMethod = component_field(SemanticNodeParser, "breakpoint_method")
    breakpoint_threshold_amount: float | None = component_field(SemanticNodeParser, "breakpoint_threshold_amount")
    buffer_size: int = component_field(SemanticNodeParser, "buffer_size")
    number_of_chunks: int | None = component_field(SemanticNodeParser, "number_of_chunks")
    min_chunk_size: int = component_field(SemanticNodeParser, "min_chunk_size")
    max_chunk_size: int | None = component_field(SemanticNodeParser, "max_chunk_size")
    sentence_backend: SentenceBackend = component_field(SemanticNodeParser, "sentence_backend")

    def check(self) -> None:
        SemanticNodeParser(embed_model=MockEmbedding(embed_dim=1), **self.component_kwargs())


class HybridParserSettings(ComponentSettings):
    """``HybridNodeParser(chunk_size, chunk_overlap)``: semantic sections (the parser's default section finder), then
    recursive splitting inside each."""

    kind: Literal["hybrid"] = "hybrid"
    chunk_size: int = component_field(HybridNodeParser, "chunk_size")
    chunk_overlap: int = component_field(HybridNodeParser, "chunk_overlap")

    def check(self) -> None:
        HybridNodeParser(section_parser=SemanticNodeParser(embed_model=MockEmbedding(embed_dim=1)),
                         **self.component_kwargs())


AnyParserSettings = RecursiveParserSettings | SemanticParserSettings | HybridParserSettings
#: A configuration's ``parser``: one of the parser settings, chosen by ``kind`` (default ``recursive``).
ParserSettings = Annotated[AnyParserSettings, Field(discriminator="kind")]


# -- summarizers -------------------------------------------------------------------------------------------------

#: The LLM summary prompts: generic (the SAC prompt) or expert (document-type specific).
PromptChoice = Literal["generic", "expert"]


class NoSummarizerSettings(ComponentSettings):
    """No document summary: the chunks are embedded alone (the baselines)."""

    kind: Literal["none"] = "none"


class ExtractiveSummarizerSettings(ComponentSettings):
    """``ExtractiveSummarizer``: offline contrastive summaries (document type, parties, date, key terms)."""

    harness_fields: ClassVar[frozenset[str]] = frozenset({"terms"})

    kind: Literal["extractive"] = "extractive"
    max_chars: int = component_field(ExtractiveSummarizer, "max_chars")
    metadata_keys: list[str] = component_field(ExtractiveSummarizer, "metadata_keys")
    max_terms: int = component_field(ExtractiveSummarizer, "max_terms")
    lead_chars: int = component_field(ExtractiveSummarizer, "lead_chars")
    term_sample_chars: int = component_field(ExtractiveSummarizer, "term_sample_chars")
    include_date: bool = component_field(ExtractiveSummarizer, "include_date")
    terms: Literal["corpus", "shipped"] = Field(
        default="corpus",
        description="The document frequencies key terms are weighted against: corpus (a TermStatistics table fitted "
        "on every document of the run, before any summary is written: the published runs) or shipped (the "
        "package's legal-terms-v1 table, what ExtractiveSummarizer() uses by default).",
    )

    def check(self) -> None:
        ExtractiveSummarizer(**self.component_kwargs())


class LLMSummarizerSettings(ComponentSettings):
    """``LLMSummarizer`` on a local ``.gguf`` file, an OpenAI-compatible server (``api_base``) or OpenAI's API."""

    harness_fields: ClassVar[frozenset[str]] = frozenset({"model", "api_base", "prompt"})

    kind: Literal["llm"] = "llm"
    model: str = Field(
        min_length=1,
        description="The LLM: an OpenAI model name (needs OPENAI_API_KEY), a local .gguf path (llama-cpp-python), "
        "or the name of a model served at api_base.",
    )
    api_base: str | None = Field(
        default=None, min_length=1,
        description="OpenAI-compatible endpoint serving model (e.g. http://127.0.0.1:8000/v1 for llama_cpp.server).",
    )
    prompt: PromptChoice = Field(
        default="generic",
        description="generic (the SAC prompt) or expert (document-type specific prompts for contractnli/nda, "
        "privacy_qa, maud and cuad; other datasets get the generic prompt).",
    )
    max_chars: int = component_field(LLMSummarizer, "max_chars")
    metadata_keys: list[str] = component_field(LLMSummarizer, "metadata_keys")
    max_input_chars: int | None = component_field(LLMSummarizer, "max_input_chars")
    long_document: Literal["map_reduce", "head_tail"] = component_field(LLMSummarizer, "long_document")

    def check(self) -> None:
        LLMSummarizer(llm=MockLLM(), **self.component_kwargs())


AnySummarizerSettings = NoSummarizerSettings | ExtractiveSummarizerSettings | LLMSummarizerSettings
#: A configuration's ``summarizer``: one of the summarizer settings, chosen by ``kind`` (default ``none``).
SummarizerSettings = Annotated[AnySummarizerSettings, Field(discriminator="kind")]


# -- augmentation ------------------------------------------------------------------------------------------------

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


# -- document-aware retrieval ------------------------------------------------------------------------------------


class DocumentRetrievalSettings(BaseModel):
    """``retrieval=document-aware``: :class:`~llama_index_sac.DocumentAwareRetriever`'s settings
    (defaults from the retriever)."""

    model_config = ConfigDict(extra="forbid")

    prior_weight: float = Field(default=DEFAULT_PRIOR_WEIGHT, ge=0.0,
                                description="Weight of the BM25 summary prior added to the dense score.")
    focus_documents: int = Field(default=DEFAULT_FOCUS_DOCUMENTS, ge=0,
                                 description="Top-prior documents that also get a dense query filtered to them.")
    candidate_top_k: int = Field(default=DEFAULT_CANDIDATE_TOP_K, ge=1, description="Dense candidates fetched.")
    name_weight: float = Field(default=DEFAULT_NAME_WEIGHT, ge=0.0, le=1.0,
                               description="Share of the distinctive-names match in the document prior.")
    max_name_frequency: float = Field(default=DEFAULT_MAX_DOCUMENT_FREQUENCY, gt=0.0, le=1.0,
                                      description="A name is distinctive below this share of the reference "
                                                  "table's documents.")


# -- the kinds, from the unions ----------------------------------------------------------------------------------


def _by_kind(union: Any) -> dict[str, type[ComponentSettings]]:
    return {get_args(cls.model_fields["kind"].annotation)[0]: cls for cls in get_args(union)}


_PARSERS = _by_kind(AnyParserSettings)
_SUMMARIZERS = _by_kind(AnySummarizerSettings)
#: The parser kinds, in declaration order (``recursive`` first: the default).
PARSER_KINDS: tuple[str, ...] = tuple(_PARSERS)
#: The summarizer kinds, in declaration order (``none`` first: the default).
SUMMARIZER_KINDS: tuple[str, ...] = tuple(_SUMMARIZERS)


def settings_class(section: str, kind: str) -> type[ComponentSettings] | None:
    """The settings class of ``kind`` in ``section`` (``"parser"`` or ``"summarizer"``), or None if unknown."""
    return {"parser": _PARSERS, "summarizer": _SUMMARIZERS}.get(section, {}).get(kind)
