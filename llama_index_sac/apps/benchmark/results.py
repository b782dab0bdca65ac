"""The typed, versioned results of a run: what ``llama-sac eval`` writes to ``results.json`` and everything reads.

:class:`RunResults` is the whole file (``schema_version`` :data:`SCHEMA_VERSION`): the benchmark and the loader
options that made it (:class:`BenchmarkInfo`), the shared settings, one :class:`ConfigResult` per configuration
(its :class:`~.config.RunConfig`, aggregates per dataset and overall, confusions, summaries,
timings and, unless published without them, the per-query :class:`QueryResult` records), timings, versions and peak
memory. Aggregates are keyed by ``str(k)`` (JSON object keys).

:func:`load_results` reads a run folder or a ``results.json`` of the current schema version.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from llama_index.core.bridge.pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)

from llama_index_sac._json_io import PersistedFileError, read_json
from llama_index_sac.apps.benchmark.config import LoaderOptions, RunConfig
from llama_index_sac.apps.benchmark.datasets.legalbenchrag import Sampling, Scope
from llama_index_sac.apps.benchmark.wordings import wording_of

__all__ = [
    "SCHEMA_VERSION",
    "Aggregates",
    "BenchmarkInfo",
    "ConfigResult",
    "ConfusedPair",
    "DatasetScores",
    "OverallScores",
    "QueryResult",
    "QueryScoresResult",
    "RecordedSettings",
    "ResultsFormatError",
    "RunResults",
    "RunTimings",
    "SummaryInfo",
    "load_results",
    "parse_results",
]

#: Version of the results.json shape written and read by this release.
SCHEMA_VERSION: Literal[2] = 2

Span = tuple[str, int, int]


class ResultsFormatError(ValueError):
    """Data that is not a results.json of ``llama-sac eval`` (or of a newer schema than this release reads)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DatasetScores(_Model):
    """Means over the eligible queries of one dataset at one k (``None``: no value), and the query counts."""

    drm: float | None
    precision: float | None
    recall: float | None
    hit_rate: float | None
    mrr: float | None
    n_queries: int = Field(ge=0, description="Eligible queries.")
    ineligible: int = Field(ge=0, description="Queries without a non-empty gold span.")
    drm_undefined: int = Field(ge=0, description="Eligible queries with nothing retrieved (DRM undefined).")


class OverallScores(DatasetScores):
    """The unweighted mean of the dataset means at one k; counts summed over the datasets."""

    n_datasets: int = Field(ge=0, description="Datasets with an eligible query.")


class Aggregates(_Model):
    """``overall[str(k)]`` and ``datasets[dataset][str(k)]``."""

    overall: dict[str, OverallScores]
    datasets: dict[str, dict[str, DatasetScores]]

    def at(self, scope: str, k: int) -> DatasetScores:
        """The scores of ``scope`` (``"overall"`` or a dataset) at ``k``. Raises ``KeyError`` if absent."""
        block = self.overall if scope == "overall" else self.datasets[scope]
        return block[str(k)]


class QueryScoresResult(_Model):
    """One query's metrics at one k (``drm`` None when nothing was retrieved)."""

    k: int
    precision: float
    recall: float
    drm: float | None
    hit_rate: float
    mrr: float
    n_retrieved: int


class QueryResult(_Model):
    """One query of one configuration: gold and retrieved ``(doc_id, start, end)`` character spans (retrieved in
    rank order) and its scores per ``str(k)`` (``None``: ineligible)."""

    query_id: str
    dataset: str
    query: str
    gold: list[Span]
    retrieved: list[Span]
    scores: dict[str, QueryScoresResult] | None
    seconds: float = 0.0


class ConfusedPair(_Model):
    """``chunks`` top-k chunks of document ``retrieved`` came back for ``queries`` queries whose gold is ``gold``."""

    gold: str
    retrieved: str
    chunks: int
    queries: int


class SummaryInfo(_Model):
    """Summaries computed in this run (the rest came from the cache) and each dataset's summarizer identity."""

    summarizer_calls: int
    summarizer_identity: dict[str, dict[str, Any]]


class ConfigResult(_Model):
    """The outcome of one configuration. ``records`` is None in published copies (:meth:`RunResults.slim`)."""

    config: RunConfig
    n_chunks: int
    mean_chunk_chars: float = Field(description="Mean chunk length in characters.")
    mean_embedded_chars: float = Field(description="Mean length of the embedded text (chunk + summary + metadata).")
    chunks_embedded: int
    chunks_from_cache: int
    timings: dict[str, float] = Field(description="Seconds per step: parse_s, summarize_s, embed_s, index_s, ...")
    aggregates: Aggregates
    confusions: list[ConfusedPair]
    summaries: dict[str, str] = Field(default_factory=dict, description="Document id -> its summary (SAC).")
    summary_info: SummaryInfo | None = None
    records: list[QueryResult] | None = None

    @property
    def name(self) -> str:
        return self.config.name


