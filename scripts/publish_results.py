"""Publish a finished ``llama-sac eval`` run into ``docs/results/<name>/`` and print its markdown for docs/results.md.

    python scripts/publish_results.py RESULTS_JSON NAME [--compare baseline:sac] [--goal baseline:sac] [--k 8] \
        [--held-out "sac-doc=contractnli:sac-doc-w0.2,cuad:sac-doc,maud:sac-doc,privacy_qa:sac-doc"]

Writes ``docs/results/<name>/results.json`` (the run's results.json WITHOUT the per-query records, which make it
several MB: configuration, aggregates, confusions, summaries, timings, peak memory and the exact command are kept),
``docs/results/<name>/{drm,precision,recall}_at_k.png`` (``llama_index_sac.apps.benchmark.report.write_plots``) and
``docs/results/<name>/report.md`` (everything printed, so the query-level claims stay checkable). Prints:
the overall and per-dataset markdown tables, the means over k, timings, the most-confused document pairs, and, for
each ``--compare A:B`` pair of configurations, queries that B fixes (DRM@k of A > 0.5, B = 0) and queries it does not
(DRM@k of B > 0.5); and for each ``--held-out NAME=DATASET:CONFIG,...`` the row of a leave-one-dataset-out result:
each dataset scored with the configuration its fold chose (``docs/results.md`` 6b), and the mean of those datasets'
scores (a run's overall scores are the same mean over datasets, so the row compares with each configuration's own).
Nothing is recomputed: every number is read from the results.json given (any schema version, read through
``llama_index_sac.apps.benchmark.results.load_results``; the published copy is written in the current schema). A bad
``--held-out`` is one usage error before anything is written.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from pathlib import Path

from llama_index_sac.apps.benchmark import report
from llama_index_sac.apps.benchmark.results import (
    ConfigResult,
    QueryResult,
    QueryScoresResult,
    RunResults,
    load_results,
)

REPO = Path(__file__).resolve().parents[1]


#: Why the published copy has no per-query records.
RECORDS_DROPPED = "per-query records left out of the published copy (see the command to regenerate)"


def slim(results: RunResults) -> RunResults:
    """A copy of ``results`` without the per-query records (aggregates are kept)."""
    return results.slim(RECORDS_DROPPED)


def mean_over_k(config: ConfigResult, scope: str, metric: str) -> float | None:
    block = config.aggregates.overall if scope == "overall" else config.aggregates.datasets[scope]
    values = [value for v in block.values() if (value := getattr(v, metric)) is not None]
    return sum(values) / len(values) if values else None


def _by_query(config: ConfigResult, k: int) -> dict[str, tuple[QueryResult, QueryScoresResult]]:
    return {rec.query_id: (rec, rec.scores[str(k)]) for rec in config.records or [] if rec.scores is not None}


def _top_wrong(rec: QueryResult, k: int) -> str:
    gold = {span[0] for span in rec.gold}
    wrong: dict[str, int] = {}
    for doc_id, start, end in rec.retrieved[:k]:
        if doc_id not in gold and end > start:
            wrong[doc_id] = wrong.get(doc_id, 0) + 1
    if not wrong:
        return "-"
    doc, n = max(wrong.items(), key=lambda item: (item[1], item[0]))
    return f"{doc} ({n}/{k})"


def goal_table(results: RunResults, a: str, b: str) -> str:
    """Markdown table: half of A's overall DRM@k, B's DRM@k, and whether B <= A / 2, for every k."""
    ka, kb = results.config(a).aggregates.overall, results.config(b).aggregates.overall
    ks = sorted(ka, key=int)
    head = "| | " + " | ".join(f"k={k}" for k in ks) + " |\n|---|" + "---:|" * len(ks)
    half = [None if (drm := ka[k].drm) is None else drm / 2 for k in ks]  # None: no query had a DRM at k
    mine = [kb[k].drm for k in ks]
    met = ["-" if m is None or h is None else "yes" if m <= h else f"no (+{m - h:.3f})" for m, h in zip(mine, half)]

    def row(values: list[float | None]) -> str:
        return " | ".join("-" if v is None else f"{v:.3f}" for v in values)

    lines = [head, f"| {a} DRM / 2 | {row(half)} |", f"| {b} DRM | {row(mine)} |", "| met | " + " | ".join(met) + " |"]
    return "\n".join(lines)


def parse_held_out(spec: str, results: RunResults) -> tuple[str, dict[str, str]]:
    """``"NAME=DS:CONFIG,DS:CONFIG,..."`` -> ``(NAME, {dataset: configuration})``; every dataset of the run once.

    Raises:
        ValueError: the spec is malformed, names a dataset or configuration the run lacks, names a dataset twice, or
            leaves a dataset of the run out.
    """
    name, sep, body = spec.partition("=")
    if not sep or not name.strip() or not body.strip():
        raise ValueError(f"--held-out {spec!r}: expected NAME=DATASET:CONFIG,DATASET:CONFIG,...")
    folds: dict[str, str] = {}
    configs = {c.name for c in results.configs}
    for item in body.split(","):
        dataset, sep, config = (part.strip() for part in item.partition(":"))
        if not sep or not dataset or not config:
            raise ValueError(f"--held-out {spec!r}: {item!r} is not DATASET:CONFIG")
        if dataset not in results.datasets:
            raise ValueError(f"--held-out {spec!r}: the run has no dataset {dataset!r} (it has {results.datasets})")
        if config not in configs:
            raise ValueError(f"--held-out {spec!r}: the run has no configuration {config!r}")
        if dataset in folds:
            raise ValueError(f"--held-out {spec!r}: dataset {dataset!r} named twice")
        folds[dataset] = config
    missing = [ds for ds in results.datasets if ds not in folds]
    if missing:
        raise ValueError(f"--held-out {spec!r}: no configuration for the datasets {missing}")
    return name.strip(), folds


def held_out_table(results: RunResults, specs: list[tuple[str, dict[str, str]]]) -> str:
    """Markdown table, one row per held-out result: DRM / precision / recall (mean over k, %) of each dataset under
    its fold's configuration, and their mean over the datasets (``-`` where a dataset has no defined value)."""
    datasets = results.datasets
    head = "| configuration (each dataset: its fold's values) | " + " | ".join(datasets) + " | mean of the datasets |"
    lines = [head, "|---|" + "---:|" * (len(datasets) + 1)]
    for name, folds in specs:
        per = {ds: [mean_over_k(results.config(folds[ds]), ds, m) for m in ("drm", "precision", "recall")]
               for ds in datasets}
        cells = [" / ".join("-" if v is None else f"{100 * v:.1f}" for v in per[ds]) for ds in datasets]
        means = []
        for i in range(3):
            values = [v[i] for v in per.values() if v[i] is not None]
            means.append("-" if not values else f"{100 * sum(values) / len(values):.2f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " | " + " / ".join(means) + " |")
    return "\n".join(lines)


def compare(results: RunResults, a: str, b: str, k: int, n: int = 4) -> str:
    qa, qb = _by_query(results.config(a), k), _by_query(results.config(b), k)
    Row = tuple[str, QueryResult, QueryScoresResult, QueryResult, QueryScoresResult]
    fixed: list[Row] = []
    not_fixed: list[Row] = []
    for qid, (rec_a, sa) in qa.items():
        if qid not in qb:
            continue
        rec_b, sb = qb[qid]
        if sa.drm is None or sb.drm is None:
            continue
        if sa.drm > 0.5 and sb.drm == 0:
            fixed.append((qid, rec_a, sa, rec_b, sb))
        if sb.drm > 0.5:
            not_fixed.append((qid, rec_a, sa, rec_b, sb))
    lines = [f"{b} vs {a} at k={k}: {len(fixed)} queries fixed (DRM {a} > 0.5, {b} = 0); "
             f"{len(not_fixed)} queries with DRM {b} > 0.5 (of {len(qa)})", ""]
    for title, rows in (("fixed", fixed), ("not fixed", not_fixed)):
        # spread the examples over datasets: first of each dataset, then the next...
        by_ds: dict[str, list[Row]] = {}
        for row in rows:
            by_ds.setdefault(row[1].dataset, []).append(row)
        picked: list[Row] = []
        while len(picked) < n and any(by_ds.values()):
            for ds in sorted(by_ds):
                if by_ds[ds] and len(picked) < n:
                    picked.append(by_ds[ds].pop(0))
        lines.append(f"{title}:")
        for qid, rec, sa, rec_b, sb in picked:
            gold = sorted({span[0] for span in rec.gold})
            lines.append(
                f"- `{qid}` {rec.query[:160]!r} gold {', '.join(gold)}; {a}: DRM@{k} {sa.drm:.2f}, "
                f"recall {sa.recall:.2f}, top wrong {_top_wrong(rec, k)}; {b}: DRM@{k} "
                f"{sb.drm:.2f}, recall {sb.recall:.2f}, top wrong {_top_wrong(rec_b, k)}"
            )
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results_json", type=Path)
    parser.add_argument("name", help="folder name under docs/results/")
    parser.add_argument("--compare", action="append", default=[], help="A:B configuration names (B fixes A?)")
    parser.add_argument("--goal", action="append", default=[],
                        help="A:B: is B's DRM@k at most half of A's at every k (issue 6, goal 1)?")
    parser.add_argument("--k", type=int, default=8, help="k of the fixed/not-fixed query examples")
    parser.add_argument("--held-out", action="append", default=[], metavar="NAME=DATASET:CONFIG,...",
                        help="a leave-one-dataset-out row: each dataset scored with its fold's configuration")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "results")
    args = parser.parse_args(argv)

    results = load_results(args.results_json)
    try:
        args.held_out = [parse_held_out(spec, results) for spec in args.held_out]
    except ValueError as exc:  # before anything is written
        parser.error(str(exc))
    out = args.out / args.name
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(slim(results).to_json(), encoding="utf-8")
    report.write_plots(results, out)

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        _print_report(results, args)
    (out / "report.md").write_text(printed.getvalue(), encoding="utf-8")
    print(printed.getvalue(), end="")
    return 0


