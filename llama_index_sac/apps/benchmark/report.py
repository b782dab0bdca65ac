"""Reports of an evaluation run: terminal tables, CSV files, PNG plots and the most-confused document pairs.

Everything here reads :class:`~llama_index_sac.apps.benchmark.results.RunResults` (what
:func:`~.runner.run_evaluation` returns and ``results.json`` holds; a results dictionary of
any schema version is accepted and parsed), so a report can be rebuilt from a saved file without re-running anything.
"""

from __future__ import annotations

import csv
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from llama_index_sac.apps.benchmark.results import ConfigResult, DatasetScores, RunResults, parse_results
from llama_index_sac.apps.benchmark.wordings import wording_of

__all__ = [
    "METRIC_LABELS",
    "format_markdown",
    "format_confusions",
    "format_tables",
    "format_timings",
    "format_wordings",
    "wording_scores",
    "write_confusions_csv",
    "write_csv",
    "write_plots",
    "write_query_csv",
]

#: Report order and labels of the metrics shown in tables and plots.
METRIC_LABELS: dict[str, str] = {
    "drm": "DRM@k (share of retrieved chunks from a wrong document; lower is better)",
    "precision": "precision@k (characters; higher is better)",
    "recall": "recall@k (characters; higher is better)",
}


ResultsLike = RunResults | Mapping[str, Any]