class RecordedSettings(_Model):
    """The settings shared by the run, as recorded (the embedding model by its identity)."""

    ks: list[int] = Field(min_length=1)
    embed_model: dict[str, str]
    cache_dir: str
    confusion_k: int = Field(ge=1)
    retrieval_threads: int | None = None
    llm_concurrency: int | None = None


class RunTimings(_Model):
    model_load_s: float
    query_embed_s: float
    wall_s: float


class BenchmarkInfo(_Model):
    """The benchmark of a run: where it came from (``source`` and the loader options, ``None`` where they do not
    apply) and its size. ``datasets`` maps each dataset to its number of queries."""

    name: str
    description: str = ""
    source: Literal["synthetic", "legalbenchrag", "folder", "custom"] = "custom"
    n_documents: int = Field(ge=0)
    n_characters: int = Field(ge=0)
    n_queries: int = Field(ge=0)
    datasets: dict[str, int] = Field(min_length=1)
    data_dir: str | None = Field(default=None, description="LegalBench-RAG data folder, or the folder of your own "
                                 "contracts (source='folder'), as given to the run.")
    questions: str | None = Field(default=None, description="source='folder': the questions file, as given to the "
                                  "run.")
    benchmarks_dir: str | None = Field(default=None, description="LegalBench-RAG benchmark folder (relative to "
                                       "data_dir when inside it, e.g. benchmarks_mini).")
    sampling: Sampling | None = None
    sample: int | None = None
    seed: int | None = None
    scope: Scope | None = None
    wordings: list[str] | None = Field(default=None, description="The wordings each query was scored in "
                                       "(datasets then read DATASET/WORDING); None: the queries as written.")

    @model_serializer(mode="wrap")
    def _without_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The run's record without ``questions`` and ``wordings`` when it has none (results written before those
        options read back exactly as written)."""
        data: dict[str, Any] = handler(self)
        for key in ("questions", "wordings"):
            if data.get(key) is None:
                data.pop(key, None)
        return data

    def loader_options(self, data_dir: str | Path | None = None) -> LoaderOptions:
        """The options that load this benchmark again (LegalBench-RAG, or a folder of your own contracts: from
        ``data_dir``, default the recorded one).

        Raises:
            ValueError: a custom benchmark (no loader), LegalBench-RAG without a data folder, or a folder run without
                its recorded folder and questions file.
        """
        try:
            return self._loader_options(data_dir)
        except ValidationError as exc:  # the recorded values are out of the loader's bounds: one line
            raise ValueError(f"benchmark {self.name!r} cannot be loaded again: its recorded loader options are "
                             f"invalid ({_describe(exc)})") from None

    def _loader_options(self, data_dir: str | Path | None) -> LoaderOptions:
        wordings: Any = self.wordings
        if self.source == "synthetic":
            return LoaderOptions(source="synthetic", n_documents=self.n_documents, seed=self.seed or 0,
                                 wordings=wordings)
        if self.source == "folder":
            folder = data_dir if data_dir is not None else self.data_dir
            if folder is None or self.questions is None:
                raise ValueError(f"benchmark {self.name!r}: the folder or the questions file of the run is not "
                                 "recorded")
            return LoaderOptions(source="folder", data_dir=str(folder), questions=self.questions)
        if self.source == "legalbenchrag":
            folder = data_dir if data_dir is not None else self.data_dir
            datasets = list(dict.fromkeys(wording_of(name)[0] for name in self.datasets)) if wordings else list(
                self.datasets)
            return LoaderOptions(source="legalbenchrag", data_dir=None if folder is None else str(folder),
                                 datasets=datasets, sampling=self.sampling or "all", sample=self.sample,
                                 seed=self.seed or 0, scope=self.scope or "referenced",
                                 benchmarks_dir=self.benchmarks_dir, wordings=wordings)
        raise ValueError(f"benchmark {self.name!r} was not made by a known loader: it cannot be loaded again")


class RunResults(_Model):
    """A whole results.json (see the module docstring)."""

    schema_version: Literal[2] = SCHEMA_VERSION
    benchmark: BenchmarkInfo
    settings: RecordedSettings
    configs: list[ConfigResult] = Field(min_length=1)
    timings: RunTimings
    peak_memory_mb: float
    versions: dict[str, str]
    command: str | None = None
    created: str | None = None
    records_dropped: str | None = None

    @model_validator(mode="after")
    def _complete(self) -> RunResults:
        names = [c.name for c in self.configs]
        if len(set(names)) != len(names):
            raise ValueError(f"configuration names must be distinct, got {names}")
        ks = [str(k) for k in self.settings.ks]
        for config in self.configs:
            blocks: dict[str, dict[str, Any]] = {"overall": dict(config.aggregates.overall),
                                                 **config.aggregates.datasets}
            for scope in ["overall", *self.benchmark.datasets]:
                missing = [k for k in ks if k not in blocks.get(scope, {})]
                if missing:
                    raise ValueError(f"configuration {config.name!r} has no {scope} aggregates at k={missing}")
        return self

    def config(self, name: str) -> ConfigResult:
        """The configuration called ``name``. Raises ``KeyError`` naming the known ones."""
        for config in self.configs:
            if config.name == name:
                return config
        raise KeyError(f"no configuration {name!r} (the run has {', '.join(c.name for c in self.configs)})")

    @property
    def datasets(self) -> list[str]:
        return list(self.benchmark.datasets)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (a plain dictionary, aggregates and scores keyed by ``str(k)``)."""
        return self.model_dump(mode="json")

    def to_json(self) -> str:
        """The text of results.json (indent 1)."""
        return json.dumps(self.to_dict(), indent=1)

    def slim(self, note: str) -> RunResults:
        """A copy without per-query records (``records_dropped`` says why), for publishing."""
        configs = [c.model_copy(update={"records": None}) for c in self.configs]
        return self.model_copy(update={"configs": configs, "records_dropped": note})


def _describe(exc: ValidationError) -> str:
    parts = [f"{'.'.join(map(str, e['loc'])) or 'results'}: {str(e['msg']).removeprefix('Value error, ')}"
             for e in exc.errors()[:3]]
    more = exc.error_count() - 3
    return "; ".join(parts) + (f" (and {more} more problems)" if more > 0 else "")


def parse_results(data: Any) -> RunResults:
    """The results in ``data`` (the parsed JSON of a results.json of schema version :data:`SCHEMA_VERSION`).

    Raises:
        ResultsFormatError: ``data`` is not results of ``llama-sac eval``, or of a newer schema version.
    """
    if isinstance(data, RunResults):
        return data
    if not isinstance(data, Mapping):
        raise ResultsFormatError(f"expected a JSON object, got {type(data).__name__}")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise ResultsFormatError(f"schema_version {version!r} is not the one this release reads ({SCHEMA_VERSION})"
                                 + (": upgrade llama-index-sac" if isinstance(version, int) and version > SCHEMA_VERSION
                                    else ""))
    configs = data.get("configs")
    if isinstance(configs, list):  # a run recorded before summaries were trimmed to the model: it did not trim
        data = {**data, "configs": [_untrimmed(entry) for entry in configs]}
    try:
        return RunResults.model_validate(data)
    except ValidationError as exc:
        raise ResultsFormatError(_describe(exc)) from None


def _untrimmed(entry: Any) -> Any:
    """``entry`` as it ran when its configuration predates ``augmentation.on_embed_overflow`` (the published runs of
    ``docs/results`` that record no such key): ``"warn"``, no trimming."""
    config = entry.get("config") if isinstance(entry, Mapping) else None
    if not isinstance(config, Mapping):
        return entry
    assert isinstance(entry, Mapping)
    part = config.get("augmentation")
    if isinstance(part, Mapping) and "on_embed_overflow" not in part:
        config = {**config, "augmentation": {**part, "on_embed_overflow": "warn"}}
    return {**entry, "config": config}


#: The largest results.json :func:`load_results` reads, in bytes.
RESULTS_MAX_BYTES = 1 << 30


def load_results(path: str | Path) -> RunResults:
    """Read the results of a run: its folder (``results.json`` inside) or the results.json itself, through the
    bounded reader (a regular file of at most :data:`RESULTS_MAX_BYTES` bytes: a FIFO or ``/dev/zero`` is refused at
    once).

    Raises:
        ResultsFormatError: a folder without results.json, a file that is not JSON or not results of
            ``llama-sac eval`` (see :func:`parse_results`).
        OSError: the file cannot be read.
    """
    path = Path(path)
    if path.is_dir():
        if not (path / "results.json").is_file():
            raise ResultsFormatError(f"{path} is a folder without results.json: expected a run folder of llama-sac "
                                     "eval or its results.json")
        path = path / "results.json"
    try:
        data = read_json(path, expect=None, max_bytes=RESULTS_MAX_BYTES, allow_nan=True)
    except PersistedFileError as exc:  # not a regular file, too large, not JSON, nested too deep
        raise ResultsFormatError(exc.problem[:300]) from None
    return parse_results(data)
