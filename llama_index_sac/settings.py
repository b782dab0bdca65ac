"""The settings of each component, taken from the components themselves, and the components built from them.

Each settings class below is one component *kind* (``kind`` is the discriminator of the union it belongs to): a
subset of the component's own pydantic fields, copied field by field with :func:`component_field` (type, default,
bounds and description come from the component: ``RecursiveCharacterNodeParser.chunk_size`` is the one place the
chunk size is declared, its default being :data:`~llama_index_sac.constants.DEFAULT_CHUNK_SIZE`), plus the few
fields that choose how the component is built (:attr:`ComponentSettings.builder_fields`: an LLM's ``model`` and
``api_base``, the recursive parser's separator hierarchy by name). After the field checks, every settings object is
validated by the component itself (:meth:`ComponentSettings.check` instantiates it with placeholder models,
``MockEmbedding``/``MockLLM``: nothing is loaded), so the component's cross-field rules (``chunk_overlap <
chunk_size``, prompt variables...) apply once, in the component.

* :data:`ParserSettings`: ``recursive``, ``semantic``, ``hybrid`` -> :func:`build_parser`;
* :data:`SummarizerSettings`: ``extractive``, ``llm`` -> :func:`build_summarizer`;
* :class:`DocumentRetrievalSettings`: the options of :class:`~llama_index_sac.DocumentAwareRetriever` and its
  :class:`~llama_index_sac.DocumentIndex` (the fields of :mod:`llama_index_sac.retrievers.options`).

Applications (a benchmark, an ingestion tool, a command line) declare no option of their own for these: they nest
these models (or subclass them to add their own choices) and build the components with the functions below.
"""

from __future__ import annotations

import copy
import os
import urllib.parse
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, get_args

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM

from llama_index_sac.constants import DEFAULT_FOCUS_DOCUMENTS, DEFAULT_SEPARATOR_HIERARCHY, SeparatorHierarchy
from llama_index_sac.embeddings.identity import embedding_identity, embedding_space
from llama_index_sac.embeddings.onnx import OnnxEmbedding
from llama_index_sac.node_parser import HybridNodeParser, RecursiveCharacterNodeParser, SemanticNodeParser
from llama_index_sac.node_parser.base import SpanNodeParser
from llama_index_sac.node_parser.recursive import SEPARATOR_HIERARCHIES
from llama_index_sac.node_parser.semantic import BreakpointMethod
from llama_index_sac.retrievers.options import DocumentPriorOptions, RankingOptions
from llama_index_sac.sentences import SentenceBackend
from llama_index_sac.summarizers import BaseSummarizer, ExtractiveSummarizer, LLMSummarizer

__all__ = [
    "ComponentSettings",
    "DocumentRetrievalSettings",
    "ExtractiveSummarizerSettings",
    "HybridParserSettings",
    "LLMSummarizerSettings",
    "ParserSettings",
    "RecursiveParserSettings",
    "SemanticParserSettings",
    "SettingsError",
    "SummarizerSettings",
    "build_llm_summarizer",
    "build_parser",
    "build_summarizer",
    "check_llm",
    "component_field",
    "kinds_of",
    "model_identity",
]


class SettingsError(ValueError):
    """Settings that cannot be built into a component (a missing model file, a missing API key, an extra that is
    not installed); the message says what to do."""


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

    #: Fields that are not the component's own (how it is built): left out of :meth:`component_kwargs`.
    builder_fields: ClassVar[frozenset[str]] = frozenset()

    def component_kwargs(self) -> dict[str, Any]:
        """The settings as keyword arguments of the component (``kind`` and :attr:`builder_fields` left out)."""
        return self.model_dump(exclude={"kind", *self.builder_fields})

    def check(self) -> None:
        """Instantiate the component with placeholder models (subclasses); raises ``ValidationError`` if it refuses."""

    @model_validator(mode="after")
    def _validated_by_the_component(self) -> ComponentSettings:
        try:
            self.check()
        except ValidationError as exc:  # the component's own rule, e.g. chunk_overlap < chunk_size
            raise ValueError(_messages(exc)) from None
        return self


