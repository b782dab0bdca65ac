"""Benchmark (issue 37): what the recursive parser's chunk boundaries cost, against LangChain's splitter.

On the documents LegalBench-RAG-mini refers to (the corpus ``llama-sac eval --scope referenced`` indexes), at 500
characters and no overlap, counts per dataset and overall:

* ours, hierarchy ``sentences`` (the default: ``"\\n\\n", "\\n", ". ", " ", ""``) and ``words`` (without ``". "``:
  LangChain's hierarchy), both through ``RecursiveCharacterNodeParser`` (exact offsets, lossless);
* LangChain ``RecursiveCharacterTextSplitter`` as shipped (``strip_whitespace=True``) and with
  ``strip_whitespace=False`` (what whitespace kept in chunks changes).

Reported: chunks, mean chunk length (characters), the share of chunks that end at a sentence end (last non-space
character one of ``. ; : ! ?``, closing quotes or brackets allowed), the share with trailing whitespace, and the
default embedding model's tokens (WordPiece: whitespace is not a token, so trailing whitespace costs none). With
``--embed-docs N``, the chunk texts of ``N`` documents (every ``len/N``-th by name) are embedded by the default
model for ``sentences`` and ``words``, ``--rounds`` times in alternating order; the median seconds and their ratio
are reported (the summary SAC prepends to each chunk is not included: it adds the same text to every chunk, so its
cost grows with the count).

With ``--compare QUERIES_CSV BASE OTHER`` (the ``queries.csv`` of a ``llama-sac eval`` run with both
configurations), it prints instead, per dataset, the mean over k of DRM / precision / recall and precision@1 of each,
and the paired difference ``OTHER - BASE`` with a 95% bootstrap interval over the queries (5,000 resamples, seed 0):
the noise a difference must clear.

Needs ``langchain-text-splitters`` (bench only, not a dependency of the package) and the shared data::

    python bench/bench_chunk_boundaries.py
    python bench/bench_chunk_boundaries.py --embed-docs 6 --rounds 3
    python bench/bench_chunk_boundaries.py --compare /tmp/chunks/all4/queries.csv default default-words
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from llama_index.core import Document

from llama_index_sac.apps.benchmark.datasets.legalbenchrag import load_legalbenchrag
from llama_index_sac.constants import SeparatorHierarchy
from llama_index_sac.node_parser.recursive import SEPARATOR_HIERARCHIES, RecursiveCharacterNodeParser

DATA = Path(os.environ.get("SAC_SHARED_DIR", Path(__file__).resolve().parents[2] / "shared")) / "data/legalbenchrag"
DATASETS = ["contractnli", "cuad", "maud", "privacy_qa"]
SIZE = 500
SENTENCE_END = re.compile(r"[.;:!?][\"'”’)\]]*\s*$")


def ours(name: SeparatorHierarchy) -> Callable[[str], list[str]]:
    parser = RecursiveCharacterNodeParser(chunk_size=SIZE, chunk_overlap=0, separators=SEPARATOR_HIERARCHIES[name])

    def split(text: str) -> list[str]:
        nodes = parser.get_nodes_from_documents([Document(text=text, id_="d")])
        out = []
        for node in nodes:  # exact offsets, checked on the way
            start, end = node.start_char_idx, node.end_char_idx  # type: ignore[attr-defined]
            assert node.get_content() == text[start:end]
            out.append(text[start:end])
        return out

    return split


def langchain(strip: bool) -> Callable[[str], list[str]]:
    try:
        from langchain_text_splitters import RecursiveCharacterTextSplitter
    except ImportError:
        sys.exit("pip install langchain-text-splitters (bench only)")
    splitter = RecursiveCharacterTextSplitter(chunk_size=SIZE, chunk_overlap=0, strip_whitespace=strip)
    return splitter.split_text


def row(label: str, chunks: Sequence[str], tokens: Callable[[str], int] | None) -> str:
    n = len(chunks)
    mean = sum(map(len, chunks)) / n
    sentence = sum(1 for c in chunks if SENTENCE_END.search(c)) / n
    trailing = sum(1 for c in chunks if c != c.rstrip()) / n
    tok = f"{sum(map(tokens, chunks)):,}" if tokens is not None else "-"
    return f"| {label} | {n:,} | {mean:.1f} | {100 * sentence:.1f}% | {100 * trailing:.1f}% | {tok} |"


def compare(path: Path, base: str, other: str) -> None:
    """Per dataset: mean over k of each metric for ``base`` and ``other``, and the paired difference's 95% interval."""
    import csv
    from collections import defaultdict

    import numpy as np

    # (config, dataset, query) -> metric -> values over k (an undefined DRM, empty, is left out)
    values: dict[tuple[str, str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    with path.open(newline="") as fh:
        for rec in csv.DictReader(fh):
            cell = values[(rec["config"], rec["dataset"], rec["query_id"])]
            for metric in ("drm", "precision", "recall"):
                if rec[metric] != "":
                    cell[metric].append(float(rec[metric]))
            if rec["k"] == "1":
                cell["p@1"].append(float(rec["precision"]))
    rng = np.random.default_rng(0)
    print("| dataset | metric | " + base + " | " + other + " | difference [95% interval] |")
    print("|---|---|---:|---:|---|")
    for ds in sorted({key[1] for key in values}):
        queries = sorted({key[2] for key in values if key[1] == ds and key[0] == base})
        for metric in ("drm", "precision", "recall", "p@1"):
            pairs = [(statistics.fmean(values[(base, ds, q)][metric]), statistics.fmean(values[(other, ds, q)][metric]))
                     for q in queries if values[(base, ds, q)][metric] and values[(other, ds, q)][metric]]
            a, b = np.array(pairs).T
            diff = b - a
            boot = diff[rng.integers(0, len(diff), size=(5000, len(diff)))].mean(axis=1)
            lo, hi = np.percentile(boot, [2.5, 97.5])
            print(f"| {ds} | {metric} | {100 * a.mean():.2f} | {100 * b.mean():.2f} | {100 * diff.mean():+.2f} "
                  f"[{100 * lo:+.2f}, {100 * hi:+.2f}] |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=DATA)
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--no-tokens", action="store_true", help="skip the token counts (no model loaded)")
    ap.add_argument("--embed-docs", type=int, default=0, help="embed the chunks of this many documents (0: none)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--compare", nargs=3, metavar=("QUERIES_CSV", "BASE", "OTHER"))
    args = ap.parse_args()
    if args.compare:
        compare(Path(args.compare[0]), args.compare[1], args.compare[2])
        return
    datasets = args.datasets.split(",")
    bench = load_legalbenchrag(args.data_dir, datasets, scope="referenced")
    docs = dict(sorted(bench.documents.items()))
    model = None
    tokens = None
    if not args.no_tokens or args.embed_docs:
        from llama_index_sac.embeddings import default_embedding_model

        model = default_embedding_model()
        tokens = model.token_counter()  # type: ignore[attr-defined]
    contenders: dict[str, Callable[[str], list[str]]] = {
        "ours, sentences (default)": ours("sentences"),
        "ours, words": ours("words"),
        "LangChain": langchain(True),
        "LangChain, strip_whitespace=False": langchain(False),
    }
    chunks = {label: {doc_id: split(text) for doc_id, text in docs.items()} for label, split in contenders.items()}
    print(f"{len(docs)} documents, {sum(map(len, docs.values())):,} characters, chunk_size {SIZE}, no overlap\n")
    for ds in [*datasets, "all"]:
        ids = [d for d in docs if ds == "all" or bench.doc_datasets[d] == ds]
        chars = sum(len(docs[d]) for d in ids)
        print(f"{ds}: {len(ids)} documents, {chars:,} characters\n")
        print("| splitter | chunks | mean length | ends at a sentence end | trailing whitespace | tokens |")
        print("|---|---:|---:|---:|---:|---:|")
        for label in contenders:
            print(row(label, [c for d in ids for c in chunks[label][d]], tokens))
        print()
    if args.embed_docs and model is not None:
        ids = list(docs)[:: max(1, len(docs) // args.embed_docs)][: args.embed_docs]  # spread over the datasets
        texts = {name: [c for d in ids for c in chunks[label][d]]
                 for name, label in (("sentences", "ours, sentences (default)"), ("words", "ours, words"))}
        model.get_text_embedding_batch(texts["words"][:32])  # warm-up
        times: dict[str, list[float]] = {name: [] for name in texts}
        for r in range(args.rounds):
            for name in (list(texts) if r % 2 == 0 else list(reversed(texts))):
                t0 = time.perf_counter()
                model.get_text_embedding_batch(texts[name])
                times[name].append(time.perf_counter() - t0)
        med = {name: statistics.median(t) for name, t in times.items()}
        print(f"embedding the chunks of {len(ids)} documents ({args.rounds} rounds, alternating):")
        for name, t in times.items():
            print(f"  {name}: {len(texts[name]):,} chunks, median {med[name]:.1f} s "
                  f"({', '.join(f'{x:.1f}' for x in t)})")
        print(f"  sentences / words: {med['sentences'] / med['words']:.3f}")


if __name__ == "__main__":
    main()
