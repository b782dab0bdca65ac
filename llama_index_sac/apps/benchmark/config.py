"""The one configuration system of the benchmark harness: run configurations, presets, ``PRESET:key=value`` specs,
the settings shared by a run, and the benchmark loader's options.

A :class:`RunConfig` nests the components' own settings (:mod:`llama_index_sac.apps.benchmark.components`)::

    {"name": "sac", "parser": {"kind": "recursive", "chunk_size": 500, "chunk_overlap": 0},
     "summarizer": {"kind": "extractive", "max_chars": 150, "metadata_keys": [], "terms": "corpus", ...},
     "augmentation": {"embed_metadata": []}, "retrieval": "dense"}

Presets (:data:`PRESETS`) are partial dictionaries of that shape. :func:`parse_config` applies, lowest precedence
first, options common to every configuration, the preset, summary options (only to configurations with a
summarizer) and the spec's own ``key=value`` items, each by dotted path (``parser.chunk_size=400``,
``summarizer.metadata_keys=file_name+file_path``); values are coerced and checked by the models, which the
components validate.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from llama_index.core.bridge.pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from llama_index_sac.apps.benchmark.cache import default_cache_dir
from llama_index_sac.apps.benchmark.components import (
    DOCUMENT_METADATA_KEYS,
    PARSER_KINDS,
    SUMMARIZER_KINDS,
    AugmentationSettings,
    DocumentRetrievalSettings,
    NoSummarizerSettings,
    ParserSettings,
    RecursiveParserSettings,
    SummarizerSettings,
    settings_class,
)
from llama_index_sac.apps.benchmark.datasets.legalbenchrag import Sampling, Scope, load_legalbenchrag
from llama_index_sac.apps.benchmark.datasets.synthetic import synthetic_contracts
from llama_index_sac.apps.benchmark.wordings import Wording
from llama_index_sac.embeddings.default import DEVICE_PATTERN, EmbedBackend, EmbeddingBackendOptions, OfferedPrecision
from llama_index_sac.embeddings.onnx_export import GraphKind
from llama_index_sac.evaluation.metrics import DEFAULT_KS
from llama_index_sac.summarizers.base import IDENTITY_METADATA_KEYS

_BACKEND = EmbeddingBackendOptions.model_fields

__all__ = [
    "CONFIG_KEYS",
    "PRESETS",
    "EvaluationSetupError",
    "LoaderOptions",
    "MissingLLMModelError",
    "RunConfig",
    "RunSettings",
    "parse_config",
]


class EvaluationSetupError(ValueError):
    """A configuration, model or option that cannot be used (the CLI prints the message and exits with status 2)."""


class MissingLLMModelError(EvaluationSetupError):
    """A configuration with the LLM summarizer but no ``summarizer.model`` (the CLI rephrases it as ``--llm``)."""

    def __init__(self, message: str, config: str) -> None:
        super().__init__(message)
        self.config = config


Retrieval = Literal["dense", "hybrid", "document-aware"]


class RunConfig(BaseModel):
    """One configuration of the comparison: how documents are chunked, summarized, embedded and retrieved.

    Raises:
        ValueError (pydantic ``ValidationError``): an unknown key, a value the component refuses, or summary
            metadata keys the benchmark documents do not have.
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, description="Label in tables, plots and results.json.")
    parser: ParserSettings = Field(
        default_factory=RecursiveParserSettings, description="The node parser and its settings (kind: recursive, "
        "semantic or hybrid)."
    )
    summarizer: SummarizerSettings = Field(
        default_factory=NoSummarizerSettings, description="The document summaries embedded with every chunk (SAC; "
        "kind: none, extractive or llm)."
    )
    augmentation: AugmentationSettings = Field(
        default_factory=AugmentationSettings, description="Document metadata embedded with every chunk."
    )
    retrieval: Retrieval = Field(
        default="dense", description="dense top-k; hybrid: dense + BM25 over the chunks fused by reciprocal rank; "
        "document-aware: dense + a BM25 prior over the document summaries (DocumentAwareRetriever)."
    )
    document_retrieval: DocumentRetrievalSettings = Field(
        default_factory=DocumentRetrievalSettings, description="Settings of retrieval=document-aware."
    )

    @model_validator(mode="before")
    @classmethod
    def _default_kinds(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            data = dict(data)
            for section, default in (("parser", PARSER_KINDS[0]), ("summarizer", SUMMARIZER_KINDS[0])):
                if isinstance(data.get(section), Mapping) and "kind" not in data[section]:
                    data[section] = {"kind": default, **data[section]}
        return data

    @model_validator(mode="after")
    def _check_document_retrieval(self) -> RunConfig:
        if self.retrieval == "document-aware" and self.summarizer.kind == "none":
            raise ValueError("retrieval=document-aware needs document summaries: set summarizer.kind (extractive or "
                             "llm), and augmentation.embed_summary=false to embed the chunks alone")
        if not self.augmentation.embed_summary and self.retrieval != "document-aware":
            raise ValueError("augmentation.embed_summary=false only makes sense with retrieval=document-aware (the "
                             "summaries would be used nowhere)")
        return self

    @model_validator(mode="after")
    def _check_metadata(self) -> RunConfig:
        unknown = sorted(set(getattr(self.summarizer, "metadata_keys", [])) - set(DOCUMENT_METADATA_KEYS)
                         - set(IDENTITY_METADATA_KEYS))  # the default identity keys: folded in when present
        if unknown:
            raise ValueError(f"summarizer.metadata_keys: unknown document metadata key(s) {unknown} (the documents "
                             f"have {', '.join(DOCUMENT_METADATA_KEYS)})")
        return self


_CONTENT_ONLY: dict[str, Any] = {"metadata_keys": []}
_AS_PUBLISHED: dict[str, Any] = {"on_embed_overflow": "warn"}  # the published SAC runs: no trimming
# the published document-aware runs: no lexical score, the fused order inside each document, the prior of the whole
# query without word parts
_RANKED_AS_PUBLISHED: dict[str, Any] = {"lexical_weight": 0.0, "question_weight": 0.0, "locator_only": False,
                                        "word_parts": False}
#: Named configurations (``--config NAME`` or ``NAME:key=value,...``): partial :class:`RunConfig` dictionaries.
PRESETS: dict[str, dict[str, Any]] = {
    # what a user gets by default: the package's summary (identity metadata folded in, trimmed to the model's input
    # limit) and DocumentAwareRetriever.from_defaults
    "default": {"name": "default", "summarizer": {"kind": "extractive"}, "retrieval": "document-aware"},
    # no summary: nothing to trim; recorded as the published runs were (no on_embed_overflow key)
    "baseline": {"name": "baseline", "augmentation": _AS_PUBLISHED},
    "llamaindex": {"name": "llamaindex", "augmentation": {"embed_metadata": ["file_path"], **_AS_PUBLISHED}},
    # the published comparisons: content-only summaries, long EMBED strings left to the model (as they ran)
    "sac": {"name": "sac", "summarizer": {"kind": "extractive", **_CONTENT_ONLY}, "augmentation": _AS_PUBLISHED},
    "sac-meta": {"name": "sac-meta", "summarizer": {"kind": "extractive", "metadata_keys": ["file_name"]},
                 "augmentation": _AS_PUBLISHED},
    "sac-llm": {"name": "sac-llm", "summarizer": {"kind": "llm", **_CONTENT_ONLY}, "augmentation": _AS_PUBLISHED},
    "sac-expert": {"name": "sac-expert", "summarizer": {"kind": "llm", "prompt": "expert", "max_chars": 300,
                                                        **_CONTENT_ONLY}, "augmentation": _AS_PUBLISHED},
    # the summaries at query time too (DocumentAwareRetriever); "baseline-doc" embeds chunks alone and uses
    # the extractive summaries for the document index only
    "sac-doc": {"name": "sac-doc", "summarizer": {"kind": "extractive", **_CONTENT_ONLY},
                "augmentation": _AS_PUBLISHED, "retrieval": "document-aware",
                "document_retrieval": _RANKED_AS_PUBLISHED},
    "baseline-doc": {"name": "baseline-doc", "summarizer": {"kind": "extractive", **_CONTENT_ONLY},
                     "augmentation": {"embed_summary": False, **_AS_PUBLISHED},
                     "retrieval": "document-aware", "document_retrieval": _RANKED_AS_PUBLISHED},
}

def _all_keys() -> dict[str, Any]:
    """Every dotted key a configuration has -> its annotation (the fields of every kind of a section count)."""
    out: dict[str, Any] = {"name": str, "retrieval": Retrieval}
    for section, kinds in (("parser", PARSER_KINDS), ("summarizer", SUMMARIZER_KINDS)):
        for kind in kinds:
            cls = settings_class(section, kind)
            assert cls is not None
            out.update({f"{section}.{f}": info.annotation for f, info in cls.model_fields.items()})
    out.update({f"augmentation.{f}": info.annotation for f, info in AugmentationSettings.model_fields.items()})
    out.update({f"document_retrieval.{f}": info.annotation
                for f, info in DocumentRetrievalSettings.model_fields.items()})
    return out


#: Every dotted configuration key -> its annotation (the keys of a `-c` spec besides the preset).
CONFIG_KEYS: dict[str, Any] = _all_keys()


def _coerce(key: str, value: Any) -> Any:
    """A spec's string value for ``key``: lists are ``+``-separated (``""``: empty), ``""`` is None where allowed."""
    if not isinstance(value, str):
        return value
    annotation = CONFIG_KEYS[key]
    if get_origin(annotation) is list:
        return [item.strip() for item in value.split("+") if item.strip()]
    if value.strip() == "" and type(None) in get_args(annotation):
        return None
    return value.strip()


def _flatten(tree: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in tree.items():
        if isinstance(value, Mapping):
            out.extend(_flatten(value, f"{prefix}{key}."))
        else:
            out.append((f"{prefix}{key}", value))
    return out


def _canonical(key: str, where: str) -> str:
    key = key.strip().replace("-", "_")
    if key not in CONFIG_KEYS:
        close = difflib.get_close_matches(key, list(CONFIG_KEYS), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise EvaluationSetupError(
            f"bad option {key!r} in {where}: the keys are name, retrieval, document_retrieval.<option>, "
            f"augmentation.embed_metadata, augmentation.embed_summary, parser.kind and parser.<option of that "
            f"parser>, summarizer.kind and summarizer.<option of that summarizer>{hint}")
    return key


def _apply(tree: dict[str, Any], items: Iterable[tuple[str, Any]], where: str) -> set[str]:
    """Set each ``(dotted key, value)`` of ``items`` in ``tree``; returns the keys set."""
    done = set()
    for raw, value in items:
        key = _canonical(raw, where)
        node = tree
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = _coerce(key, value)
        done.add(key)
    return done


def _problem(error: Mapping[str, Any]) -> str:
    """One pydantic error of a RunConfig in the terms of a spec (dotted keys, the kind named)."""
    loc = [str(part) for part in error["loc"]]
    kind = loc.pop(1) if len(loc) > 1 and settings_class(loc[0], loc[1]) is not None else None
    message = str(error["msg"]).removeprefix("Value error, ")
    if not loc:
        return message
    path = ".".join(loc)
    if error["type"] == "extra_forbidden" and kind is not None:
        cls = settings_class(loc[0], kind)
        assert cls is not None
        options = [f for f in cls.model_fields if f != "kind"]
        if not options:
            return f"{path}: {loc[0]}.kind is {kind!r}, which takes no options"
        return f"{path}: the {kind} {loc[0]} has no option {loc[-1]!r} (its options: {', '.join(options)})"
    if error["type"] == "union_tag_invalid":
        ctx = error.get("ctx", {})
        return f"{path}.kind must be one of {ctx.get('expected_tags')}, got {ctx.get('tag')!r}"
    return f"{path}: {message}"


def parse_config(
    spec: str, common: Mapping[str, Any] | None = None, summary_options: Mapping[str, Any] | None = None
) -> RunConfig:
    """Parse ``PRESET`` or ``PRESET:key=value,key=value`` into a :class:`RunConfig`.

    Precedence, lowest first: ``common`` (dotted key -> value for every configuration, e.g. the CLI's ``--parser``
    as ``{"parser.kind": "hybrid"}``), the preset, ``summary_options`` (e.g. ``--summarizer``/``--llm``; applied
    only to configurations whose summarizer is not ``none``), then the spec's own keys. ``name=`` renames; list
    values use ``+`` (``summarizer.metadata_keys=file_name+file_path``); an empty value is None for optional keys.
    Without ``name=``, a spec with keys is named after itself (``"sac[parser.kind=hybrid]"``).

    Raises:
        MissingLLMModelError: the LLM summarizer without a model.
        EvaluationSetupError: an unknown preset or key, or a value the configuration or component refuses, naming
            the spec.
    """
    preset, _, rest = spec.partition(":")
    preset = preset.strip()
    if preset not in PRESETS:
        raise EvaluationSetupError(f"unknown configuration {preset!r} in {spec!r}: choose from {', '.join(PRESETS)}")
    where = f"configuration {spec!r}"
    tree: dict[str, Any] = {}
    _apply(tree, (common or {}).items(), where)
    _apply(tree, _flatten(PRESETS[preset]), where)
    if tree.get("summarizer", {}).get("kind", SUMMARIZER_KINDS[0]) != "none":
        _apply(tree, (summary_options or {}).items(), where)
    own = []
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq:
            raise EvaluationSetupError(f"bad option {item!r} in {where}: expected key=value")
        own.append((key, value))
    keys = _apply(tree, own, where)
    if own and "name" not in keys:
        tree["name"] = f"{preset}[{rest.strip()}]"
    try:
        return RunConfig.model_validate(tree)
    except ValidationError as exc:
        errors = exc.errors()
        if any(e["type"] == "missing" and tuple(e["loc"]) == ("summarizer", "llm", "model") for e in errors):
            raise MissingLLMModelError(
                f"{where} uses the LLM summarizer but names no model: give summarizer.model=<OpenAI model name, "
                "local .gguf path or served model name>", str(tree.get("name", preset))) from None
        problems = "; ".join(_problem(e) for e in errors)
        raise EvaluationSetupError(f"invalid {where}: {problems}") from None


class RunSettings(BaseModel):
    """Settings shared by every configuration of one run (the CLI options of the same names)."""

    model_config = ConfigDict(extra="forbid")

    ks: list[int] = Field(default_factory=lambda: list(DEFAULT_KS), min_length=1,
                          description="Cut-offs k (positive ints; sorted and deduplicated).")
    embed_model: str | None = Field(default=None, description="Embedding model: Hugging Face id or local folder "
                                    "(None: default_embedding_model(), all-MiniLM-L6-v2).")
    embed_backend: EmbedBackend | None = Field(default=None, description=_BACKEND["backend"].description)
    embed_precision: OfferedPrecision = Field(default="float32", description=_BACKEND["precision"].description)
    embed_threads: int | None = Field(default=None, ge=1, le=1024, description=_BACKEND["num_threads"].description)
    embed_graph: GraphKind = Field(default=_BACKEND["graph"].default, description=_BACKEND["graph"].description)
    embed_device: str | None = Field(default=None, pattern=DEVICE_PATTERN, description=_BACKEND["device"].description)
    cache_dir: Path = Field(default_factory=default_cache_dir, description="Embedding and summary cache folder.")
    confusion_k: int = Field(default=8, ge=1, description="k at which document confusions are counted (the "
                             "largest k when above it).")
    show_progress: bool = Field(default=True, description="Progress bars.")
    retrieval_threads: int = Field(default=4, ge=1, description="Threads retrieving queries concurrently.")
    llm_concurrency: int = Field(default=2, ge=1, description="Concurrent requests of an LLM summarizer.")

    def embed_options(self) -> EmbeddingBackendOptions:
        """The runtime options of the embedding model (``embed_backend``, ``embed_precision``, ``embed_threads``,
        ``embed_graph``, ``embed_device``)."""
        return EmbeddingBackendOptions.model_construct(backend=self.embed_backend, precision=self.embed_precision,
                                                       num_threads=self.embed_threads, graph=self.embed_graph,
                                                       device=self.embed_device)

    @model_validator(mode="after")
    def _check_embed_options(self) -> RunSettings:
        problem = self.embed_options().problem(self.embed_model)
        if problem is not None:
            raise ValueError(problem)
        return self

    @field_validator("ks")
    @classmethod
    def _check_ks(cls, ks: list[int]) -> list[int]:
        if min(ks) < 1:
            raise ValueError(f"k values must be positive integers, got {ks}")
        return sorted(set(ks))


def _default(function: Any, name: str) -> Any:
    return inspect.signature(function).parameters[name].default


class LoaderOptions(BaseModel):
    """Which benchmark a run loads: the built-in synthetic contracts or LegalBench-RAG, and the loader's options
    (defaults read from ``synthetic_contracts`` and ``load_legalbenchrag``)."""

    model_config = ConfigDict(extra="forbid")

    source: Literal["synthetic", "legalbenchrag", "folder"] = Field(
        default="synthetic", description="The benchmark: the built-in contracts, LegalBench-RAG, or a folder of "
        "your own contracts with a questions file (data_dir + questions).")
    data_dir: str | None = Field(default=None, description="LegalBench-RAG data folder (as given).")
    datasets: list[str] | None = Field(default=None, description="LegalBench-RAG datasets (None: all found).")
    sampling: Sampling = Field(default=_default(load_legalbenchrag, "sampling"),
                               description="LegalBench-RAG tests per dataset: all, mini (194) or random (seeded).")
    sample: int | None = Field(default=None, ge=1, description="Tests per dataset of the mini/random protocols.")
    seed: int = Field(default=_default(load_legalbenchrag, "seed"),
                      description="Seed of the random protocol and of the synthetic contracts.")
    scope: Scope = Field(default=_default(load_legalbenchrag, "scope"),
                         description="LegalBench-RAG corpus: referenced (documents of the selected tests) or all.")
    benchmarks_dir: str | None = Field(default=None, description="LegalBench-RAG benchmark folder (None: found).")
    questions: str | None = Field(default=None, description="source='folder': the questions file (JSON Lines: "
                                  "question, file, quote).")
    n_documents: int = Field(default=_default(synthetic_contracts, "n_documents"), ge=2, le=150,
                             description="Synthetic contracts: how many.")
    wordings: list[Wording] | None = Field(
        default=None, min_length=1, description="Score each query in these wordings, comma-separated (template, "
        "trailing, merged, short, none: apps/benchmark/wordings.py); results per dataset and wording. LegalBench-RAG "
        "and the built-in contracts; default: the queries as written.")

    @model_validator(mode="after")
    def _check(self) -> LoaderOptions:
        if self.source == "synthetic" and (self.datasets or self.sampling != "all" or self.sample
                                           or self.benchmarks_dir):
            raise ValueError("datasets, sampling, sample and benchmarks_dir are LegalBench-RAG options "
                             "(source='legalbenchrag' with a data_dir)")
        if self.source == "legalbenchrag" and not self.data_dir:
            raise ValueError("LegalBench-RAG needs its data folder (data_dir)")
        if (self.source == "folder") != bool(self.questions) or (self.source == "folder" and not self.data_dir):
            raise ValueError("a folder of your own contracts needs both the folder and its questions file "
                             "(--folder and --questions)")
        if self.source == "folder" and (self.datasets or self.sampling != "all" or self.sample
                                        or self.benchmarks_dir):
            raise ValueError("datasets, sampling, sample and benchmarks_dir are LegalBench-RAG options")
        if self.sampling == "random" and self.sample is None:
            raise ValueError("sampling=random needs a sample size")
        if self.wordings is not None and len(set(self.wordings)) != len(self.wordings):
            raise ValueError(f"wordings: a wording is repeated in {', '.join(self.wordings)}")
        if self.wordings is not None and self.source == "folder":
            raise ValueError("wordings rewrite LegalBench-RAG's template queries ('Consider DOCUMENT; QUESTION'): "
                             "your own questions are scored as you wrote them")
        return self