def kinds_of(union: Any) -> dict[str, type[ComponentSettings]]:
    """``kind`` -> settings class of a union of settings classes (plain or ``Annotated``), in declaration order."""
    args = get_args(union)
    if args and not isinstance(args[0], type):  # Annotated[Union[...], Field(...)]
        args = get_args(args[0])
    return {get_args(cls.model_fields["kind"].annotation)[0]: cls for cls in args}


# -- node parsers ------------------------------------------------------------------------------------------------


class RecursiveParserSettings(ComponentSettings):
    """``RecursiveCharacterNodeParser(chunk_size, chunk_overlap, separators)``: the SAC paper's fixed-size chunks;
    ``separators`` names the hierarchy (:data:`~llama_index_sac.node_parser.recursive.SEPARATOR_HIERARCHIES`) and is
    given to the parser as its list (a builder field: a list of whitespace strings cannot be written in a spec)."""

    builder_fields: ClassVar[frozenset[str]] = frozenset({"separators"})

    kind: Literal["recursive"] = "recursive"
    chunk_size: int = component_field(RecursiveCharacterNodeParser, "chunk_size")
    chunk_overlap: int = component_field(RecursiveCharacterNodeParser, "chunk_overlap")
    separators: SeparatorHierarchy = Field(
        default=DEFAULT_SEPARATOR_HIERARCHY,
        description="Separator hierarchy by name: 'sentences' (paragraphs, lines, sentence ends '. ', words, "
        "characters) or 'words' (the same without sentence ends, as LangChain's RecursiveCharacterTextSplitter).",
    )

    def component_kwargs(self) -> dict[str, Any]:
        kwargs = super().component_kwargs()
        kwargs["separators"] = list(SEPARATOR_HIERARCHIES[self.separators])
        return kwargs

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
#: A parser's settings: one of the classes above, chosen by ``kind``.
ParserSettings = Annotated[AnyParserSettings, Field(discriminator="kind")]


def build_parser(settings: AnyParserSettings, embed_model: BaseEmbedding | None = None) -> SpanNodeParser:
    """The node parser of ``settings``; the semantic and hybrid parsers embed sentences with ``embed_model``
    (``None``: ``default_embedding_model()``)."""
    kwargs = settings.component_kwargs()
    if isinstance(settings, RecursiveParserSettings):
        return RecursiveCharacterNodeParser(**kwargs)
    if isinstance(settings, SemanticParserSettings):
        return SemanticNodeParser.from_defaults(embed_model=embed_model, **kwargs)
    return HybridNodeParser.from_defaults(embed_model=embed_model, **kwargs)


# -- summarizers -------------------------------------------------------------------------------------------------


class ExtractiveSummarizerSettings(ComponentSettings):
    """``ExtractiveSummarizer``: offline contrastive summaries (document type, parties, date, key terms)."""

    kind: Literal["extractive"] = "extractive"
    max_chars: int = component_field(ExtractiveSummarizer, "max_chars")
    metadata_keys: list[str] = component_field(ExtractiveSummarizer, "metadata_keys")
    max_terms: int = component_field(ExtractiveSummarizer, "max_terms")
    lead_chars: int = component_field(ExtractiveSummarizer, "lead_chars")
    term_sample_chars: int = component_field(ExtractiveSummarizer, "term_sample_chars")
    include_date: bool = component_field(ExtractiveSummarizer, "include_date")

    def check(self) -> None:
        ExtractiveSummarizer(**self.component_kwargs())


