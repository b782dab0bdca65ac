"""``llama-sac``: the command line of llama-index-sac.

``llama-sac eval`` is the main job: it indexes a corpus under several configurations side by side (default: the flat
baseline, recursive 500-character chunks, against SAC, the same chunks embedded with an extractive document
summary), retrieves for every benchmark query and reports DRM@k, precision@k and recall@k per dataset and overall.

* no data option: the built-in synthetic contracts (offline, about a minute on a laptop CPU);
* ``--data-dir PATH``: LegalBench-RAG (``corpus/`` or ``corpus.tar.xz`` + ``benchmarks/`` or ``benchmarks_mini/``).

Outputs (in ``--output-dir``): ``results.json`` (configuration, per-query records, aggregates, timings, versions,
peak memory), ``results.csv`` (aggregates, long format), ``queries.csv`` (per query and k), ``confusions.csv``,
``drm_at_k.png``, ``precision_at_k.png``, ``recall_at_k.png``; the tables are printed too.

Output folder: the run writes into a hidden staging folder beside ``--output-dir`` and moves its files into place
only when everything succeeded. A new output folder therefore appears complete or not at all; an existing one is
left unchanged by a failed run, and a successful run replaces its files of the same names (other files stay). Parent
folders the run had to create are removed again on failure.

Errors: every bad input (an option value typer/click rejects, an unknown option, a malformed ``--k`` such as
``0`` or ``1,,4``, a missing or unsafe data directory, a corrupt corpus archive, an unknown dataset, an invalid
configuration, an embedding model that cannot load offline, an LLM server that fails or is down, an unwritable
output or cache folder, Ctrl-C) prints one ``error: ...`` line on stderr (continuation lines indented) and exits with
status 2, without a traceback and without output. ``llama-sac`` alone prints the help and exits with status 0.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import sqlite3
import sys
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from typer.core import TyperGroup

try:  # typer >= 0.2x vendors click as typer._click; older typer uses click itself
    from typer._click.exceptions import ClickException, UsageError
except ImportError:  # pragma: no cover - depends on the installed typer
    from click.exceptions import ClickException, UsageError  # type: ignore[assignment,no-redef]
try:
    from typer._click.exceptions import NoArgsIsHelpError
except ImportError:  # pragma: no cover - older click: no_args_is_help prints the help and exits 0 by itself
    NoArgsIsHelpError = type("NoArgsIsHelpError", (UsageError,), {})  # type: ignore[assignment,misc]

if TYPE_CHECKING:
    from llama_index_sac.evaluation.runner import RunConfig

__all__ = ["app", "main"]


def _echo_error(message: str) -> None:
    """One ``error:`` line on stderr; further lines of ``message`` are indented so that no other line starts with
    ``error:``."""
    first, *rest = message.splitlines() or [""]
    lines = [f"error: {first}"] + [line if line[:1].isspace() else "  " + line for line in rest]
    typer.echo("\n".join(lines), err=True)


def _click_message(exc: ClickException) -> str:
    text = exc.format_message()
    if text[:1].isupper() and text[1:2].islower():
        text = text[0].lower() + text[1:]
    if isinstance(exc, UsageError) and exc.ctx is not None:
        text = text.rstrip(".") + f" (see '{exc.ctx.command_path} --help')"
    return text


class _OneLineErrorGroup(TyperGroup):
    """The command group: click/typer usage errors (bad option values, unknown options) become one ``error:`` line
    and exit status 2 instead of typer's boxed format (see the module docstring)."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        run = super().main
        if not standalone_mode:
            return run(args, prog_name, complete_var, False, windows_expand_args, **extra)
        try:
            code = run(args, prog_name, complete_var, False, windows_expand_args, **extra)
        except NoArgsIsHelpError as exc:
            typer.echo(exc.format_message())
            code = 0
        except ClickException as exc:
            _echo_error(_click_message(exc))
            code = 2
        except typer.Abort:
            _echo_error("aborted")
            code = 2
        sys.exit(code if isinstance(code, int) else 0)


