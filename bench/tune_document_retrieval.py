"""Choose DocumentAwareRetriever's prior_weight and focus_documents WITHOUT the test queries (issue 15).

Grid: ``prior_weight`` x ``focus_documents`` x ``name_weight`` (the names' share of the prior; 0 is the summaries
alone); ``max_document_frequency`` stays at its default, fixed beforehand.

Protocol (leave-one-dataset-out over LegalBench-RAG's four datasets): every grid point runs once on all queries
(``llama-sac eval`` machinery, one run, embeddings from the shared cache); for each held-out dataset D the grid point
with the best objective on the OTHER three datasets is chosen and D's scores are reported with it, so no reported
number comes from parameters chosen on its own queries. The objective is the mean over k of
``precision + recall - DRM`` (unweighted mean over the three datasets). The package defaults are the values chosen
most often across the four folds (ties: the smaller weight).

    python bench/tune_document_retrieval.py --data-dir ../shared/data/legalbenchrag --base sac \\
        --json /tmp/tune-sac.json
    python bench/tune_document_retrieval.py --synthetic 150            # the built-in contracts (2 datasets)

``--base sac`` tunes SAC + the retriever; ``--base baseline`` the chunks embedded alone with the summaries used only
for the document index; ``--base sac-meta`` SAC with the file name folded into the summary.
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

WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.5, 1.0, 3.0)
FOCUS = (0, 2)
NAME_WEIGHTS = (0.0, 0.5, 1.0)
BASES = {
    "sac": "sac-doc",
    "baseline": "baseline-doc",
    "sac-meta": "sac-doc:summarizer.metadata_keys=file_name",
}


def point_name(point: tuple[float, int, float]) -> str:
    return f"w{point[0]}-f{point[1]}-n{point[2]}"


def objective(results: RunResults, config: str, datasets: list[str]) -> float:
    """Mean over ``datasets`` of the mean over k of precision + recall - DRM."""
    entry = results.config(config)
    values = []
    for dataset in datasets:
        per_k = entry.aggregates.datasets[dataset]
        values.append(statistics.fmean(
            (s.precision or 0.0) + (s.recall or 0.0) - (s.drm or 0.0) for s in per_k.values()))
    return statistics.fmean(values)


def means(results: RunResults, config: str, dataset: str) -> dict[str, float]:
    per_k = results.config(config).aggregates.datasets[dataset]
    return {m: statistics.fmean(getattr(s, m) or 0.0 for s in per_k.values()) for m in ("drm", "precision", "recall")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--synthetic", type=int, help="use the built-in contracts with this many documents")
    parser.add_argument("--base", choices=sorted(BASES), default="sac")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if (args.data_dir is None) == (args.synthetic is None):
        sys.exit("error: give --data-dir or --synthetic N")
    options = (LoaderOptions(source="legalbenchrag", data_dir=str(args.data_dir)) if args.data_dir is not None
               else LoaderOptions(source="synthetic", n_documents=args.synthetic))
    benchmark, options = load_benchmark(options)
    # weight 0 is plain dense retrieval whatever the rest: one point
    grid = [(0.0, 0, 0.0)] + [p for p in itertools.product(WEIGHTS, FOCUS, NAME_WEIGHTS) if p[0] > 0]
    configs = []
    for weight, focus, names in grid:
        spec = BASES[args.base]
        sep = "," if ":" in spec else ":"
        configs.append(parse_config(f"{spec}{sep}document_retrieval.prior_weight={weight},"
                                    f"document_retrieval.focus_documents={focus},"
                                    f"document_retrieval.name_weight={names},"
                                    f"name={point_name((weight, focus, names))}"))
    results = run_evaluation(benchmark, configs, RunSettings(show_progress=False), log=print)
    datasets = results.datasets
    folds: dict[str, Any] = {}
    for held_out in datasets:
        train = [d for d in datasets if d != held_out]
        best = max(grid, key=lambda p: (objective(results, point_name(p), train), -p[0], -p[1], -p[2]))
        name = point_name(best)
        folds[held_out] = {"chosen": {"prior_weight": best[0], "focus_documents": best[1], "name_weight": best[2]},
                           "train_objective": objective(results, name, train),
                           "held_out": means(results, name, held_out),
                           "held_out_plain": means(results, point_name(grid[0]), held_out)}
    votes = Counter(tuple(f["chosen"].values()) for f in folds.values())
    default = sorted(votes.items(), key=lambda item: (-item[1], item[0]))[0][0]
    report = {"base": args.base, "benchmark": results.benchmark.description, "grid": grid, "folds": folds,
              "default": {"prior_weight": default[0], "focus_documents": default[1], "name_weight": default[2]},
              "per_point": {c.name: {d: means(results, c.name, d) for d in datasets} for c in configs}}
    print(json.dumps({k: report[k] for k in ("base", "folds", "default")}, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
