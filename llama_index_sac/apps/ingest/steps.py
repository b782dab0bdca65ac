"""The options of ``llama-sac ingest`` (:class:`IngestSettings`) and what they build: the parser, the page numbers of
paged documents and ``SummaryAugmentationTransformation`` of a run (:func:`build_steps`, the same in this process and
in every Ray worker), and the fingerprint of the settings that decide a collection's rows (:func:`fingerprint`,
recorded in the ingest record's ``settings.json``; another run with other settings is refused with
:func:`differences`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from llama_index.core.ingestion.pipeline import remove_unstable_values
from llama_index.core.schema import TransformComponent

from llama_index_sac.apps.ingest.files import MAX_FILE_BYTES, MAX_PAGES, IngestError, check_collection
from llama_index_sac.apps.ingest.pages import PageNumbers
from llama_index_sac.apps.ingest.query import load_model
from llama_index_sac.augmentation.transformation import SummaryAugmentationTransformation
from llama_index_sac.embeddings.default import DEVICE_PATTERN, EmbedBackend, EmbeddingBackendOptions, OfferedPrecision
from llama_index_sac.settings import (
    AnyParserSettings,
    AnySummarizerSettings,
    ExtractiveSummarizerSettings,
    LLMSummarizerSettings,
    ParserSettings,
    RecursiveParserSettings,
    SettingsError,
    SummarizerSettings,
    build_parser,
    build_summarizer,
    check_llm,
    kinds_of,
    model_space,
    recorded_space,
)

__all__ = ["OPTIONS", "IngestSettings", "build_steps", "comparable", "differences", "embed_steps", "fingerprint",
           "settings_from_options"]

_KINDS = {"parser": kinds_of(AnyParserSettings), "summarizer": kinds_of(AnySummarizerSettings)}
_BACKEND = EmbeddingBackendOptions.model_fields


class IngestSettings(BaseModel):
    """The options of :func:`ingest`: the library's parser and summarizer settings
    (:mod:`llama_index_sac.settings`, defaults and checks the components' own) and the tool's own. ``parser`` and
    ``summarizer`` take a settings object, a dictionary (``kind`` defaults to the first kind) or a kind's name.

    Raises:
        ValidationError: a value out of range or a combination that does not apply.
    """

    model_config = ConfigDict(extra="forbid")

    collection: str = Field(default="llama-sac", description="Collection (table) in the vector store.")
    engine: Literal["local", "ray"] = Field(default="local", description="local (this process) or ray (Ray Data; "
                                            "RAY_ADDRESS joins a cluster).")
    parser: ParserSettings = Field(default_factory=RecursiveParserSettings, description="The node parser and its "
                                   "settings (kind: recursive, semantic or hybrid).")
    summarizer: SummarizerSettings = Field(
        default_factory=ExtractiveSummarizerSettings, description="The document summaries (kind: extractive, "
        "offline and deterministic with the shipped term table, or llm).")
    embed_model: str | None = Field(default=None, min_length=1, description="Embedding model: Hugging Face id or "
                                    "local folder (None: all-MiniLM-L6-v2, offline).")
    embed_backend: EmbedBackend | None = Field(default=None, description=_BACKEND["backend"].description)
    embed_precision: OfferedPrecision = Field(default="float32", description=_BACKEND["precision"].description)
    embed_threads: int | None = Field(default=None, ge=1, le=1024, description=_BACKEND["num_threads"].description)
    embed_device: str | None = Field(default=None, pattern=DEVICE_PATTERN, description=_BACKEND["device"].description)
    workers: int | None = Field(default=None, ge=1, description="--engine ray: maximum Ray actors per stage "
                                "(None: the cluster's CPUs).")
    batch_documents: int = Field(default=1000, ge=1, description="Files per round (read, transform, write, save).")
    max_file_bytes: int = Field(default=MAX_FILE_BYTES, ge=1, description="The most bytes of one file (and what a "
                                "DOCX unpacks to); a larger file is skipped and reported.")
    max_pages: int = Field(default=MAX_PAGES, ge=1, description="The most pages of one PDF or DOCX; a longer one is "
                           "skipped and reported.")
    show_progress: bool = Field(default=True, description="Progress bars (stderr).")

    @model_validator(mode="before")
    @classmethod
    def _default_kinds(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            data = dict(data)
            for section, kinds in _KINDS.items():
                value = data.get(section)
                if isinstance(value, str):
                    data[section] = {"kind": value}
                elif isinstance(value, Mapping) and "kind" not in value:
                    data[section] = {"kind": next(iter(kinds)), **value}
        return data

    @model_validator(mode="after")
    def _check(self) -> IngestSettings:
        check_collection(self.collection)
        problem = self.embed_options().problem(self.embed_model)
        if problem is not None:
            raise ValueError(problem)
        if self.engine != "ray" and self.workers is not None:
            raise ValueError("--workers needs --engine ray (the local engine runs in this process)")
        return self

    def embed_options(self) -> EmbeddingBackendOptions:
        """The runtime options of the embedding model (``embed_backend``, ``embed_precision``, ``embed_threads``,
        ``embed_device``)."""
        return EmbeddingBackendOptions.model_construct(backend=self.embed_backend, precision=self.embed_precision,
                                                       num_threads=self.embed_threads, device=self.embed_device)

    def embed_gpus(self) -> float:
        """GPUs each Ray embedding actor asks for (``--engine ray``): one with a CUDA ``--device``, else none."""
        return 1.0 if (self.embed_device or "cpu").startswith("cuda") else 0.0


#: ``ingest`` options -> the :class:`IngestSettings` key they set (dotted: inside ``parser`` or ``summarizer``).
OPTIONS: dict[str, str] = {
    "collection": "collection", "engine": "engine", "parser": "parser.kind", "chunk_size": "parser.chunk_size",
    "summarizer": "summarizer.kind", "llm": "summarizer.model", "llm_api_base": "summarizer.api_base",
    "summary_metadata": "summarizer.metadata_keys",
    "embed_model": "embed_model", "embed_backend": "embed_backend", "embed_precision": "embed_precision",
    "embed_threads": "embed_threads", "device": "embed_device", "workers": "workers",
    "batch_documents": "batch_documents",
    "max_file_bytes": "max_file_bytes", "max_pages": "max_pages", "progress": "show_progress",
}
_NAMES = {key: "--" + option.replace("_", "-") for option, key in OPTIONS.items()}


def _problem(error: Mapping[str, Any]) -> str:
    """One pydantic error of :class:`IngestSettings` in the terms of the command line (options named)."""
    loc = [str(part) for part in error["loc"]]
    message = str(error["msg"]).removeprefix("Value error, ")
    section = loc[0] if loc and loc[0] in _KINDS else None
    if section is not None and len(loc) > 1 and loc[1] in _KINDS[section]:
        kind = loc.pop(1)
        key = ".".join(loc)
        option = _NAMES.get(key, key)
        if error["type"] == "extra_forbidden":
            having = [k for k, cls in _KINDS[section].items() if loc[-1] in cls.model_fields]
            plural = "s" if len(having) > 1 else ""
            return f"{option} applies to the {' and '.join(having)} {section}{plural}, not {kind}"
        if error["type"] == "missing":
            return f"--{section} {kind} needs {option}"
        return f"{option}: {message}" if len(loc) > 1 else f"--{section} {kind}: {message}"
    key = ".".join(loc)
    if section is not None and error["type"] == "union_tag_invalid":
        return f"{_NAMES[section + '.kind']}: {message}"
    return f"{_NAMES.get(key, '--' + key.replace('_', '-'))}: {message}" if key else message


def settings_from_options(**options: Any) -> IngestSettings:
    """:class:`IngestSettings` of the ``ingest`` options (:data:`OPTIONS`; None: not given, the default).

    Raises:
        IngestError: a value the settings or a component refuse, naming the option(s); an LLM model file that does
            not exist, or an OpenAI model without ``OPENAI_API_KEY``.
    """
    tree: dict[str, Any] = {}
    for option, value in options.items():
        if value is None:
            continue
        *parents, leaf = OPTIONS[option].split(".")
        node = tree
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    try:
        settings = IngestSettings.model_validate(tree)
    except ValidationError as exc:
        raise IngestError("; ".join(dict.fromkeys(_problem(e) for e in exc.errors()))) from None
    if isinstance(settings.summarizer, LLMSummarizerSettings):
        try:  # the model file or the API key, before anything is read or loaded
            check_llm(settings.summarizer)
        except SettingsError as exc:
            raise IngestError(f"--llm: {exc}") from None
    return settings


def build_steps(settings: IngestSettings, embed: BaseEmbedding | None,
                cache_dir: str | None) -> list[TransformComponent]:
    """``[parser, PageNumbers, SummaryAugmentationTransformation]`` of ``settings``: the same in this process and
    in every Ray worker. ``embed`` (the semantic and hybrid parsers' model, and the one whose input limit each chunk's
    summary is trimmed to) is loaded from ``settings`` when ``None``.

    Raises:
        IngestError: the embedding model or the LLM cannot be set up.
    """
    if embed is None:  # a Ray worker of the first stage: no GPU of its own, so the model on the CPU
        options = settings.embed_options().model_copy(update={"device": None, "precision": "float32"})
        embed = load_model(settings.embed_model, settings.show_progress, options)
    parser = build_parser(settings.parser, embed)
    llm = isinstance(settings.summarizer, LLMSummarizerSettings)
    try:
        summarizer = build_summarizer(settings.summarizer)  # extractive: the shipped term table, per document alone
    except SettingsError as exc:
        raise IngestError(str(exc)) from None
    augmentation = SummaryAugmentationTransformation(summarizer=summarizer, on_error="skip", embed_model=embed,
                                                     cache_dir=cache_dir if llm else None)
    return [parser, PageNumbers(), augmentation]


def embed_steps(settings: IngestSettings, embed: BaseEmbedding | None) -> list[BaseEmbedding]:
    """``[embedding model]``: ``embed``, else the one of ``settings`` (loaded in the Ray worker that calls it)."""
    return [embed if embed is not None else load_model(settings.embed_model, False, settings.embed_options())]


def _drop_keys(value: Any, keys: frozenset[str]) -> Any:
    if isinstance(value, dict):
        return {k: _drop_keys(v, keys) for k, v in value.items() if k not in keys}
    return value


def fingerprint(steps: Sequence[TransformComponent], embed: BaseEmbedding) -> dict[str, Any]:
    """The settings that decide a collection's rows: the parser's, the summary's and the embedding model's vector
    space (:func:`~llama_index_sac.apps.benchmark.factories.model_space`: torch and float32 ONNX are one space)."""
    parser, augmentation = steps[0], steps[-1]
    unstable = frozenset({"embed_model", "show_progress", "num_workers", "on_error", "failure_epoch", "summarizer",
                          "callback_manager"})
    value = {"parser": _drop_keys(parser.to_dict(), unstable), "summary": _drop_keys(augmentation.to_dict(), unstable),
             "embed_model": model_space(embed)}
    return json.loads(remove_unstable_values(json.dumps(value, sort_keys=True, default=str)))


def comparable(recorded: dict[str, Any]) -> dict[str, Any]:
    """A recorded fingerprint as :func:`fingerprint` gives it now (an older record names the embedding model's class,
    the torch runtime, and no precision: :func:`~llama_index_sac.apps.benchmark.factories.recorded_space`)."""
    return {**recorded, "embed_model": recorded_space(recorded.get("embed_model") or {})}


def differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """``"part.key: old -> new"`` for every setting of two fingerprints that differs, nested settings by their
    dotted path (``summarizer.settings.max_chars: 150 -> 300``); a long value is shown around its first difference
    with the other (``...`` marks what is left out) and its length, never cut mid-way without a mark."""
    a, b = _flatten(old, ""), _flatten(new, "")
    return [f"{key}: {_shown(a.get(key, _MISSING), b.get(key, _MISSING))} -> "
            f"{_shown(b.get(key, _MISSING), a.get(key, _MISSING))}"
            for key in sorted(set(a) | set(b)) if a.get(key, _MISSING) != b.get(key, _MISSING)]


_MISSING = object()
_SHOWN = 60  # characters of a value shown


def _flatten(value: Any, prefix: str) -> dict[str, Any]:
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def _shown(value: Any, other: Any) -> str:
    if value is _MISSING:
        return "(not set)"
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    if len(text) <= _SHOWN:
        return text
    against = "" if other is _MISSING else json.dumps(other, ensure_ascii=False, sort_keys=True)
    first = next((i for i, (x, y) in enumerate(zip(text, against)) if x != y), min(len(text), len(against)))
    start = max(0, min(first - _SHOWN // 3, len(text) - _SHOWN))
    return (("..." if start else "") + text[start: start + _SHOWN]
            + ("..." if start + _SHOWN < len(text) else "") + f" ({len(text)} characters)")