class LLMSummarizerSettings(ComponentSettings):
    """``LLMSummarizer`` on a local ``.gguf`` file, an OpenAI-compatible server (``api_base``) or OpenAI's API."""

    builder_fields: ClassVar[frozenset[str]] = frozenset({"model", "api_base"})

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
    max_chars: int = component_field(LLMSummarizer, "max_chars")
    metadata_keys: list[str] = component_field(LLMSummarizer, "metadata_keys")
    max_input_chars: int | None = component_field(LLMSummarizer, "max_input_chars")
    long_document: Literal["map_reduce", "head_tail"] = component_field(LLMSummarizer, "long_document")

    @field_validator("api_base")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                parts = urllib.parse.urlsplit(value)
                ok = parts.scheme in ("http", "https") and bool(parts.hostname)
                _ = parts.port  # raises ValueError for a port out of range or not a number
            except ValueError:
                ok = False
            if not ok:
                raise ValueError(f"expected an http:// or https:// URL such as http://127.0.0.1:8000/v1, got {value!r}")
        return value

    def check(self) -> None:
        LLMSummarizer(llm=MockLLM(), **self.component_kwargs())

    def is_local(self) -> bool:
        """True when ``model`` is a local ``.gguf`` file (a path ending in ``.gguf`` or an existing file)."""
        try:  # os.path.expanduser never raises ("~nobody"); a name too long for the OS is not a local file
            return self.model.endswith(".gguf") or Path(os.path.expanduser(self.model)).is_file()
        except (OSError, ValueError):
            return False

    def endpoint(self) -> str:
        """Where the summaries come from, in words: the local file, the server, or OpenAI's API."""
        if self.is_local():
            return f"local model {self.model}"
        return self.api_base or f"OpenAI API (model {self.model})"


AnySummarizerSettings = ExtractiveSummarizerSettings | LLMSummarizerSettings
#: A summarizer's settings: one of the classes above, chosen by ``kind``.
SummarizerSettings = Annotated[AnySummarizerSettings, Field(discriminator="kind")]


def check_llm(settings: LLMSummarizerSettings) -> None:
    """What :func:`build_llm_summarizer` needs from the machine, checked without loading or calling anything: the
    local ``.gguf`` file exists, or OpenAI's API has ``OPENAI_API_KEY``.

    Raises:
        SettingsError: the file is missing, or the key is not set.
    """
    if settings.is_local():
        if not os.path.isfile(os.path.expanduser(settings.model)):
            raise SettingsError(f"GGUF model not found: {os.path.expanduser(settings.model)}")
    elif not settings.api_base and not os.environ.get("OPENAI_API_KEY"):
        raise SettingsError(
            f"LLM {settings.model!r} is taken as an OpenAI model name but OPENAI_API_KEY is not set; pass a local "
            ".gguf path or an api_base for an OpenAI-compatible server (e.g. llama_cpp.server on 127.0.0.1)")


def build_llm_summarizer(settings: LLMSummarizerSettings, **overrides: Any) -> LLMSummarizer:
    """``LLMSummarizer`` (generic prompt) on a local ``.gguf`` file, the OpenAI-compatible server at ``api_base``,
    or OpenAI's API, in that order of precedence; ``overrides`` are further ``LLMSummarizer`` fields.

    Raises:
        SettingsError: see :func:`check_llm`; a client extra (``llamacpp``, ``openai``) not installed.
    """
    check_llm(settings)
    kwargs = {**settings.component_kwargs(), **overrides}
    try:
        if settings.is_local():
            return LLMSummarizer.from_gguf(settings.model, **kwargs)
        if settings.api_base:
            return LLMSummarizer.from_openai_like(settings.api_base, settings.model, **kwargs)
        return LLMSummarizer.from_openai(settings.model, **kwargs)
    except FileNotFoundError as exc:
        raise SettingsError(str(exc)) from None
    except ImportError as exc:  # the llamacpp or openai extra is not installed
        raise SettingsError(f"LLM {settings.model!r} needs a client that is not installed: {exc}") from None


def build_summarizer(settings: AnySummarizerSettings) -> BaseSummarizer:
    """The summarizer of ``settings`` (an extractive one weighs key terms against the shipped table).

    Raises:
        SettingsError: see :func:`build_llm_summarizer`.
    """
    if isinstance(settings, LLMSummarizerSettings):
        return build_llm_summarizer(settings)
    return ExtractiveSummarizer(**settings.component_kwargs())


