"""Reports of an evaluation run: terminal tables, CSV files, PNG plots and the most-confused document pairs.

Everything here reads the ``results`` dictionary that :func:`llama_index_sac.evaluation.runner.run_evaluation`
returns (and writes to ``results.json``), so a report can be rebuilt from a saved file without re-running anything.
"""

from __future__ import annotations

import csv
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "METRIC_LABELS",
    "confused_pairs",
    "format_markdown",
    "format_confusions",
    "format_tables",
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


def confused_pairs(records: Iterable[Mapping[str, Any]], k: int, top: int = 20) -> list[dict[str, Any]]:
    """Which documents steal retrievals from which: among the top-``k`` chunks of every eligible query, count each
    (gold document, wrong document) pair; a query with several gold documents is labelled by all of them.

    ``records`` are per-query record dictionaries (``QueryRecord.as_dict()``). Returns the ``top`` pairs, most
    frequent first (ties by name), each ``{"gold": str, "retrieved": str, "chunks": int, "queries": int}``.
    """
    chunks: Counter[tuple[str, str]] = Counter()
    queries: dict[tuple[str, str], set[str]] = defaultdict(set)
    for record in records:
        if record.get("scores") is None:
            continue
        gold_docs = sorted({span[0] for span in record["gold"]})
        label = " + ".join(gold_docs)
        for doc_id, start, end in record["retrieved"][:k]:
            if end > start and doc_id not in gold_docs:
                chunks[(label, doc_id)] += 1
                queries[(label, doc_id)].add(record["query_id"])
    ordered = sorted(chunks.items(), key=lambda item: (-item[1], item[0]))[:top]
    return [
        {"gold": gold, "retrieved": stolen, "chunks": count, "queries": len(queries[(gold, stolen)])}
        for (gold, stolen), count in ordered
    ]


def _fmt(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    line = "  ".join(h.ljust(w) if i < 2 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths)))
    out = [line, "-" * len(line)]
    for row in rows:
        out.append("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))))
    return "\n".join(out)


def _summary(config: Mapping[str, Any], scope: str, k: int) -> Mapping[str, Any]:
    agg = config["aggregates"]
    block = agg["overall"] if scope == "overall" else agg["datasets"][scope]
    return block[str(k)] if str(k) in block else block[k]


def format_tables(results: Mapping[str, Any], metrics: Sequence[str] = tuple(METRIC_LABELS)) -> str:
    """One table per metric: rows ``(dataset, configuration)`` per dataset and overall, columns ``k``.

    Queries whose DRM is undefined (nothing retrieved) are counted in a note under the DRM table.
    """
    ks = results["settings"]["ks"]
    datasets = list(results["benchmark"]["datasets"])
    scopes = [*datasets, "overall"] if len(datasets) > 1 else datasets
    blocks = []
    for metric in metrics:
        rows = []
        for scope in scopes:
            for i, config in enumerate(results["configs"]):
                label = scope if i == 0 else ""
                rows.append([label, config["config"]["name"], *(_fmt(_summary(config, scope, k)[metric]) for k in ks)])
        text = f"{METRIC_LABELS.get(metric, metric)}\n" + _table(["dataset", "config", *(f"k={k}" for k in ks)], rows)
        if metric == "drm":
            where = "overall" if len(datasets) > 1 else datasets[0]
            undefined = {c["config"]["name"]: _summary(c, where, ks[0])["drm_undefined"] for c in results["configs"]}
            if any(undefined.values()):
                counts = ", ".join(f"{name}: {count}" for name, count in undefined.items())
                text += f"\nqueries with nothing retrieved at k={ks[0]} (DRM undefined, left out of the mean): {counts}"
        blocks.append(text)
    counts = ", ".join(f"{name}: {n}" for name, n in results["benchmark"]["datasets"].items())
    blocks.append(
        f"queries per dataset: {counts}; overall = unweighted mean of the dataset means "
        f"({results['benchmark']['n_documents']} documents indexed)"
    )
    return "\n\n".join(blocks)


def format_markdown(results: Mapping[str, Any], scope: str = "overall") -> str:
    """Markdown table of ``scope`` (``"overall"`` or a dataset): one row per configuration and metric, columns k.

    Rows are DRM@k, precision@k and recall@k of every configuration (values to 3 decimals, ``-`` when undefined).
    """
    ks = results["settings"]["ks"]
    lines = [
        "| config | metric | " + " | ".join(f"k={k}" for k in ks) + " |",
        "|---|---|" + "---:|" * len(ks),
    ]
    for config in results["configs"]:
        for metric in METRIC_LABELS:
            values = " | ".join(_fmt(_summary(config, scope, k)[metric]) for k in ks)
            lines.append(f"| {config['config']['name']} | {metric} | {values} |")
    return "\n".join(lines)


def format_confusions(results: Mapping[str, Any], top: int = 5) -> str:
    """The ``top`` most-confused document pairs of every configuration, as text."""
    lines = [f"most-confused document pairs at k={results['settings']['confusion_k']} (gold <- stolen by)"]
    for config in results["configs"]:
        lines.append(f"  {config['config']['name']}:")
        pairs = config.get("confusions", [])[:top]
        if not pairs:
            lines.append("    (no chunk from a wrong document)")
        for pair in pairs:
            counts = f"{pair['chunks']:4d} chunks / {pair['queries']:3d} queries"
            lines.append(f"    {counts}  {pair['gold']}  <-  {pair['retrieved']}")
    return "\n".join(lines)


def write_csv(results: Mapping[str, Any], path: str | Path) -> Path:
    """Aggregates in long format: ``config, dataset, k, metric, value, n_queries, drm_undefined`` (dataset
    ``"overall"`` for the unweighted mean over datasets)."""
    path = Path(path)
    metrics = ("drm", "precision", "recall", "hit_rate", "mrr")
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["config", "dataset", "k", "metric", "value", "n_queries", "drm_undefined"])
        for config in results["configs"]:
            scopes = [*config["aggregates"]["datasets"], "overall"]
            for scope in scopes:
                for k in results["settings"]["ks"]:
                    summary = _summary(config, scope, k)
                    for metric in metrics:
                        value = summary.get(metric)
                        writer.writerow(
                            [
                                config["config"]["name"],
                                scope,
                                k,
                                metric,
                                "" if value is None else f"{value:.6f}",
                                summary["n_queries"],
                                summary["drm_undefined"],
                            ]
                        )
    return path


def write_query_csv(results: Mapping[str, Any], path: str | Path) -> Path:
    """Per-query values: ``config, dataset, query_id, k, precision, recall, drm, hit_rate, mrr, n_retrieved``."""
    path = Path(path)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        names = ["precision", "recall", "drm", "hit_rate", "mrr", "n_retrieved"]
        writer.writerow(["config", "dataset", "query_id", "k", *names])
        for config in results["configs"]:
            for record in config["records"]:
                if record["scores"] is None:
                    writer.writerow([config["config"]["name"], record["dataset"], record["query_id"], "", "ineligible"])
                    continue
                for k, scores in record["scores"].items():
                    values = ["" if scores[n] is None else scores[n] for n in names]
                    writer.writerow([config["config"]["name"], record["dataset"], record["query_id"], k, *values])
    return path


def write_plots(results: Mapping[str, Any], out_dir: str | Path) -> list[Path]:
    """PNG plots (matplotlib, Agg backend): for each of DRM, precision and recall, value against k (log2 axis),
    one line per configuration, one panel for "overall" and one per dataset. Returns the written paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    ks = results["settings"]["ks"]
    datasets = list(results["benchmark"]["datasets"])
    scopes = ["overall", *datasets] if len(datasets) > 1 else datasets
    paths = []
    for metric in METRIC_LABELS:
        fig, axes = plt.subplots(1, len(scopes), figsize=(4.2 * len(scopes), 3.6), squeeze=False)
        for ax, scope in zip(axes[0], scopes):
            for config in results["configs"]:
                values = [_summary(config, scope, k)[metric] for k in ks]
                points = [(k, v) for k, v in zip(ks, values) if v is not None]
                if points:
                    ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=config["config"]["name"])
            ax.set_xscale("log", base=2)
            ax.set_xticks(ks, [str(k) for k in ks])
            ax.set_title(scope)
            ax.set_xlabel("k")
            ax.set_ylim(bottom=0)
            ax.grid(True, alpha=0.3)
        axes[0][0].set_ylabel(metric)
        axes[0][0].legend(fontsize="small")
        fig.suptitle(METRIC_LABELS[metric], fontsize="medium")
        fig.tight_layout()
        path = out_dir / f"{metric}_at_k.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths
