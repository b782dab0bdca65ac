"""How often the document prior puts the query's own document strictly first (issue 15, ``docs/results.md`` 6a).

For every LegalBench-RAG-mini query: the prior of every document (``DocumentIndex.prior``) from the extractive
summaries (shipped term table) and the distinctive names of the documents' texts; a query counts when its gold
document has a positive prior strictly above every other document's. Rows: the first version (BM25 over the
summary, words read with their apostrophes) and ``name_weight`` 0, 0.5 and 1. No embedding, no retrieval.

    python bench/document_identification.py --data-dir ../shared/data/legalbenchrag --scope referenced
    python bench/document_identification.py --data-dir ../shared/data/legalbenchrag --scope all
"""

from __future__ import annotations

import argparse
import logging
import re
import statistics
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np

from llama_index_sac import DocumentIndex, ExtractiveSummarizer, distinctive_names, load_legalbenchrag
from llama_index_sac.summarizers.terms import stop_words

DATASETS = ["contractnli", "cuad", "maud", "privacy_qa"]
#: The first version's words: apostrophes kept inside words, so "Motorola's" is one word.
_FIRST_WORDS = re.compile(r"(?u)\b\w[\w\-']*\w\b|\b\w\b")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--scope", choices=["referenced", "all"], default="referenced")
    args = parser.parse_args()
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    bench = load_legalbenchrag(args.data_dir, DATASETS, scope=args.scope)
    ids = list(bench.documents)
    summarizer = ExtractiveSummarizer()
    summaries = {d: summarizer.summarize(text).summary for d, text in bench.documents.items()}
    names = {d: dict(distinctive_names(text)) for d, text in bench.documents.items()}

    def rate(prior: Callable[[str], np.ndarray]) -> dict[str, float]:
        hits: dict[str, list[bool]] = defaultdict(list)
        for query in bench.queries:
            scores = prior(query.query)
            gold = ids.index(next(iter(query.gold_doc_ids)))
            hits[query.dataset].append(bool(scores[gold] > 0 and int((scores >= scores[gold]).sum()) == 1))
        return {dataset: float(np.mean(v)) for dataset, v in sorted(hits.items())}

    import bm25s  # the bm25 extra

    stop = stop_words()

    def first_words(text: str) -> list[str]:
        return [w for w in _FIRST_WORDS.findall(text.lower()) if w not in stop]

    first = bm25s.BM25()
    first.index([first_words(summaries[d]) or ["\x00"] for d in ids], show_progress=False)
    rows = {"first version: summary BM25": rate(lambda q: np.asarray(first.get_scores(first_words(q)))
                                                if first_words(q) else np.zeros(len(ids)))}
    for weight in (0.0, 0.5, 1.0):
        rows[f"name_weight={weight}"] = rate(DocumentIndex(summaries, names, name_weight=weight).prior)
    print(f"{bench.description}: {len(ids)} documents, {len(bench.queries)} queries")
    print("| document prior | " + " | ".join(DATASETS) + " | mean |")
    print("|---|" + "---:|" * (len(DATASETS) + 1))
    for label, by_dataset in rows.items():
        cells = [f"{100 * by_dataset[d]:.1f}%" for d in DATASETS]
        print(f"| {label} | " + " | ".join(cells) + f" | {100 * statistics.fmean(by_dataset.values()):.1f}% |")


if __name__ == "__main__":
    main()