def _typed(results: ResultsLike) -> RunResults:
    return results if isinstance(results, RunResults) else parse_results(results)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    line = "  ".join(h.ljust(w) if i < 2 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths)))
    out = [line, "-" * len(line)]
    for row in rows:
        out.append("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))))
    return "\n".join(out)


def _value(scores: DatasetScores, metric: str) -> float | None:
    value = getattr(scores, metric)
    return None if value is None else float(value)


def format_tables(results: ResultsLike, metrics: Sequence[str] = tuple(METRIC_LABELS)) -> str:
    """One table per metric: rows ``(dataset, configuration)`` per dataset and overall, columns ``k``.

    Queries whose DRM is undefined (nothing retrieved) are counted in a note under the DRM table.

    Raises:
        ResultsFormatError: a results dictionary that does not parse.
    """
    run = _typed(results)
    ks, datasets = run.settings.ks, run.datasets
    scopes = [*datasets, "overall"] if len(datasets) > 1 else datasets
    blocks = []
    for metric in metrics:
        rows = []
        for scope in scopes:
            for i, config in enumerate(run.configs):
                label = scope if i == 0 else ""
                rows.append([label, config.name, *(_fmt(_value(config.aggregates.at(scope, k), metric)) for k in ks)])
        text = f"{METRIC_LABELS.get(metric, metric)}\n" + _table(["dataset", "config", *(f"k={k}" for k in ks)], rows)
        if metric == "drm":
            where = "overall" if len(datasets) > 1 else datasets[0]
            undefined = {c.name: c.aggregates.at(where, ks[0]).drm_undefined for c in run.configs}
            if any(undefined.values()):
                counts = ", ".join(f"{name}: {count}" for name, count in undefined.items())
                text += f"\nqueries with nothing retrieved at k={ks[0]} (DRM undefined, left out of the mean): {counts}"
        blocks.append(text)
    counts = ", ".join(f"{name}: {n}" for name, n in run.benchmark.datasets.items())
    blocks.append(
        f"queries per dataset: {counts}; overall = unweighted mean of the dataset means "
        f"({run.benchmark.n_documents} documents indexed)"
    )
    return "\n\n".join(blocks)


def format_markdown(results: ResultsLike, scope: str = "overall") -> str:
    """Markdown table of ``scope`` (``"overall"`` or a dataset): one row per configuration and metric, columns k.

    Rows are DRM@k, precision@k and recall@k of every configuration (values to 3 decimals, ``-`` when undefined).

    Raises:
        KeyError: ``scope`` is neither ``"overall"`` nor a dataset of the run.
    """
    run = _typed(results)
    ks = run.settings.ks
    lines = [
        "| config | metric | " + " | ".join(f"k={k}" for k in ks) + " |",
        "|---|---|" + "---:|" * len(ks),
    ]
    for config in run.configs:
        for metric in METRIC_LABELS:
            values = " | ".join(_fmt(_value(config.aggregates.at(scope, k), metric)) for k in ks)
            lines.append(f"| {config.name} | {metric} | {values} |")
    return "\n".join(lines)


def _mean_over_k(config: ConfigResult, scope: str, metric: str) -> float | None:
    values = [v for scores in (config.aggregates.overall if scope == "overall" else config.aggregates.datasets[scope]
                               ).values() if (v := getattr(scores, metric)) is not None]
    return sum(values) / len(values) if values else None


def wording_scores(results: ResultsLike) -> dict[str, dict[str, dict[str, dict[str, float | None]]]]:
    """The scores of a run with wordings (``eval --wordings``): configuration -> wording -> dataset (and
    ``"overall"``, the unweighted mean of the datasets) -> ``{"drm", "precision", "recall"}`` (each the mean over
    the run's k) and ``"p@1"`` (precision at k = 1; None when 1 is not among the run's k). Empty for a run without
    wordings."""
    run = _typed(results)
    out: dict[str, dict[str, dict[str, dict[str, float | None]]]] = {}
    for config in run.configs:
        per: dict[str, dict[str, dict[str, float | None]]] = {}
        for scope in run.datasets:
            dataset, wording = wording_of(scope)
            if wording is None:
                continue
            scores: dict[str, float | None] = {m: _mean_over_k(config, scope, m) for m in METRIC_LABELS}
            scores["p@1"] = _value(config.aggregates.at(scope, 1), "precision") if 1 in run.settings.ks else None
            per.setdefault(wording, {})[dataset] = scores
        for block in per.values():
            block["overall"] = {m: _mean([s[m] for s in block.values()]) for m in (*METRIC_LABELS, "p@1")}
        if per:
            out[config.name] = per
    return out


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if len(known) == len(values) and known else None


def format_wordings(results: ResultsLike) -> str:
    """Markdown table of a run with wordings: one row per configuration and wording, the overall DRM, precision and
    recall (mean over k, %) and precision@1, then each dataset's DRM / precision@1; "" for a run without wordings."""
    scores = wording_scores(results)
    if not scores:
        return ""
    datasets = list(dict.fromkeys(d for per in scores.values() for block in per.values() for d in block
                                  if d != "overall"))

    def pct(value: float | None) -> str:
        return "-" if value is None else f"{100 * value:.2f}"

    lines = ["| config | wording | DRM | precision | recall | P@1 | " + " | ".join(
        f"{d} DRM / P@1" for d in datasets) + " |", "|---|---|" + "---:|" * (4 + len(datasets))]
    for name, per in scores.items():
        for wording, block in per.items():
            total = block["overall"]
            cells = [f"{pct(block[d]['drm'])} / {pct(block[d]['p@1'])}" if d in block else "-" for d in datasets]
            lines.append(f"| {name} | {wording} | {pct(total['drm'])} | {pct(total['precision'])} | "
                         f"{pct(total['recall'])} | {pct(total['p@1'])} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def format_confusions(results: ResultsLike, top: int = 5) -> str:
    """The ``top`` most-confused document pairs of every configuration, as text."""
    run = _typed(results)
    lines = [f"most-confused document pairs at k={run.settings.confusion_k} (gold <- stolen by)"]
    for config in run.configs:
        lines.append(f"  {config.name}:")
        pairs = config.confusions[:top]
        if not pairs:
            lines.append("    (no chunk from a wrong document)")
        for pair in pairs:
            counts = f"{pair.chunks:4d} chunks / {pair.queries:3d} queries"
            lines.append(f"    {counts}  {pair.gold}  <-  {pair.retrieved}")
    return "\n".join(lines)


def format_timings(results: ResultsLike) -> str:
    """One line: each configuration's step timings, the wall time and the peak memory."""
    run = _typed(results)
    timings = "; ".join(
        f"{c.name}: " + ", ".join(f"{key.removesuffix('_s')} {value:.1f} s" for key, value in c.timings.items())
        for c in run.configs
    )
    return f"timings: {timings}; wall {run.timings.wall_s:.1f} s; peak memory {run.peak_memory_mb:.0f} MiB"


def write_csv(results: ResultsLike, path: str | Path) -> Path:
    """Aggregates in long format: ``config, dataset, k, metric, value, n_queries, drm_undefined`` (dataset
    ``"overall"`` for the unweighted mean over datasets; values to 6 decimals, empty when undefined)."""
    run = _typed(results)
    path = Path(path)
    metrics = ("drm", "precision", "recall", "hit_rate", "mrr")
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["config", "dataset", "k", "metric", "value", "n_queries", "drm_undefined"])
        for config in run.configs:
            for scope in [*config.aggregates.datasets, "overall"]:
                for k in run.settings.ks:
                    summary = config.aggregates.at(scope, k)
                    for metric in metrics:
                        value = _value(summary, metric)
                        writer.writerow([config.name, scope, k, metric, "" if value is None else f"{value:.6f}",
                                         summary.n_queries, summary.drm_undefined])
    return path


def write_query_csv(results: ResultsLike, path: str | Path) -> Path:
    """Per-query values: ``config, dataset, query_id, k, precision, recall, drm, hit_rate, mrr, n_retrieved``
    (an ineligible query: one row with ``k`` empty and ``precision`` = ``ineligible``); no row for a configuration
    published without records."""
    run = _typed(results)
    path = Path(path)
    names = ["precision", "recall", "drm", "hit_rate", "mrr", "n_retrieved"]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["config", "dataset", "query_id", "k", *names])
        for config in run.configs:
            for record in config.records or []:
                if record.scores is None:
                    writer.writerow([config.name, record.dataset, record.query_id, "", "ineligible"])
                    continue
                for k, scores in record.scores.items():
                    values = ["" if getattr(scores, n) is None else getattr(scores, n) for n in names]
                    writer.writerow([config.name, record.dataset, record.query_id, k, *values])
    return path