app = typer.Typer(
    name="llama-sac",
    cls=_OneLineErrorGroup,
    help="Summary-Augmented Chunking (SAC) for LlamaIndex: measure retrieval over similar legal documents.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """llama-index-sac command line."""


def _split_list(values: list[str] | None, option: str, sep: str = ",") -> list[str]:
    """The items of a repeatable ``sep``-separated option; an empty item (``a,,b``, ``""``) is an error."""
    from llama_index_sac.evaluation.runner import EvaluationSetupError

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
    from llama_index_sac.evaluation.runner import EvaluationSetupError

    items = value.split(",")
    if not all(_K_ITEM.fullmatch(item) for item in items) or min(int(item) for item in items) < 1:
        raise EvaluationSetupError(
            f"--k: expected comma-separated positive integers (at most 7 digits) such as 1,4,16, got {value!r}"
        )
    return sorted({int(item) for item in items})


def _fail(message: str) -> typer.Exit:
    _echo_error(message)
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
    n_documents: Annotated[int, typer.Option(help="Built-in dataset: number of contracts.", min=2, max=150)] = 24,
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
        Path | None, typer.Option("--output-dir", "-o", help="Where results go (default runs/eval-<name>-<time>); "
                                  "written only if the run succeeds (an existing folder is unchanged by a failure).")
    ] = None,
    progress: Annotated[bool, typer.Option(help="Progress bars.")] = True,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only print the tables.")] = False,
) -> None:
    """Run the main job: index, retrieve and report DRM@k, precision@k, recall@k side by side."""
    from llama_index_sac.datasets.legalbenchrag import LegalBenchRAGError
    from llama_index_sac.evaluation.evaluator import NodeLocationError
    from llama_index_sac.evaluation.runner import EvaluationSetupError
    from llama_index_sac.summarizers.base import SummarizationError

    logging.basicConfig(level=logging.WARNING)
    started = time.perf_counter()
    configs: list[RunConfig] = []
    try:
        ks = _parse_ks(k)
        configs = _parse_configs(
            _split_list(config, "--config", ";") or ["baseline", "sac"], scope=scope, parser=parser,
            chunk_size=chunk_size, chunk_overlap=chunk_overlap, retrieval=retrieval, summarizer=summarizer, llm=llm,
            llm_api_base=llm_api_base, prompt=prompt, summary_chars=summary_chars,
        )
        out = _run(
            data_dir=data_dir, datasets=_split_list(datasets, "--datasets"), mini=mini, sample=sample, seed=seed,
            scope=scope, benchmarks_dir=benchmarks_dir, n_documents=n_documents, configs=configs,
            embed_model=embed_model, ks=ks, confusion_k=confusion_k, cache_dir=cache_dir, output_dir=output_dir,
            progress=progress and not quiet, quiet=quiet,
        )
    except (LegalBenchRAGError, EvaluationSetupError, NodeLocationError) as exc:
        raise _fail(str(exc)) from None
    except SummarizationError as exc:
        raise _fail(_summary_failure(exc, configs)) from None
    except (OSError, sqlite3.Error) as exc:  # an unwritable output or cache folder, a full disk
        raise _fail(f"{type(exc).__name__}: {exc}") from None
    except KeyboardInterrupt:
        raise _fail("interrupted") from None
    if not quiet:
        typer.echo(f"\nresults in {out} ({time.perf_counter() - started:.0f} s)")


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
            text = "".join(f"\n{scope}:\n\n" + report.format_markdown(results, scope) + "\n" for scope in scopes)
        else:
            text = report.format_tables(results) + "\n\n" + report.format_confusions(results) + "\n"
        timings = results["timings"]
        text += (f"\ncommand: {results.get('command', '?')}\nwall: {timings['wall_s']:.0f} s; "
                 f"peak memory {results['peak_memory_mb']:.0f} MiB")
    except OSError as exc:
        raise _fail(f"cannot read results from {results_json}: {type(exc).__name__}: {exc}") from None
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError) as exc:
        # not JSON, or JSON of another shape than the results.json `llama-sac eval` writes
        raise _fail(f"cannot read results from {results_json}: not a results.json of llama-sac eval "
                    f"({type(exc).__name__}: {str(exc)[:200]})") from None
    typer.echo(text)


def _is_file(name: str) -> bool:
    try:
        return Path(os.path.expanduser(name)).is_file()
    except (OSError, ValueError):  # a name too long, a NUL byte
        return False


def _llm_endpoint(config: RunConfig) -> str:
    """Where an LLM configuration's summaries come from (the order of ``runner._build_llm_summarizer``)."""
    model = config.llm or "?"
    if model.endswith(".gguf") or _is_file(model):
        return f"local model {model}"
    if config.llm_api_base:
        return config.llm_api_base
    return f"OpenAI API (model {model})"


def _summary_failure(exc: Exception, configs: Sequence[RunConfig]) -> str:
    """The ``error:`` text of a failed summary: the configuration(s), the endpoint and the document."""
    message = str(exc)
    llm = [c for c in configs if c.summarizer == "llm"]
    names = ", ".join(repr(c.name) for c in llm) or "?"
    endpoints = [e for e in dict.fromkeys(_llm_endpoint(c) for c in llm) if e not in message]
    doc_id = getattr(exc, "doc_id", None)
    head = f"LLM summarizer of configuration {names} failed"
    if endpoints:
        head += f" (endpoint {', '.join(endpoints)})"
    if doc_id is not None and str(doc_id) not in message:
        head += f" on document {doc_id!r}"
    return f"{head}: {message}"


def _parse_configs(specs: list[str], **opts: Any) -> list[RunConfig]:
    """The configurations of ``--config`` with the options for every configuration; checks option choices.

    Raises:
        EvaluationSetupError: an option value out of its choices or an invalid configuration.
    """
    from llama_index_sac.evaluation.runner import EvaluationSetupError, parse_config

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
    return [parse_config(spec, common, summary_options) for spec in specs]


def _load_benchmark(opts: dict[str, Any], echo: Any) -> Any:
    from llama_index_sac.evaluation.runner import EvaluationSetupError

    if opts["data_dir"] is None:
        from llama_index_sac.datasets.synthetic import synthetic_contracts

        if opts["datasets"] or opts["mini"] or opts["sample"] or opts["benchmarks_dir"]:
            raise EvaluationSetupError("--datasets, --mini, --sample and --benchmarks-dir need --data-dir")
        return synthetic_contracts(n_documents=opts["n_documents"], seed=opts["seed"])
    from llama_index_sac.datasets.legalbenchrag import load_legalbenchrag

    if opts["mini"] and opts["sample"]:
        raise EvaluationSetupError("--mini and --sample are two sampling protocols: choose one")
    sampling: Literal["all", "mini", "random"] = "mini" if opts["mini"] else "random" if opts["sample"] else "all"
    echo(f"loading LegalBench-RAG from {opts['data_dir']} (sampling={sampling}, scope={opts['scope']})")
    return load_legalbenchrag(
        opts["data_dir"], opts["datasets"] or None, sampling=sampling, sample_size=opts["sample"],
        seed=opts["seed"], scope=opts["scope"], benchmarks_dir=opts["benchmarks_dir"],
    )


def _run(**opts: Any) -> Path:
    """Load the data, run every configuration into a staging folder, move it into place; returns the folder."""
    from llama_index_sac.evaluation import report
    from llama_index_sac.evaluation.cache import default_cache_dir
    from llama_index_sac.evaluation.output import staged_output_dir, write_run_outputs
    from llama_index_sac.evaluation.runner import RunSettings, run_evaluation

    echo = (lambda _msg: None) if opts["quiet"] else (lambda msg: typer.echo(msg, err=True))
    benchmark = _load_benchmark(opts, echo)
    echo(
        f"{benchmark.description}: {len(benchmark.documents)} documents, {benchmark.n_characters:,} characters, "
        f"{len(benchmark.queries)} queries in {', '.join(benchmark.datasets)}"
    )
    out = Path(opts["output_dir"] or Path("runs") / f"eval-{benchmark.name}-{datetime.now():%Y%m%d-%H%M%S}")
    settings = RunSettings(
        ks=opts["ks"], embed_model=opts["embed_model"], cache_dir=opts["cache_dir"] or default_cache_dir(),
        confusion_k=opts["confusion_k"], show_progress=opts["progress"],
    )
    with staged_output_dir(out) as staging:
        results = run_evaluation(benchmark, opts["configs"], settings, log=echo)
        results["command"] = "llama-sac " + " ".join(shlex.quote(a) for a in sys.argv[1:])
        results["created"] = datetime.now().isoformat(timespec="seconds")
        write_run_outputs(results, staging)

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
    return out


def main() -> None:
    """Entry point of the ``llama-sac`` script."""
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