def _print_report(results: RunResults, args: argparse.Namespace) -> None:
    print(f"command: `{results.command}`\n")
    print(f"wall {results.timings.wall_s:.0f} s, peak memory {results.peak_memory_mb:.0f} MiB; "
          f"{results.benchmark.n_documents} documents, {results.benchmark.n_characters:,} characters, "
          f"{results.benchmark.n_queries} queries\n")
    for c in results.configs:
        t = ", ".join(f"{key[:-2]} {v:.0f} s" for key, v in c.timings.items())
        print(f"- {c.name}: {c.n_chunks} chunks ({c.chunks_embedded} embedded, "
              f"{c.chunks_from_cache} from cache), mean embedded text {c.mean_embedded_chars:.0f} chars; {t}")
    for scope in ["overall", *results.datasets]:
        print(f"\n{scope}:\n\n" + report.format_markdown(results, scope))
    print("\nmean over k (overall):\n\n| config | DRM | precision | recall |\n|---|---:|---:|---:|")
    for c in results.configs:
        vals = [mean_over_k(c, "overall", m) for m in ("drm", "precision", "recall")]
        print(f"| {c.name} | " + " | ".join(f"{100 * v:.2f}%" if v is not None else "-" for v in vals) + " |")
    print("\nmean over k per dataset (DRM / precision / recall):\n")
    datasets = results.datasets
    print("| config | " + " | ".join(datasets) + " |\n|---|" + "---:|" * len(datasets))
    for c in results.configs:
        cells = []
        for ds in datasets:
            vals = [mean_over_k(c, ds, m) for m in ("drm", "precision", "recall")]
            cells.append(" / ".join(f"{100 * v:.1f}" if v is not None else "-" for v in vals))
        print(f"| {c.name} | " + " | ".join(cells) + " |")
    wordings = report.format_wordings(results)
    if wordings:
        print("\nper wording (mean over k, %; P@1 = precision@1; overall = mean of the datasets):\n\n" + wordings)
    for pair in args.goal:
        a, _, b = pair.partition(":")
        print("\n" + goal_table(results, a, b))
    if args.held_out:
        print("\nheld out (DRM / precision / recall, mean over k, %):\n\n" + held_out_table(results, args.held_out))
    print("\n" + report.format_confusions(results, top=5))
    for pair in args.compare:
        a, _, b = pair.partition(":")
        print("\n" + compare(results, a, b, args.k))


if __name__ == "__main__":
    sys.exit(main())
