"""``llama-sac eval`` without the command line: which model each option sets, the option values turned into
configurations, loader options and run settings, the run itself and the error text of a failed LLM summary.

The option tables (:data:`COMMON_OPTIONS`, :data:`SUMMARY_OPTIONS`, :data:`SETTINGS_OPTIONS`,
:data:`LOADER_OPTIONS`) say, for each ``eval`` option, the configuration key or model field it sets; the CLI reads
the options' help, choices, defaults and bounds from those models (:func:`llama_index_sac.apps._options.field_option`),
and ``tests/apps/benchmark/test_commands.py`` walks every option against them.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from llama_index.core.bridge.pydantic import ValidationError

from llama_index_sac import settings as library
from llama_index_sac.apps._output import for_cli
from llama_index_sac.apps.benchmark import factories, report
from llama_index_sac.apps.benchmark.components import ExtractiveSummarizerSettings, LLMSummarizerSettings
from llama_index_sac.apps.benchmark.config import (
    EvaluationSetupError,
    LoaderOptions,
    MissingLLMModelError,
    RunConfig,
    RunSettings,
    parse_config,
)
from llama_index_sac.apps.benchmark.output import staged_output_dir, write_run_outputs
from llama_index_sac.apps.benchmark.results import RunResults
from llama_index_sac.apps.benchmark.runner import run_evaluation

__all__ = [
    "COMMON_OPTIONS",
    "DEFAULT_CONFIGS",
    "LOADER_OPTIONS",
    "SETTINGS_OPTIONS",
    "SUMMARY_OPTIONS",
    "configs_from_options",
    "for_own_documents",
    "loader_options",
    "run_and_report",
    "run_settings",
    "summary_failure",
]

#: ``eval`` options -> the configuration key they set in every configuration.
COMMON_OPTIONS: dict[str, str] = {
    "parser": "parser.kind", "chunk_size": "parser.chunk_size", "chunk_overlap": "parser.chunk_overlap",
    "retrieval": "retrieval",
}
#: ``eval`` options -> the configuration key they set in the configurations that have a summarizer.
SUMMARY_OPTIONS: dict[str, str] = {
    "summarizer": "summarizer.kind", "llm": "summarizer.model", "llm_api_base": "summarizer.api_base",
    "prompt": "summarizer.prompt", "max_chars": "summarizer.max_chars",
}
#: ``eval`` options -> the :class:`RunSettings` field they set.
SETTINGS_OPTIONS: dict[str, str] = {
    "k": "ks", "embed_model": "embed_model", "embed_backend": "embed_backend", "embed_precision": "embed_precision",
    "embed_threads": "embed_threads", "embed_graph": "embed_graph", "device": "embed_device", "cache_dir": "cache_dir",
    "confusion_k": "confusion_k",
    "progress": "show_progress", "retrieval_threads": "retrieval_threads", "llm_concurrency": "llm_concurrency",
}
#: ``eval`` options -> the :class:`LoaderOptions` field they set (``--mini`` sets ``sampling``).
LOADER_OPTIONS: dict[str, str] = {
    "data_dir": "data_dir", "datasets": "datasets", "sample": "sample", "seed": "seed", "scope": "scope",
    "benchmarks_dir": "benchmarks_dir", "n_documents": "n_documents", "folder": "data_dir", "questions": "questions",
    "wordings": "wordings",
}
#: The configurations of ``llama-sac eval`` without ``--config``.
DEFAULT_CONFIGS = ("baseline", "llamaindex", "default")


def _messages(exc: ValidationError) -> str:
    return "; ".join(f"{_WHERE.get(where, where)}: {str(e['msg']).removeprefix('Value error, ')}".lstrip(": ")
                     for e in exc.errors() for where in ['.'.join(map(str, e['loc']))])


#: Settings named by their option in messages where the two names differ.
_WHERE = {"embed_device": "--device"}


def configs_from_options(specs: Sequence[str], options: Mapping[str, Any]) -> list[RunConfig]:
    """The configurations of ``--config`` specs with the ``eval`` options that set configuration keys
    (:data:`COMMON_OPTIONS` in every configuration, :data:`SUMMARY_OPTIONS` in those with a summarizer; None: not
    given). An LLM summarizer's model file or API key is checked here too, before anything is loaded.

    Raises:
        EvaluationSetupError: an invalid configuration, the LLM summarizer without a model (said in CLI terms), a
            missing model file or ``OPENAI_API_KEY``.
    """
    common = {COMMON_OPTIONS[name]: value for name, value in options.items()
              if name in COMMON_OPTIONS and value is not None}
    summary = {SUMMARY_OPTIONS[name]: value for name, value in options.items()
               if name in SUMMARY_OPTIONS and value is not None}
    try:
        configs = [parse_config(spec, common, summary) for spec in specs]
    except MissingLLMModelError as exc:
        what = ("--summarizer llm" if options.get("summarizer") == "llm"
                else f"configuration {exc.config!r} (an LLM summarizer)")
        raise EvaluationSetupError(
            f"{what} needs --llm MODEL: an OpenAI model name (with OPENAI_API_KEY), a local .gguf path, or the "
            "name of a model served at --llm-api-base (or summarizer.model=MODEL in the configuration)"
        ) from None
    for config in configs:
        if isinstance(config.summarizer, LLMSummarizerSettings):
            try:
                library.check_llm(config.summarizer)
            except library.SettingsError as exc:
                raise EvaluationSetupError(f"configuration {config.name!r}: {exc}") from None
    return configs


def loader_options(*, data_dir: Path | None, datasets: list[str], mini: bool, sample: int | None, seed: int,
                   scope: str, benchmarks_dir: Path | None, n_documents: int, folder: Path | None = None,
                   questions: Path | None = None, wordings: list[str] | None = None) -> LoaderOptions:
    """The benchmark options of ``eval`` (:data:`LOADER_OPTIONS`; ``--mini``/``--sample`` choose the sampling).

    Raises:
        EvaluationSetupError: LegalBench-RAG options without ``--data-dir``, ``--mini`` with ``--sample``.
    """
    if folder is not None or questions is not None:
        if data_dir is not None or datasets or mini or sample or benchmarks_dir:
            raise EvaluationSetupError("--folder/--questions evaluate your own contracts: they take no LegalBench-RAG "
                                       "option (--data-dir, --datasets, --mini, --sample, --benchmarks-dir)")
        options: dict[str, Any] = {"source": "folder", "data_dir": None if folder is None else str(folder),
                                   "questions": None if questions is None else str(questions), "seed": seed}
    elif data_dir is None:
        if datasets or mini or sample or benchmarks_dir:
            raise EvaluationSetupError("--datasets, --mini, --sample and --benchmarks-dir need --data-dir")
        options = {"source": "synthetic", "n_documents": n_documents, "seed": seed, "scope": scope}
    elif mini and sample:
        raise EvaluationSetupError("--mini and --sample are two sampling protocols: choose one")
    else:
        options = {
            "source": "legalbenchrag", "data_dir": str(data_dir), "datasets": datasets or None,
            "sampling": "mini" if mini else "random" if sample else "all", "sample": sample, "seed": seed,
            "scope": scope, "benchmarks_dir": None if benchmarks_dir is None else str(benchmarks_dir),
        }
    if wordings:
        options["wordings"] = wordings
    try:
        return LoaderOptions(**options)
    except ValidationError as exc:
        raise EvaluationSetupError(_messages(exc)) from None


def for_own_documents(configs: Sequence[RunConfig], loader: LoaderOptions) -> list[RunConfig]:
    """``configs`` as they run on ``loader``'s documents. On the user's own folder (``--folder``), an extractive
    summarizer whose configuration does not name its term table (``summarizer.terms``) weighs key terms against the
    shipped table, as ``llama-sac ingest`` does, so ``default`` scores the summaries ``ingest`` writes; on
    LegalBench-RAG and the built-in contracts the presets keep the table fitted on the run's documents (the
    published runs). A configuration that names its table keeps it."""
    if loader.source != "folder":
        return list(configs)
    out = []
    for config in configs:
        summarizer = config.summarizer
        if isinstance(summarizer, ExtractiveSummarizerSettings) and "terms" not in summarizer.model_fields_set:
            config = config.model_copy(update={"summarizer": summarizer.model_copy(update={"terms": "shipped"})})
        out.append(config)
    return out


def run_settings(**values: Any) -> RunSettings:
    """:class:`RunSettings` of the ``eval`` options (:data:`SETTINGS_OPTIONS`; None: the field's default).

    Raises:
        EvaluationSetupError: a value the model refuses.
    """
    try:
        return RunSettings(**{key: value for key, value in values.items() if value is not None})
    except ValidationError as exc:
        raise EvaluationSetupError(_messages(exc)) from None


def run_and_report(loader: LoaderOptions, configs: list[RunConfig], settings: RunSettings, output_dir: Path | None,
                   say: Callable[[str], None], show: Callable[[str], None]) -> tuple[Path, RunResults]:
    """Load the data, run every configuration into a staging folder that becomes ``output_dir`` (default
    ``runs/eval-<benchmark>-<time>``), then ``show`` the tables; progress lines go to ``say``. Returns the folder
    and the results.

    Raises:
        EvaluationSetupError, LegalBenchRAGError, NodeLocationError, SummarizationError, OSError: see
            :func:`~llama_index_sac.apps.benchmark.runner.run_evaluation` and
            :func:`~llama_index_sac.apps.benchmark.output.staged_output_dir` (nothing is written then).
    """
    if loader.source == "legalbenchrag":
        say(f"loading LegalBench-RAG from {loader.data_dir} (sampling={loader.sampling}, scope={loader.scope})")
    benchmark, used = factories.load_benchmark(loader)
    say(f"{benchmark.description}: {len(benchmark.documents)} documents, {benchmark.n_characters:,} characters, "
        f"{len(benchmark.queries)} queries in {', '.join(benchmark.datasets)}")
    out = Path(output_dir or Path("runs") / f"eval-{benchmark.name}-{datetime.now():%Y%m%d-%H%M%S}")
    with staged_output_dir(out) as staging:
        results = run_evaluation(benchmark, for_own_documents(configs, used), settings, log=say,
                                 loader=used).model_copy(update={
            "command": "llama-sac " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
            "created": datetime.now().isoformat(timespec="seconds"),
        })
        write_run_outputs(results, staging)
    wordings = report.format_wordings(results)
    show("\n" + report.format_tables(results) + "\n\n" + report.format_confusions(results) + "\n\n"
         + report.format_timings(results) + (f"\n\nper wording (mean over k, %):\n{wordings}" if wordings else ""))
    return out, results


def llm_endpoint(config: RunConfig) -> str:
    """Where an LLM configuration's summaries come from (the order of ``factories.build_llm_summarizer``)."""
    settings = config.summarizer
    return settings.endpoint() if isinstance(settings, LLMSummarizerSettings) else "?"


def summary_failure(exc: Exception, configs: Sequence[RunConfig]) -> str:
    """The ``error:`` text of a failed summary: the configuration(s), the endpoint and the document."""
    message = for_cli(str(exc))
    llm = [c for c in configs if c.summarizer.kind == "llm"]
    names = ", ".join(repr(c.name) for c in llm) or "?"
    endpoints = [e for e in dict.fromkeys(llm_endpoint(c) for c in llm) if e not in message]
    doc_id = getattr(exc, "doc_id", None)
    head = f"LLM summarizer of configuration {names} failed"
    if endpoints:
        head += f" (endpoint {', '.join(endpoints)})"
    if doc_id is not None and str(doc_id) not in message:
        head += f" on document {doc_id!r}"
    return f"{head}: {message}"