def write_confusions_csv(results: ResultsLike, path: str | Path) -> Path:
    """The confused document pairs: ``config, k, gold_document, stolen_by, chunks, queries``."""
    run = _typed(results)
    path = Path(path)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["config", "k", "gold_document", "stolen_by", "chunks", "queries"])
        for config in run.configs:
            for pair in config.confusions:
                writer.writerow([config.name, run.settings.confusion_k, pair.gold, pair.retrieved, pair.chunks,
                                 pair.queries])
    return path


def _config_curve(config: ConfigResult, scope: str, ks: Sequence[int], metric: str) -> list[tuple[int, float]]:
    values = [_value(config.aggregates.at(scope, k), metric) for k in ks]
    return [(k, v) for k, v in zip(ks, values) if v is not None]


def write_plots(results: ResultsLike, out_dir: str | Path) -> list[Path]:
    """PNG plots (matplotlib, Agg backend): for each of DRM, precision and recall, value against k (log2 axis),
    one line per configuration, one panel for "overall" and one per dataset. Returns the written paths
    (``<out_dir>/<metric>_at_k.png``).

    Raises:
        ImportError: matplotlib is not installed (the ``cli`` extra).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run = _typed(results)
    out_dir = Path(out_dir)
    ks, datasets = run.settings.ks, run.datasets
    scopes = ["overall", *datasets] if len(datasets) > 1 else datasets
    paths = []
    for metric in METRIC_LABELS:
        fig, axes = plt.subplots(1, len(scopes), figsize=(4.2 * len(scopes), 3.6), squeeze=False)
        for ax, scope in zip(axes[0], scopes):
            for config in run.configs:
                points = _config_curve(config, scope, ks, metric)
                if points:
                    ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=config.name)
            ax.set_xscale("log", base=2)
            ax.set_xticks(ks, [str(k) for k in ks])
            ax.set_title(scope)
            ax.set_xlabel("k")
            ax.set_ylim(bottom=0)
            ax.grid(True, alpha=0.3)
        axes[0][0].set_ylabel(metric)
        axes[0][0].legend(fontsize="small")
        # wrapped to the figure's width (about 11 characters an inch at this size): a long title is never clipped
        fig.suptitle(textwrap.fill(METRIC_LABELS[metric], width=max(24, int(4.2 * len(scopes) * 11))),
                     fontsize="medium")
        fig.tight_layout()
        path = out_dir / f"{metric}_at_k.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths
