"""Extractive summaries per second on all 714 LegalBench-RAG documents: the batch-fitted TF-IDF of version 0.1
(``git show REV:llama_index_sac/summarizers/extractive.py``) against the term-statistics table of issue 12, side by
side in one process, interleaved, median of ``--runs`` rounds; and a check that both write the same summaries when
the table is built from the same documents (the published runs' setting).

    python bench/bench_extractive_terms.py --runs 3 --old-rev 4d48800

Rows: ``old fit + summarize`` (0.1: fit on the corpus, then summarize), ``new from_texts + summarize`` (the
corpus table, what the benchmark runner uses), ``new shipped table`` (``ExtractiveSummarizer()``: no fit at all).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_summaries import load_corpus  # noqa: E402

from llama_index_sac import ExtractiveSummarizer  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def old_class(rev: str) -> type:
    source = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:llama_index_sac/summarizers/extractive.py"],
                            check=True, capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "extractive_old.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("extractive_old", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ExtractiveSummarizer


def timed(make, docs: list[str]) -> tuple[float, list[str]]:
    t0 = time.perf_counter()
    summarizer = make()
    out = [summarizer.summarize(d).summary for d in docs]
    return time.perf_counter() - t0, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--old-rev", default="4d48800")
    args = parser.parse_args()
    docs = list(load_corpus().values())
    old = old_class(args.old_rev)
    rows = {
        "old fit + summarize": lambda: old(max_chars=150).fit(docs),
        "new from_texts + summarize": lambda: ExtractiveSummarizer(max_chars=150).fit(docs),
        "new shipped table": lambda: ExtractiveSummarizer(max_chars=150),
    }
    times: dict[str, list[float]] = {name: [] for name in rows}
    outputs: dict[str, list[str]] = {}
    for _ in range(args.runs):
        for name, make in rows.items():
            seconds, outputs[name] = timed(make, docs)
            times[name].append(seconds)
    same = sum(a == b for a, b in zip(outputs["old fit + summarize"], outputs["new from_texts + summarize"]))
    print(f"{len(docs)} documents, {sum(map(len, docs)):,} characters, {args.runs} interleaved runs")
    print("| summarizer | median s | documents/s (median) | per run |\n|---|---:|---:|---|")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.2f} | {len(docs) / median:.0f} | {', '.join(f'{v:.2f}' for v in values)} |")
    print(f"identical summaries, old fit vs new corpus table: {same} of {len(docs)}")
    shipped = sum(a == b for a, b in zip(outputs["old fit + summarize"], outputs["new shipped table"]))
    print(f"identical summaries, old fit vs shipped table: {shipped} of {len(docs)}")


if __name__ == "__main__":
    main()
