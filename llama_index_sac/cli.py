"""``llama-sac``: the command line of llama-index-sac.

``llama-sac eval`` is the main job: it indexes a corpus under several configurations side by side (default: the flat
baseline, recursive 500-character chunks, against SAC, the same chunks embedded with an extractive document
summary), retrieves for every benchmark query and reports DRM@k, precision@k and recall@k per dataset and overall.

* no data option: the built-in synthetic contracts (offline, about a minute on a laptop CPU);
* ``--data-dir PATH``: LegalBench-RAG (``corpus/`` or ``corpus.tar.xz`` + ``benchmarks/`` or ``benchmarks_mini/``).

Outputs (in ``--output-dir``): ``results.json`` (configuration, per-query records, aggregates, timings, versions,
peak memory), ``results.csv`` (aggregates, long format), ``queries.csv`` (per query and k), ``confusions.csv``,
``drm_at_k.png``, ``precision_at_k.png``, ``recall_at_k.png``; the tables are printed too. Bad input (missing data
directory, unknown dataset, a model that cannot load offline, an invalid configuration) prints one ``error:`` line
and exits with status 2.
"""

from __future__ import annotations

import csv
import json
import logging
import shlex
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

__all__ = ["app", "main"]

app = typer.Typer(
    name="llama-sac",
    help="Summary-Augmented Chunking (SAC) for LlamaIndex: measure retrieval over similar legal documents.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """llama-index-sac command line."""


def _split_list(values: list[str] | None) -> list[str]:
    out: list[str] = []
    for value in values or []:
        out.extend(v.strip() for v in value.split(",") if v.strip())
    return out


def _parse_ks(value: str) -> list[int]:
    try:
        ks = sorted({int(v) for v in value.split(",") if v.strip()})
    except ValueError:
        raise typer.BadParameter(f"expected comma-separated positive integers, got {value!r}") from None
    if not ks or ks[0] < 1:
        raise typer.BadParameter(f"expected comma-separated positive integers, got {value!r}")
    return ks


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code=2)


@app.command("eval")
def eval_command(
    data_dir: Annotated[
        Path | None,
        typer.Option(help="LegalBench-RAG data folder (corpus/ or corpus.tar.xz + benchmarks/ or benchmarks_mini/). "
                     "Default: the built-in synthetic contracts."),
    ] = None,
    datasets: Annotated[
        list[str] | None,
        typer.Option("--datasets", "-d", help="Datasets (benchmark file stems), comma-separated or repeated. "
                     "Default: all found."),
    ] = None,
    mini: Annotated[bool, typer.Option(help="LegalBench-RAG-mini sampling recipe (194 tests per dataset).")] = False,
    sample: Annotated[
        int | None, typer.Option(help="Seeded random sample of this many tests per dataset.", min=1)
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of --sample and of the built-in dataset.")] = 0,
    scope: Annotated[
        str, typer.Option(help="Corpus scope: referenced (documents of the selected tests) or all (distractors).")
    ] = "referenced",
    benchmarks_dir: Annotated[
        Path | None, typer.Option(help="Explicit benchmark folder (absolute or relative to --data-dir).")
    ] = None,
    n_documents: Annotated[int, typer.Option(help="Built-in dataset: number of contracts.", min=2, max=300)] = 24,
    config: Annotated[
        list[str] | None,
        typer.Option("--config", "-c", help="Configuration, repeatable: PRESET or PRESET:key=value,... with "
                     "presets baseline, sac, sac-llm, sac-expert, llamaindex. Default: baseline and sac."),
    ] = None,
    parser: Annotated[str | None, typer.Option(help="Parser for every configuration: recursive, semantic, hybrid.")]
    = None,
    chunk_size: Annotated[int | None, typer.Option(help="Chunk size in characters (default 500).", min=1)] = None,
    chunk_overlap: Annotated[int | None, typer.Option(help="Chunk overlap in characters (default 0).", min=0)] = None,
    retrieval: Annotated[str | None, typer.Option(help="dense (default) or hybrid (dense + BM25, RRF).")] = None,
    summarizer: Annotated[
        str | None, typer.Option(help="Summarizer of the SAC configurations: extractive or llm.")
    ] = None,
    llm: Annotated[
        str | None, typer.Option(help="LLM summarizer: OpenAI model name, local .gguf path, or served model name.")
    ] = None,
    llm_api_base: Annotated[
        str | None, typer.Option(help="OpenAI-compatible endpoint for --llm (e.g. http://127.0.0.1:8000/v1).")
    ] = None,
    prompt: Annotated[str | None, typer.Option(help="LLM summary prompt: generic or expert.")] = None,
    summary_chars: Annotated[int | None, typer.Option(help="Summary length in characters (150).", min=1)] = None,
    embed_model: Annotated[
        str | None, typer.Option(help="Embedding model: Hugging Face id or local folder (default all-MiniLM-L6-v2).")
    ] = None,
    k: Annotated[str, typer.Option("--k", help="k values, comma-separated.")] = "1,2,4,8,16,32,64",
    confusion_k: Annotated[int, typer.Option(help="k at which document confusions are counted.", min=1)] = 8,
    cache_dir: Annotated[
        Path | None, typer.Option(help="Embedding/summary cache (default ~/.cache/llama-index-sac).")
    ] = None,
    output_dir: Annotated[
        Path | None, typer.Option("--output-dir", "-o", help="Where results go (default runs/eval-<time>).")
    ] = None,
    progress: Annotated[bool, typer.Option(help="Progress bars.")] = True,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only print the tables.")] = False,
) -> None:
    """Run the main job: index, retrieve and report DRM@k, precision@k, recall@k side by side."""
    from llama_index_sac.datasets.legalbenchrag import LegalBenchRAGError
    from llama_index_sac.evaluation.evaluator import NodeLocationError
    from llama_index_sac.evaluation.runner import EvaluationSetupError

    logging.basicConfig(level=logging.WARNING)
    started = time.perf_counter()
    try:
        results, out = _run(
            data_dir=data_dir, datasets=_split_list(datasets), mini=mini, sample=sample, seed=seed, scope=scope,
            benchmarks_dir=benchmarks_dir, n_documents=n_documents, configs=_split_configs(config), parser=parser,
            chunk_size=chunk_size, chunk_overlap=chunk_overlap, retrieval=retrieval, summarizer=summarizer, llm=llm,
            llm_api_base=llm_api_base, prompt=prompt, summary_chars=summary_chars, embed_model=embed_model,
            ks=_parse_ks(k), confusion_k=confusion_k, cache_dir=cache_dir, output_dir=output_dir,
            progress=progress and not quiet, quiet=quiet,
        )
    except (LegalBenchRAGError, EvaluationSetupError, NodeLocationError) as exc:
        raise _fail(str(exc)) from None
    except KeyboardInterrupt:
        raise _fail("interrupted") from None
    if not quiet:
        typer.echo(f"\nresults in {out} ({time.perf_counter() - started:.0f} s)")
    del results


@app.command("report")
def report_command(
    results_json: Annotated[Path, typer.Argument(help="results.json written by llama-sac eval.")],
    markdown: Annotated[bool, typer.Option(help="Markdown tables (overall, then per dataset).")] = False,
) -> None:
    """Print the tables of a finished run again, from its results.json (nothing is recomputed)."""
    from llama_index_sac.evaluation import report

    try:
        results = json.loads(results_json.read_text(encoding="utf-8"))
        if markdown:
            scopes = ["overall", *results["benchmark"]["datasets"]]
            for scope in scopes:
                typer.echo(f"\n{scope}:\n\n" + report.format_markdown(results, scope))
        else:
            typer.echo(report.format_tables(results))
            typer.echo("")
            typer.echo(report.format_confusions(results))
        timings = results["timings"]
        typer.echo(f"\ncommand: {results.get('command', '?')}\nwall: {timings['wall_s']:.0f} s; "
                   f"peak memory {results['peak_memory_mb']:.0f} MiB")
    except (OSError, ValueError, KeyError) as exc:
        raise _fail(f"cannot read results from {results_json}: {type(exc).__name__}: {exc}") from None


def _split_configs(values: list[str] | None) -> list[str]:
    """``--config`` values; a value may hold several specs separated by ``;``."""
    out: list[str] = []
    for value in values or []:
        out.extend(v.strip() for v in value.split(";") if v.strip())
    return out or ["baseline", "sac"]


def _run(**opts: Any) -> tuple[dict[str, Any], Path]:
    from llama_index_sac.evaluation import report
    from llama_index_sac.evaluation.cache import default_cache_dir
    from llama_index_sac.evaluation.runner import (
        EvaluationSetupError,
        RunSettings,
        parse_config,
        run_evaluation,
    )

    echo = (lambda _msg: None) if opts["quiet"] else (lambda msg: typer.echo(msg, err=True))
    if opts["scope"] not in ("referenced", "all"):
        raise EvaluationSetupError(f"--scope must be referenced or all, got {opts['scope']!r}")
    for name, allowed in (("parser", ("recursive", "semantic", "hybrid")), ("retrieval", ("dense", "hybrid")),
                          ("summarizer", ("extractive", "llm")), ("prompt", ("generic", "expert"))):
        if opts[name] is not None and opts[name] not in allowed:
            raise EvaluationSetupError(f"--{name} must be one of {', '.join(allowed)}, got {opts[name]!r}")
    common = {key: opts[key] for key in ("parser", "chunk_size", "chunk_overlap", "retrieval") if opts[key] is not None}
    summary_options = {
        key: opts[key] for key in ("summarizer", "llm", "llm_api_base", "prompt", "summary_chars")
        if opts[key] is not None
    }
    configs = [parse_config(spec, common, summary_options) for spec in opts["configs"]]

    # data
    if opts["data_dir"] is not None:
        from llama_index_sac.datasets.legalbenchrag import load_legalbenchrag

        if opts["mini"] and opts["sample"]:
            raise EvaluationSetupError("--mini and --sample are two sampling protocols: choose one")
        sampling: Literal["all", "mini", "random"] = "mini" if opts["mini"] else "random" if opts["sample"] else "all"
        echo(f"loading LegalBench-RAG from {opts['data_dir']} (sampling={sampling}, scope={opts['scope']})")
        benchmark = load_legalbenchrag(
            opts["data_dir"], opts["datasets"] or None, sampling=sampling, sample_size=opts["sample"],
            seed=opts["seed"], scope=opts["scope"], benchmarks_dir=opts["benchmarks_dir"],
        )
    else:
        from llama_index_sac.datasets.synthetic import synthetic_contracts

        if opts["datasets"] or opts["mini"] or opts["sample"] or opts["benchmarks_dir"]:
            raise EvaluationSetupError("--datasets, --mini, --sample and --benchmarks-dir need --data-dir")
        benchmark = synthetic_contracts(n_documents=opts["n_documents"], seed=opts["seed"])
    echo(
        f"{benchmark.description}: {len(benchmark.documents)} documents, {benchmark.n_characters:,} characters, "
        f"{len(benchmark.queries)} queries in {', '.join(benchmark.datasets)}"
    )

    out = opts["output_dir"] or Path("runs") / f"eval-{benchmark.name}-{datetime.now():%Y%m%d-%H%M%S}"
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EvaluationSetupError(f"cannot create output folder {out}: {exc}") from None
    settings = RunSettings(
        ks=opts["ks"], embed_model=opts["embed_model"], cache_dir=opts["cache_dir"] or default_cache_dir(),
        confusion_k=opts["confusion_k"], show_progress=opts["progress"],
    )
    results = run_evaluation(benchmark, configs, settings, log=echo)
    results["command"] = "llama-sac " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    results["created"] = datetime.now().isoformat(timespec="seconds")

    (out / "results.json").write_text(json.dumps(results, indent=1, default=str), encoding="utf-8")
    report.write_csv(results, out / "results.csv")
    report.write_query_csv(results, out / "queries.csv")
    with (out / "confusions.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["config", "k", "gold_document", "stolen_by", "chunks", "queries"])
        for outcome in results["configs"]:
            for pair in outcome["confusions"]:
                writer.writerow([outcome["config"]["name"], results["settings"]["confusion_k"], pair["gold"],
                                 pair["retrieved"], pair["chunks"], pair["queries"]])
    report.write_plots(results, out)

    typer.echo("")
    typer.echo(report.format_tables(results))
    typer.echo("")
    typer.echo(report.format_confusions(results))
    timings = "; ".join(
        f"{c['config']['name']}: " + ", ".join(f"{key[:-2]} {value:.1f} s" for key, value in c["timings"].items())
        for c in results["configs"]
    )
    typer.echo(f"\ntimings: {timings}; wall {results['timings']['wall_s']:.1f} s; "
               f"peak memory {results['peak_memory_mb']:.0f} MiB")
    return results, out


def main() -> None:
    """Entry point of the ``llama-sac`` script."""
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
