"""Choose the document locator's thresholds WITHOUT the queries they are scored on (no embedding needed).

:class:`~llama_index_sac.retrievers.locator.DocumentLocator` has two thresholds: ``max_documents`` (a word names
documents only when at most this many documents hold it) and ``min_share`` (a document is located at this share of
the best score). Both are chosen here on how well the locator finds the right document, over LegalBench-RAG-mini's
776 queries written in every wording of ``apps/benchmark/wordings.py``, by leave-one-dataset-out AND
leave-one-form-out: for each held-out dataset (form), the grid point with the best objective on the other datasets
(forms) is chosen and the held-out one is scored with it.

Objective of a cell (dataset, wording), the mean over its queries of: +1 when the first located document is a gold
document, -1 when a document is located and the first is not a gold one (a confident wrong document), 0 when none
is located. The ``none`` wording names no document: there a located document counts -1 unless it is gold (a
privacy question that says "does viber ..." does name Viber). The package defaults are the values most folds choose
(ties: the smaller ``max_documents``, the larger ``min_share``).

The documents' names are :func:`~llama_index_sac.retrievers.document_names.distinctive_names` of their text (as
:meth:`DocumentIndex.from_nodes` computes them); their summaries those of the published ``default`` run
(``docs/results/mini-default/results.json``).

    python bench/tune_locator.py --data-dir ../shared/data/legalbenchrag [--json /tmp/tune-locator.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections import Counter
from pathlib import Path

from llama_index_sac.apps.benchmark.datasets.legalbenchrag import load_legalbenchrag
from llama_index_sac.apps.benchmark.wordings import WORDINGS, reword
from llama_index_sac.retrievers.document_names import distinctive_names
from llama_index_sac.retrievers.locator import DocumentLocator

REPO = Path(__file__).resolve().parents[1]
MAX_DOCUMENTS = (1, 2, 3, 4)
MIN_SHARES = (0.25, 0.5, 0.75, 1.0)


def cell_scores(locator: DocumentLocator, queries: list, wordings: tuple[str, ...]) -> dict[tuple[str, str], float]:
    """(dataset, wording) -> the objective (module docstring)."""
    totals: dict[tuple[str, str], list[float]] = {}
    for query in queries:
        for wording in wordings:
            found = locator.locate(reword(query.query, wording)).documents
            value = 0.0 if not found else 1.0 if found[0] in query.gold_doc_ids else -1.0
            if wording == "none" and value > 0:
                value = 0.0  # naming its document in a question "of no document" is neither gained nor lost
            totals.setdefault((query.dataset, wording), []).append(value)
    return {key: sum(v) / len(v) for key, v in totals.items()}


def held_out(grid: dict[tuple[int, float], dict[tuple[str, str], float]], axis: int) -> dict[str, dict]:
    """For each value of ``axis`` (0: dataset, 1: wording): the grid point best on the others and its score there."""
    cells = next(iter(grid.values()))
    out = {}
    for held in sorted({key[axis] for key in cells}):
        def objective(point: tuple[int, float], inside: bool, held: str = held) -> float:
            values = [v for key, v in grid[point].items() if (key[axis] == held) == inside]
            return sum(values) / len(values)

        best = max(grid, key=lambda p: (objective(p, False), -p[0], p[1]))
        out[held] = {"chosen": {"max_documents": best[0], "min_share": best[1]},
                     "train": objective(best, False), "held_out": objective(best, True)}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    bench = load_legalbenchrag(args.data_dir, None, sampling="all", scope="referenced")
    names = {doc_id: dict(distinctive_names(text)) for doc_id, text in bench.documents.items()}
    published = json.loads((REPO / "docs/results/mini-default/results.json").read_text(encoding="utf-8"))
    summaries = next(c for c in published["configs"] if c["config"]["name"] == "default")["summaries"]
    grid = {}
    for max_documents, min_share in itertools.product(MAX_DOCUMENTS, MIN_SHARES):
        locator = DocumentLocator(names, summaries, max_documents=max_documents, min_share=min_share)
        grid[(max_documents, min_share)] = cell_scores(locator, bench.queries, WORDINGS)
    folds = {"dataset": held_out(grid, 0), "wording": held_out(grid, 1)}
    votes = Counter((f["chosen"]["max_documents"], f["chosen"]["min_share"])
                    for axis in folds.values() for f in axis.values())
    print("| held out | chosen max_documents / min_share | objective on the others | held out |\n|---|---|---:|---:|")
    for axis, by in folds.items():
        for held, fold in by.items():
            chosen = fold["chosen"]
            print(f"| {axis} {held} | {chosen['max_documents']} / {chosen['min_share']} | {fold['train']:.3f} | "
                  f"{fold['held_out']:.3f} |")
    choice = max(votes, key=lambda p: (votes[p], -p[0], p[1]))
    print(f"\nvotes: {dict(votes)}; the defaults: max_documents={choice[0]}, min_share={choice[1]}")
    if args.json:
        args.json.write_text(json.dumps({"folds": folds, "grid": {f"{k[0]}/{k[1]}": {f"{d}/{w}": v for (d, w), v in
                                                                                       cells.items()}
                                                                  for k, cells in grid.items()}}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
