"""``llama-sac eval`` and ``llama-sac report`` (registered in :mod:`..cli`); the work is
:func:`~llama_index_sac.apps.benchmark.eval_job.run_and_report` and :mod:`~llama_index_sac.apps.benchmark.report`.

``llama-sac eval`` is the main job: it indexes a corpus under several configurations side by side (default: the flat
baseline, recursive 500-character chunks, against SAC, the same chunks embedded with an extractive document
summary), retrieves for every benchmark query and reports DRM@k, precision@k and recall@k per dataset and overall.

* no data option: the built-in synthetic contracts (offline);
* ``--data-dir PATH``: LegalBench-RAG (``corpus/`` or ``corpus.tar.xz`` + ``benchmarks/`` or ``benchmarks_mini/``).

Outputs (in ``--output-dir``): ``results.json`` (configuration, per-query records, aggregates, timings, versions,
peak memory), ``results.csv`` (aggregates, long format), ``queries.csv`` (per query and k), ``confusions.csv``,
``drm_at_k.png``, ``precision_at_k.png``, ``recall_at_k.png``; the tables are printed too.

Output folder: the run writes into a hidden staging folder beside ``--output-dir`` and moves its files into place
only when everything succeeded. A new output folder therefore appears complete or not at all; an existing one is
left unchanged by a failed run, and a successful run replaces its files of the same names (other files stay). Parent
folders the run had to create are removed again on failure.

Errors (:mod:`~llama_index_sac.apps._errors`): a malformed ``--k`` such as ``0`` or ``1,,4``, a missing or unsafe data
directory, a corrupt corpus archive, an unknown dataset, an invalid configuration, an embedding model that cannot load
offline, an LLM server that fails or is down, an unwritable output or cache folder, Ctrl-C: one ``error: ...`` line,
exit status 2, no output.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from llama_index_sac.apps._display import printable
from llama_index_sac.apps._errors import fail
from llama_index_sac.apps._options import field_default, field_option
from llama_index_sac.apps.benchmark.components import (
    PARSER_KINDS,
    EmbedBackendChoice,
    EmbedGraphChoice,
    EmbedPrecisionChoice,
    LLMSummarizerSettings,
    ParserChoice,
    PromptChoice,
    RecursiveParserSettings,
    SummarizerChoice,
)
from llama_index_sac.apps.benchmark.config import (
    PRESETS,
    EvaluationSetupError,
    LoaderOptions,
    Retrieval,
    RunConfig,
    RunSettings,
)
from llama_index_sac.apps.benchmark.datasets.legalbenchrag import MINI_SAMPLE_SIZE, Scope
from llama_index_sac.apps.benchmark.eval_job import (
    DEFAULT_CONFIGS,
    configs_from_options,
    loader_options,
    run_and_report,
    run_settings,
    summary_failure,
)

if TYPE_CHECKING:
    from llama_index_sac.apps.benchmark.results import RunResults

__all__ = ["eval_command", "report_command"]


def _split_list(values: list[str] | None, option: str, sep: str = ",") -> list[str]:
    """The items of a repeatable ``sep``-separated option; an empty item (``a,,b``, ``""``) is an error."""
    out: list[str] = []
    for value in values or []:
        items = [v.strip() for v in value.split(sep)]
        if not all(items):
            raise EvaluationSetupError(f"{option}: empty item in {value!r} (expected names separated by {sep!r})")
        out.extend(items)
    return out


_K_ITEM = re.compile(r"\s*[0-9]{1,7}\s*")


def _parse_ks(value: str) -> list[int]:
    """``--k``: comma-separated positive integers (at most 7 digits each), e.g. ``"1,4,16"``; sorted, deduplicated.

    Raises:
        EvaluationSetupError: an empty item (``"1,,4"``), a non-integer, 0, or more than 7 digits.
    """
    items = value.split(",")
    if not all(_K_ITEM.fullmatch(item) for item in items) or min(int(item) for item in items) < 1:
        raise EvaluationSetupError(
            f"--k: expected comma-separated positive integers (at most 7 digits) such as 1,4,16, got {value!r}"
        )
    return sorted({int(item) for item in items})


# eval's defaults are the models' (typer needs them as plain values); help texts and bounds: field_option
_KS = ",".join(map(str, field_default(RunSettings, "ks")))
_SCOPE: Scope = field_default(LoaderOptions, "scope")
_PRECISION: str = field_default(RunSettings, "embed_precision")
_GRAPH: str = field_default(RunSettings, "embed_graph")


def eval_command(
    data_dir: Annotated[Path | None, typer.Option(
        help="LegalBench-RAG data folder (corpus/ or corpus.tar.xz + benchmarks/ or benchmarks_mini/). Default: the "
        "built-in synthetic contracts.")] = None,
    datasets: Annotated[list[str] | None, typer.Option(
        "--datasets", "-d", help="Datasets (benchmark file stems), comma-separated or repeated. Default: all found.")
    ] = None,
    mini: Annotated[bool, typer.Option(
        help=f"LegalBench-RAG-mini sampling recipe ({MINI_SAMPLE_SIZE} tests per dataset).")] = False,
    sample: Annotated[int | None, field_option(
        LoaderOptions, "sample", help="Seeded random sample of this many tests per dataset.")] = None,
    seed: Annotated[int, field_option(LoaderOptions, "seed")] = field_default(LoaderOptions, "seed"),
    scope: Annotated[Scope, field_option(LoaderOptions, "scope")] = _SCOPE,
    benchmarks_dir: Annotated[Path | None, typer.Option(
        help="Explicit benchmark folder (absolute or relative to --data-dir).")] = None,
    n_documents: Annotated[int, field_option(LoaderOptions, "n_documents")
                           ] = field_default(LoaderOptions, "n_documents"),
    folder: Annotated[Path | None, typer.Option(
        help="Your own contracts (.txt, .md, .pdf, .docx, searched recursively; read as ingest reads them) to "
        "evaluate, with --questions.",
        show_default=False)] = None,
    questions: Annotated[Path | None, typer.Option(
        help="With --folder: the questions file, JSON Lines of {question, file, quote} (docs/evaluate.md).",
        show_default=False)] = None,
    wordings: Annotated[list[str] | None, field_option(LoaderOptions, "wordings", "--wordings")] = None,
    config: Annotated[list[str] | None, typer.Option(
        "--config", "-c", help=f"Configuration, repeatable: PRESET or PRESET:key=value,... with presets "
        f"{', '.join(PRESETS)} and dotted keys (sac:parser.chunk_size=400,summarizer.max_chars=300). Default: "
        f"{' and '.join(DEFAULT_CONFIGS)}.")] = None,
    parser: Annotated[ParserChoice | None, field_option(
        RunConfig, "parser", key="parser.kind, every configuration", default=PARSER_KINDS[0])] = None,
    chunk_size: Annotated[int | None, field_option(
        RecursiveParserSettings, "chunk_size", key="parser.chunk_size, every configuration")] = None,
    chunk_overlap: Annotated[int | None, field_option(
        RecursiveParserSettings, "chunk_overlap", key="parser.chunk_overlap, every configuration")] = None,
    retrieval: Annotated[Retrieval | None, field_option(
        RunConfig, "retrieval", key="retrieval, every configuration")] = None,
    summarizer: Annotated[SummarizerChoice | None, field_option(
        RunConfig, "summarizer", key="summarizer.kind, the SAC configurations", default=False)] = None,
    llm: Annotated[str | None, field_option(LLMSummarizerSettings, "model", key="summarizer.model")] = None,
    llm_api_base: Annotated[str | None, field_option(
        LLMSummarizerSettings, "api_base", key="summarizer.api_base")] = None,
    prompt: Annotated[PromptChoice | None, field_option(
        LLMSummarizerSettings, "prompt", key="summarizer.prompt")] = None,
    max_chars: Annotated[int | None, field_option(
        LLMSummarizerSettings, "max_chars", key="summarizer.max_chars, the SAC configurations")] = None,
    embed_model: Annotated[str | None, field_option(RunSettings, "embed_model")] = None,
    embed_backend: Annotated[EmbedBackendChoice | None, field_option(RunSettings, "embed_backend")] = None,
    embed_precision: Annotated[EmbedPrecisionChoice, field_option(RunSettings, "embed_precision")] = _PRECISION,
    embed_threads: Annotated[int | None, field_option(RunSettings, "embed_threads")] = None,
    embed_graph: Annotated[EmbedGraphChoice, field_option(RunSettings, "embed_graph")] = _GRAPH,
    device: Annotated[str | None, field_option(RunSettings, "embed_device", "--device")] = None,
    k: Annotated[str, typer.Option("--k", help="k values, comma-separated positive integers.")] = _KS,
    confusion_k: Annotated[int, field_option(RunSettings, "confusion_k")] = field_default(RunSettings, "confusion_k"),
    retrieval_threads: Annotated[int, field_option(RunSettings, "retrieval_threads")
                                 ] = field_default(RunSettings, "retrieval_threads"),
    llm_concurrency: Annotated[int, field_option(RunSettings, "llm_concurrency")
                               ] = field_default(RunSettings, "llm_concurrency"),
    cache_dir: Annotated[Path | None, field_option(RunSettings, "cache_dir")] = None,
    output_dir: Annotated[Path | None, typer.Option(
        "--output-dir", "-o", help="Where results go (default runs/eval-<name>-<time>); written only if the run "
        "succeeds (an existing folder is unchanged by a failure).")] = None,
    progress: Annotated[bool, field_option(RunSettings, "show_progress")] = field_default(RunSettings, "show_progress"),
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only print the tables.")] = False,
) -> None:
    """Run the main job: index, retrieve and report DRM@k, precision@k, recall@k side by side."""
    from llama_index_sac.apps.benchmark.datasets.folder import FolderBenchmarkError
    from llama_index_sac.apps.benchmark.datasets.legalbenchrag import LegalBenchRAGError
    from llama_index_sac.evaluation.evaluator import NodeLocationError
    from llama_index_sac.summarizers.base import SummarizationError

    logging.basicConfig(level=logging.WARNING)
    started = time.perf_counter()
    configs: list[RunConfig] = []
    echo = (lambda _msg: None) if quiet else (lambda msg: typer.echo(msg, err=True))
    try:
        ks = _parse_ks(k)
        configs = configs_from_options(
            _split_list(config, "--config", ";") or list(DEFAULT_CONFIGS),
            {"parser": parser, "chunk_size": chunk_size, "chunk_overlap": chunk_overlap, "retrieval": retrieval,
             "summarizer": summarizer, "llm": llm, "llm_api_base": llm_api_base, "prompt": prompt,
             "max_chars": max_chars},
        )
        loader = loader_options(data_dir=data_dir, datasets=_split_list(datasets, "--datasets"), mini=mini,
                                sample=sample, seed=seed, scope=scope, benchmarks_dir=benchmarks_dir,
                                n_documents=n_documents, folder=folder, questions=questions, wordings=_split_list(
                                    wordings, "--wordings"))
        settings = run_settings(ks=ks, embed_model=embed_model, embed_backend=embed_backend,
                                embed_precision=embed_precision, embed_threads=embed_threads, embed_graph=embed_graph,
                                embed_device=device, cache_dir=cache_dir,
                                confusion_k=confusion_k,
                                show_progress=progress and not quiet, retrieval_threads=retrieval_threads,
                                llm_concurrency=llm_concurrency)
        out, _ = run_and_report(loader, configs, settings, output_dir, echo, typer.echo)
    except (LegalBenchRAGError, FolderBenchmarkError, EvaluationSetupError, NodeLocationError) as exc:
        raise fail(str(exc)) from None
    except SummarizationError as exc:
        raise fail(summary_failure(exc, configs)) from None
    except BrokenPipeError:  # standard output closed by its reader: the entry point ends the command quietly
        raise
    except (OSError, sqlite3.Error) as exc:  # an unwritable output or cache folder, a full disk
        raise fail(f"{type(exc).__name__}: {exc}") from None
    except KeyboardInterrupt:
        raise fail("interrupted") from None
    if not quiet:
        typer.echo(f"\nresults in {out} ({time.perf_counter() - started:.0f} s)")


#: Where ``llama-sac report --html`` looks for LegalBench-RAG when ``--data-dir`` is not given.
_DEFAULT_LBR = Path("..") / "shared" / "data" / "legalbenchrag"


def report_command(
    run: Annotated[Path, typer.Argument(help="A run folder of llama-sac eval, or its results.json.")],
    markdown: Annotated[bool, typer.Option(help="Markdown tables (overall, then per dataset).")] = False,
    html: Annotated[
        Path | None, typer.Option("--html", help="Also write one self-contained HTML page here: tables, plots, "
                                  "confused documents and a per-query drill-down of two configurations.")
    ] = None,
    compare: Annotated[
        str | None, typer.Option(help="HTML drill-down: the two configurations side by side, A,B (default: the "
                                 "run's first configuration and default, when the run has it; else its first two).")
    ] = None,
    data_dir: Annotated[
        Path | None, typer.Option(help="HTML drill-down: the data folder of a LegalBench-RAG run, or the folder of an "
                                  "eval --folder run, for the chunk texts (default: the folder the run recorded; "
                                  f"LegalBench-RAG: else {_DEFAULT_LBR} when present).")
    ] = None,
) -> None:
    """Print the tables of a finished run again, from its results.json (nothing is recomputed); --html writes the
    report a user can open."""
    from llama_index_sac.apps.benchmark import report
    from llama_index_sac.apps.benchmark.results import ResultsFormatError, load_results

    if html is None and (compare is not None or data_dir is not None):
        raise fail("--compare and --data-dir need --html")
    shown = printable(str(run))  # a file name is printed escaped: it cannot start a line of its own
    try:
        if run.is_dir() and not (run / "results.json").is_file():
            raise fail(f"{shown} is a folder without results.json: expected a run folder of llama-sac eval or its "
                        "results.json")
        results = load_results(run)
    except ResultsFormatError as exc:
        raise fail(f"cannot read results from {shown}: not a results.json of llama-sac eval ({exc})") from None
    except OSError as exc:
        raise fail(f"cannot read results from {shown}: {type(exc).__name__}: {exc}") from None
    if markdown:
        scopes = ["overall", *results.datasets]
        text = "".join(f"\n{scope}:\n\n" + report.format_markdown(results, scope) + "\n" for scope in scopes)
    else:
        text = report.format_tables(results) + "\n\n" + report.format_confusions(results) + "\n"
    text += (f"\ncommand: {results.command or '?'}\nwall: {results.timings.wall_s:.0f} s; "
             f"peak memory {results.peak_memory_mb:.0f} MiB")
    if html is not None:
        _write_html(results, html, compare, data_dir)
    typer.echo(text)
    if html is not None:
        typer.echo(f"\nHTML report: {printable(str(html))}")


def _write_html(results: RunResults, out: Path, compare: str | None, data_dir: Path | None) -> None:
    """``report --html``: the documents of the run (regenerated or read), then the page; one ``error:`` line on any
    problem (nothing written)."""
    from llama_index_sac.apps.benchmark.html_report import write_html_report

    try:
        pair = _split_list([compare], "--compare") if compare is not None else None
        if pair is not None and len(pair) != 2:
            raise ValueError(f"--compare: expected two configuration names A,B, got {compare!r}")
        texts = _run_texts(results, data_dir)
    except (ValueError, TypeError) as exc:  # EvaluationSetupError and LegalBenchRAGError are ValueErrors
        raise fail(str(exc)) from None
    except OSError as exc:
        raise fail(f"cannot read the documents of the run: {type(exc).__name__}: {exc}") from None
    try:
        write_html_report(results, out, texts=texts, compare=pair)
    except (ValueError, TypeError) as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise fail(f"cannot write the HTML report {out}: {type(exc).__name__}: {exc}") from None


def _run_texts(results: RunResults, data_dir: Path | None) -> dict[str, str] | None:
    """The documents of a run with records, for the drill-down (``None``: none found, said on stderr)."""
    from llama_index_sac.apps.benchmark.run_documents import report_texts

    return report_texts(results, data_dir, _DEFAULT_LBR, lambda line: typer.echo(line, err=True))
