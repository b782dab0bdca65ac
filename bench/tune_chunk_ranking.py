"""Choose the within-document ranking options of DocumentAwareRetriever WITHOUT the test queries.

Grid: ``lexical_weight`` (the question's BM25 over the candidate chunks) x the prior's hub fix (``prior_margin``,
``require_name_match``) x ``name_pairs`` (two-word names); every other option at the package default
(``prior_weight``, ``focus_documents``, ``name_weight``, ``candidate_top_k``). Plain dense retrieval of the same
embeddings is run beside it for reference.

Protocol (leave-one-dataset-out over LegalBench-RAG's four datasets, as ``bench/tune_document_retrieval.py``): every
grid point runs once on all queries (one ``llama-sac eval`` run: the configurations embed the same texts, so the
chunks are embedded once, or read from the cache); for each held-out dataset D the grid point with the best
objective on the OTHER three datasets is chosen and D is scored with it. The objective is the unweighted mean over
the three datasets of the mean over k of ``precision + recall - DRM``. The package defaults are the values chosen
most often across the four folds (ties: the point nearest the current ranking: smaller weight, fix off, pairs off).

    python bench/tune_chunk_ranking.py --data-dir ../shared/data/legalbenchrag --base default \\
        --cache-dir /work/cache --json /tmp/rank/tune-default.json
    python bench/tune_chunk_ranking.py --data-dir ../shared/data/legalbenchrag --base sac --cache-dir /work/cache
    python bench/tune_chunk_ranking.py --synthetic 24                  # the built-in contracts (2 datasets)

``--base default``: the ``default`` preset (file name folded into the summary); ``--base sac``: ``sac-doc``
(content-only summaries).
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from llama_index_sac.apps.benchmark.config import LoaderOptions, RunSettings, parse_config
from llama_index_sac.apps.benchmark.factories import load_benchmark
from llama_index_sac.apps.benchmark.results import RunResults
from llama_index_sac.apps.benchmark.runner import run_evaluation

LEXICAL_WEIGHTS = (0.0, 0.02, 0.05, 0.1, 0.2)
#: (prior_margin, require_name_match): off, a margin, a name match, both.
HUB_FIXES = ((0.0, False), (0.5, False), (0.0, True), (0.5, True))
NAME_PAIRS = (False, True)
BASES = {"default": "default", "sac": "sac-doc"}
METRICS = ("drm", "precision", "recall")

Point = tuple[float, float, bool, bool]  # lexical_weight, prior_margin, require_name_match, name_pairs


def point_name(point: Point) -> str:
    lexical, margin, match, pairs = point
    return f"l{lexical}-m{margin}-r{int(match)}-p{int(pairs)}"


def objective(results: RunResults, config: str, datasets: list[str]) -> float:
    """Mean over ``datasets`` of the mean over k of precision + recall - DRM."""
    entry = results.config(config)
    values = []
    for dataset in datasets:
        per_k = entry.aggregates.datasets[dataset]
        values.append(statistics.fmean(
            (s.precision or 0.0) + (s.recall or 0.0) - (s.drm or 0.0) for s in per_k.values()))
    return statistics.fmean(values)


def scores(results: RunResults, config: str, dataset: str) -> dict[str, float]:
    """Mean over k of DRM, precision and recall, and precision and recall at k = 1 (fractions)."""
    per_k = results.config(config).aggregates.datasets[dataset]
    out = {m: statistics.fmean(getattr(s, m) or 0.0 for s in per_k.values()) for m in METRICS}
    first = per_k[min(per_k)]
    out["precision@1"] = first.precision or 0.0
    out["recall@1"] = first.recall or 0.0
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--synthetic", type=int, help="use the built-in contracts with this many documents")
    parser.add_argument("--base", choices=sorted(BASES), default="default")
    parser.add_argument("--cache-dir", type=Path, help="the embedding cache (default: the runner's)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if (args.data_dir is None) == (args.synthetic is None):
        sys.exit("error: give --data-dir or --synthetic N")
    options = (LoaderOptions(source="legalbenchrag", data_dir=str(args.data_dir)) if args.data_dir is not None
               else LoaderOptions(source="synthetic", n_documents=args.synthetic))
    benchmark, options = load_benchmark(options)
    grid: list[Point] = [(lw, margin, match, pairs) for lw, (margin, match), pairs
                         in itertools.product(LEXICAL_WEIGHTS, HUB_FIXES, NAME_PAIRS)]
    before = point_name((0.0, 0.0, False, False))  # the ranking of the package before these options
    spec = BASES[args.base]
    configs = [parse_config(f"{spec}:retrieval=dense,name=dense")]
    for point in grid:
        lexical, margin, match, pairs = point
        configs.append(parse_config(f"{spec}:document_retrieval.lexical_weight={lexical},"
                                    f"document_retrieval.prior_margin={margin},"
                                    f"document_retrieval.require_name_match={match},"
                                    f"document_retrieval.name_pairs={pairs},name={point_name(point)}"))
    settings = RunSettings(show_progress=False) if args.cache_dir is None else RunSettings(
        show_progress=False, cache_dir=args.cache_dir)
    results = run_evaluation(benchmark, configs, settings, log=print)
    datasets = results.datasets
    folds: dict[str, Any] = {}
    for held_out in datasets:
        train = [d for d in datasets if d != held_out]
        best = max(grid, key=lambda p: (objective(results, point_name(p), train), -p[0], -p[1], -p[2], -p[3]))
        folds[held_out] = {
            "chosen": {"lexical_weight": best[0], "prior_margin": best[1], "require_name_match": best[2],
                       "name_pairs": best[3]},
            "train_objective": objective(results, point_name(best), train),
            "held_out": scores(results, point_name(best), held_out),
            "held_out_before": scores(results, before, held_out),
            "held_out_dense": scores(results, "dense", held_out)}
    votes = Counter(tuple(f["chosen"].values()) for f in folds.values())
    default = sorted(votes.items(), key=lambda item: (-item[1], item[0]))[0][0]
    mean = {key: {m: statistics.fmean(f[key][m] for f in folds.values()) for m in folds[datasets[0]][key]}
            for key in ("held_out", "held_out_before", "held_out_dense")}
    report = {"base": args.base, "benchmark": results.benchmark.description, "grid": grid, "folds": folds,
              "mean_of_folds": mean,
              "default": dict(zip(("lexical_weight", "prior_margin", "require_name_match", "name_pairs"), default)),
              "per_point": {c.name: {d: scores(results, c.name, d) for d in datasets} for c in configs}}
    print(json.dumps({k: report[k] for k in ("base", "folds", "mean_of_folds", "default")}, indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
