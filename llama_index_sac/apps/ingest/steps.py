"""The options of ``llama-sac ingest`` (:class:`IngestSettings`) and what they build: the parser and
``SummaryAugmentationTransformation`` of a run (:func:`build_steps`, the same in this process and in every Ray worker),
and the fingerprint of the settings that decide a collection's rows (:func:`fingerprint`, recorded in the ingest
record's ``settings.json``; another run with other settings is refused with :func:`differences`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import BaseModel, ConfigDict, Field, model_validator
from llama_index.core.ingestion.pipeline import remove_unstable_values
from llama_index.core.schema import TransformComponent

from llama_index_sac.apps.benchmark.components import LLMSummarizerSettings, settings_class
from llama_index_sac.apps.benchmark.factories import (
    build_llm_summarizer,
    build_parser,
    load_embedding_model,
    model_identity,
)
from llama_index_sac.apps.ingest.files import check_collection
from llama_index_sac.augmentation.transformation import SummaryAugmentationTransformation
from llama_index_sac.summarizers import BaseSummarizer, ExtractiveSummarizer

__all__ = ["IngestSettings", "build_steps", "differences", "embed_steps", "fingerprint"]


class IngestSettings(BaseModel):
    """The options of :func:`ingest` (the CLI's, by the same names). Defaults of the components (chunk size, summary
    length...) are the components' own: ``None`` here means "the component's default".

    Raises:
        ValidationError: a value out of range or a combination that does not apply (the message names the option).
    """

    model_config = ConfigDict(extra="forbid")

    collection: str = Field(default="llama-sac", description="Collection (table) in the vector store.")
    engine: Literal["local", "ray"] = Field(default="local", description="local (this process) or ray (Ray Data).")
    parser: Literal["recursive", "semantic", "hybrid"] = Field(default="recursive", description="Node parser.")
    chunk_size: int | None = Field(default=None, gt=0, description="Chunk size in characters (recursive, hybrid); "
                                   "None: the parser's default (RecursiveCharacterNodeParser.chunk_size).")
    summarizer: Literal["extractive", "llm"] = Field(
        default="extractive", description="extractive (offline, deterministic: shipped term table) or llm.")
    llm: str | None = Field(default=None, min_length=1, description="--summarizer llm: OpenAI model name, local "
                            ".gguf path, or the model served at llm_api_base.")
    llm_api_base: str | None = Field(default=None, min_length=1, description="OpenAI-compatible endpoint for llm.")
    embed_model: str | None = Field(default=None, min_length=1, description="Embedding model (Hugging Face id or "
                                    "local folder); None: all-MiniLM-L6-v2, offline.")
    workers: int | None = Field(default=None, ge=1, description="--engine ray: maximum Ray actors per stage "
                                "(None: the cluster's CPUs).")
    batch_documents: int = Field(default=1000, ge=1, description="Files per round (read, transform, write, save).")
    show_progress: bool = Field(default=True, description="Progress bars (stderr).")

    @model_validator(mode="after")
    def _check(self) -> IngestSettings:
        check_collection(self.collection)
        if self.summarizer == "llm" and self.llm is None:
            raise ValueError("--summarizer llm needs --llm")
        if self.summarizer != "llm" and (self.llm is not None or self.llm_api_base is not None):
            raise ValueError("--llm and --llm-api-base need --summarizer llm")
        if self.parser == "semantic" and self.chunk_size is not None:
            raise ValueError("--chunk-size applies to the recursive and hybrid parsers, not semantic")
        if self.engine != "ray" and self.workers is not None:
            raise ValueError("--workers needs --engine ray (the local engine runs in this process)")
        return self



def _summarizer(settings: IngestSettings) -> BaseSummarizer:
    if settings.summarizer == "extractive":
        return ExtractiveSummarizer()  # the shipped term table: a summary is a function of the document alone
    assert settings.llm is not None  # IngestSettings checks it
    return build_llm_summarizer(LLMSummarizerSettings(model=settings.llm, api_base=settings.llm_api_base))


def build_steps(settings: IngestSettings, embed: BaseEmbedding | None,
                cache_dir: str | None) -> list[TransformComponent]:
    """``[parser, SummaryAugmentationTransformation]`` of ``settings``: the same in this process and in every Ray
    worker. ``embed`` (semantic and hybrid parsers only) is loaded from ``settings`` when ``None``."""
    parser_settings = settings_class("parser", settings.parser)
    assert parser_settings is not None
    options = {"chunk_size": settings.chunk_size} if settings.chunk_size is not None else {}
    if settings.parser != "recursive" and embed is None:
        embed = load_embedding_model(settings.embed_model)
    parser = build_parser(parser_settings(**options), embed)  # type: ignore[arg-type]
    augmentation = SummaryAugmentationTransformation(summarizer=_summarizer(settings), on_error="skip",
                                                     cache_dir=cache_dir if settings.summarizer == "llm" else None)
    return [parser, augmentation]


def embed_steps(settings: IngestSettings, embed: BaseEmbedding | None) -> list[BaseEmbedding]:
    """``[embedding model]``: ``embed``, else the one of ``settings`` (loaded in the Ray worker that calls it)."""
    return [embed if embed is not None else load_embedding_model(settings.embed_model)]


def _drop_keys(value: Any, keys: frozenset[str]) -> Any:
    if isinstance(value, dict):
        return {k: _drop_keys(v, keys) for k, v in value.items() if k not in keys}
    return value


def fingerprint(steps: Sequence[TransformComponent], embed: BaseEmbedding) -> dict[str, Any]:
    """The settings that decide a collection's rows: the parser's, the summary's and the embedding model's."""
    parser, augmentation = steps
    unstable = frozenset({"embed_model", "show_progress", "num_workers", "on_error", "failure_epoch", "summarizer",
                          "callback_manager"})
    value = {"parser": _drop_keys(parser.to_dict(), unstable), "summary": _drop_keys(augmentation.to_dict(), unstable),
             "embed_model": model_identity(embed)}
    return json.loads(remove_unstable_values(json.dumps(value, sort_keys=True, default=str)))


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