# -- document-aware retrieval ------------------------------------------------------------------------------------


class DocumentRetrievalSettings(DocumentPriorOptions, RankingOptions):
    """The options of document-aware retrieval in one flat model (``document_retrieval.<option>``): the fields of
    :class:`~llama_index_sac.retrievers.options.DocumentPriorOptions` (the :class:`~llama_index_sac.DocumentIndex`)
    and of :class:`~llama_index_sac.retrievers.options.RankingOptions` (the retriever over a vector index, so
    ``focus_documents`` None is 2), declared there; split again by :meth:`prior_options` and :meth:`ranking_options`."""

    model_config = ConfigDict(extra="forbid", frozen=False)

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        """The results of 0.2 record ``max_document_frequency`` as ``max_name_frequency``."""
        if isinstance(data, dict) and "max_name_frequency" in data and "max_document_frequency" not in data:
            data = {("max_document_frequency" if key == "max_name_frequency" else key): value
                    for key, value in data.items()}
        return data

    @model_validator(mode="after")
    def _over_a_vector_index(self) -> DocumentRetrievalSettings:
        """The settings build a retriever over a vector index: ``focus_documents`` None is its default there."""
        if self.focus_documents is None:
            self.focus_documents = DEFAULT_FOCUS_DOCUMENTS
        return self

    def prior_options(self) -> DocumentPriorOptions:
        """The options of the :class:`~llama_index_sac.DocumentIndex`."""
        return DocumentPriorOptions(**self.model_dump(include=set(DocumentPriorOptions.model_fields)))

    def ranking_options(self) -> RankingOptions:
        """The options of :class:`~llama_index_sac.DocumentAwareRetriever`."""
        return RankingOptions(**self.model_dump(include=set(RankingOptions.model_fields)))


# -- embedding models --------------------------------------------------------------------------------------------


def model_identity(model: BaseEmbedding) -> dict[str, Any]:
    """The embedding model's cache identity plus the settings that change its vectors (as strings)."""
    identity: dict[str, Any] = dict(embedding_identity(model))
    for key in ("max_length", "normalize", "query_instruction", "text_instruction", "pooling"):
        value = getattr(model, key, None)
        if value is not None:
            identity[key] = str(value)
    return identity


def model_space(model: BaseEmbedding) -> dict[str, Any]:
    """What decides whether two models' vectors can be compared (the ingest record's fingerprint, ``query``'s
    check): :func:`model_identity` with the precision (:func:`~llama_index_sac.embeddings.identity.embedding_space`)
    and without the class when it is one of the two runtimes of the default model (torch and float32 ONNX give the
    same vectors); any other class stays part of it."""
    return recorded_space({**model_identity(model), **embedding_space(model)})


def model_backend(model: BaseEmbedding) -> str:
    """The runtime of ``model``: ``"onnx"``, ``"torch"`` (``HuggingFaceEmbedding``) or its class name."""
    if isinstance(model, OnnxEmbedding):
        return "onnx"
    name = model.class_name()
    return "torch" if name == "HuggingFaceEmbedding" else name


def recorded_space(recorded: dict[str, Any]) -> dict[str, Any]:
    """A recorded embedding fingerprint as :func:`model_space` gives it: a record written before the ONNX backend
    names the class (the torch runtime) and no precision (float32); the ONNX graph kind and the device are not part of
    the space."""
    space = dict(recorded)
    if space.get("class_name") in _RUNTIME_CLASSES:
        del space["class_name"]
        space.pop("graph", None)  # the fused ONNX graph gives the plain graph's vectors up to float rounding
        space.pop("device", None)  # a GPU gives the CPU's vectors up to float rounding (float16: cosine 0.999)
    space.setdefault("precision", "float32")
    return space


#: Classes of the two runtimes of the default model: the same vectors in float32, so not part of the vector space.
_RUNTIME_CLASSES = ("HuggingFaceEmbedding", "OnnxEmbedding")
