"""Query latency of DocumentAwareRetriever against plain dense retrieval over the 244,615-chunk index of all 714
LegalBench-RAG documents (goal: at most 2x, median over the 776 mini queries, side by side in one run). Four
retrievers, interleaved query by query with their order rotating, so each addition's cost is read side by side:

- ``dense``: ``VectorStoreIndex.as_retriever``;
- ``aware``: the document prior alone, as it read the query before ``locator_only``/``word_parts`` (both off, no
  within-document ranking);
- ``previous``: the prior as before plus the within-document ranking (lexical score and clause order);
- ``ranked``: the package defaults (``DocumentIndex.from_nodes`` and ``DocumentAwareRetriever`` defaults), or the
  options given below.

The chunks are the real 500-character recursive chunks of the 714 documents with their real extractive summaries
(term table built from the 714 documents, as ``llama-sac eval`` does) and the queries are the real 776 mini queries;
the VECTORS are seeded random unit vectors (384 dimensions, float32): latency does not depend on their values, and
this keeps the benchmark to minutes instead of the two hours of embedding the corpus takes here. All retrievers run
over the same ``NumpyVectorStore`` (exact cosine).

By default the query vectors are given (random) and the question's embedding is a mock: the times are the search
alone. ``--embed`` makes every retriever embed its query with the default model (and the ranked ones their question
too): the times a user waits, embedding included.

    python bench/bench_document_retrieval.py --k 64 --json /tmp/bench_docret.json
    python bench/bench_document_retrieval.py --k 64 --embed --json /tmp/bench_docret_embed.json
    python bench/bench_document_retrieval.py --k 64 --lexical-weight 0.05 --prior-margin 0.5 --name-pairs

``--scope referenced`` keeps only the mini's documents (26,655 chunks), ``--max-chunks N`` the first N chunks (in
document order, the last document cut); ``--k`` and ``--wording`` take several values and ``--runs R`` repeats the
timed loop R times per (wording, k) over the same index, so one build serves every cell; ``--queries N`` times the
first N queries only. A ``wording`` other than ``template`` rewrites each query with
``llama_index_sac.apps.benchmark.wordings.reword``:

    python bench/bench_document_retrieval.py --scope referenced --k 8 64 --wording template trailing --runs 3

``--baseline DIR`` also times the package defaults of ANOTHER version of the library (its own ``NumpyVectorStore``
holding the same vectors), interleaved with the four above, and checks that both versions return the same hits:
``DIR`` holds that version's ``llama_index_sac`` renamed ``llama_index_sac_base`` (its imports too), e.g. for
commit ``C``::

    mkdir -p /tmp/base && git archive C llama_index_sac | tar -x -C /tmp/base
    mv /tmp/base/llama_index_sac /tmp/base/llama_index_sac_base
    grep -rl llama_index_sac /tmp/base | xargs sed -i 's/\\bllama_index_sac\\b/llama_index_sac_base/g'
    python bench/bench_document_retrieval.py --scope referenced --max-chunks 10000 --k 8 64 --baseline /tmp/base
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from llama_index.core import MockEmbedding, StorageContext, VectorStoreIndex
from llama_index.core.schema import QueryBundle

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_summaries import DATA  # noqa: E402

from llama_index_sac import (  # noqa: E402
    ExtractiveSummarizer,
    NumpyVectorStore,
    RecursiveCharacterNodeParser,
    SummaryAugmentationTransformation,
    load_legalbenchrag,
)
from llama_index_sac.apps.benchmark.environment import peak_memory_mb  # noqa: E402
from llama_index_sac.apps.benchmark.wordings import WORDINGS, reword  # noqa: E402
from llama_index_sac.constants import (  # noqa: E402
    DEFAULT_LEXICAL_WEIGHT,
    DEFAULT_LOCATOR_ONLY,
    DEFAULT_NAME_PAIRS,
    DEFAULT_PRIOR_MARGIN,
    DEFAULT_QUESTION_WEIGHT,
    DEFAULT_REQUIRE_NAME_MATCH,
    DEFAULT_WORD_PARTS,
)
from llama_index_sac.embeddings.default import default_embedding_model  # noqa: E402
from llama_index_sac.retrievers.document_aware import DocumentAwareRetriever  # noqa: E402
from llama_index_sac.retrievers.document_index import DocumentIndex  # noqa: E402

DATASETS = ["contractnli", "cuad", "maud", "privacy_qa"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--k", type=int, nargs="+", default=[64])
    parser.add_argument("--scope", choices=["all", "referenced"], default="all")
    parser.add_argument("--max-chunks", type=int, help="keep only the first N chunks")
    parser.add_argument("--wording", nargs="+", choices=WORDINGS, default=["template"])
    parser.add_argument("--runs", type=int, default=1, help="timed passes per (wording, k)")
    parser.add_argument("--queries", type=int, help="time the first N queries only")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--lexical-weight", type=float, default=DEFAULT_LEXICAL_WEIGHT)
    parser.add_argument("--question-weight", type=float, default=DEFAULT_QUESTION_WEIGHT)
    parser.add_argument("--embed", action="store_true", help="embed each query (and question) with the default model")
    parser.add_argument("--prior-margin", type=float, default=DEFAULT_PRIOR_MARGIN)
    parser.add_argument("--require-name-match", action=argparse.BooleanOptionalAction,
                        default=DEFAULT_REQUIRE_NAME_MATCH)
    parser.add_argument("--name-pairs", action=argparse.BooleanOptionalAction, default=DEFAULT_NAME_PAIRS)
    parser.add_argument("--locator-only", action=argparse.BooleanOptionalAction, default=DEFAULT_LOCATOR_ONLY)
    parser.add_argument("--word-parts", action=argparse.BooleanOptionalAction, default=DEFAULT_WORD_PARTS)
    parser.add_argument("--baseline", type=Path,
                        help="a folder holding another version of the package as llama_index_sac_base: its defaults "
                             "are timed too (module docstring)")
    args = parser.parse_args()
    clock = time.perf_counter()
    bench = load_legalbenchrag(DATA, DATASETS, scope=args.scope)
    documents = bench.to_documents()
    nodes = RecursiveCharacterNodeParser(chunk_size=500)(documents)
    if args.max_chunks is not None:
        nodes = nodes[: args.max_chunks]
        kept = {node.ref_doc_id for node in nodes}
        documents = [document for document in documents if document.doc_id in kept]
    summarizer = ExtractiveSummarizer().fit(documents)
    SummaryAugmentationTransformation(summarizer=summarizer)(nodes, documents=documents)
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((len(nodes), args.dim), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for node, vector in zip(nodes, vectors):
        node.embedding = vector.tolist()
    store = NumpyVectorStore()
    index = VectorStoreIndex(nodes, storage_context=StorageContext.from_defaults(vector_store=store),
                             embed_model=MockEmbedding(embed_dim=args.dim))  # vectors are given: never called
    if args.embed:
        index._embed_model = default_embedding_model()  # the queries are embedded at retrieval
    index_clock = time.perf_counter()
    # the prior as it read the query before locator_only and word_parts: summaries + names of the 714 texts
    documents_index = DocumentIndex.from_nodes(nodes, name_pairs=False, locator_only=False, word_parts=False)
    document_index_s = time.perf_counter() - index_clock
    pairs_clock = time.perf_counter()
    ranked_index = DocumentIndex.from_nodes(nodes, name_pairs=args.name_pairs, prior_margin=args.prior_margin,
                                            require_name_match=args.require_name_match,
                                            locator_only=args.locator_only, word_parts=args.word_parts)
    ranked_index_s = time.perf_counter() - pairs_clock
    baseline = None
    if args.baseline is not None:  # the other version's defaults, its own DocumentIndex over the same nodes
        sys.path.insert(0, str(args.baseline.resolve()))
        base_retriever = importlib.import_module("llama_index_sac_base.retrievers.document_aware")
        base_index = importlib.import_module("llama_index_sac_base.retrievers.document_index")
        base_store = importlib.import_module("llama_index_sac_base.vector_stores.numpy_store").NumpyVectorStore()
        base_vectors = VectorStoreIndex(nodes, storage_context=StorageContext.from_defaults(vector_store=base_store),
                                        embed_model=index._embed_model)  # its own store: the same vectors
        baseline = (base_retriever.DocumentAwareRetriever, base_index.DocumentIndex.from_nodes(nodes), base_vectors)
    built = time.perf_counter() - clock
    rng_queries = rng.standard_normal((len(bench.queries), args.dim), dtype=np.float32)
    cells = []
    for wording in args.wording:
        texts = [reword(q.query, wording) for q in bench.queries][: args.queries]
        queries = list(zip(texts, rng_queries))
        for k in args.k:
            for run in range(args.runs):
                cell = time_retrievers(index, documents_index, ranked_index, queries, k, args, baseline)
                cell.update({"wording": wording, "k": k, "run": run + 1})
                shown = ["wording", "k", "run", "dense_median_ms", "ranked_median_ms", "ranked_ratio_of_medians"]
                if baseline is not None:
                    shown += ["baseline_median_ms", "baseline_ratio_of_medians", "ranked_over_baseline",
                              "baseline_differs"]
                print(json.dumps({key: cell[key] for key in shown}), flush=True)
                cells.append(cell)
    summary = {}
    for wording in args.wording:
        for k in args.k:
            chosen = [c for c in cells if c["wording"] == wording and c["k"] == k]
            ratios = [c["ranked_ratio_of_medians"] for c in chosen]
            summary[f"{wording}/k={k}"] = {"ranked_ratio_of_medians": ratios,
                                           "median": statistics.median(ratios)}
            if baseline is not None:
                base_ratios = [c["baseline_ratio_of_medians"] for c in chosen]
                summary[f"{wording}/k={k}"].update({
                    "baseline_ratio_of_medians": base_ratios, "baseline_median": statistics.median(base_ratios),
                    "baseline_differs": sum(c["baseline_differs"] for c in chosen)})
    out = {
        "chunks": len(nodes), "documents": len(documents), "queries": len(queries), "scope": args.scope,
        "max_chunks": args.max_chunks, "build_s": built, "document_index_s": document_index_s,
        "embedded": args.embed, "baseline": None if args.baseline is None else str(args.baseline),
        "summary": summary, "cells": cells,
        "ranked_options": {"lexical_weight": args.lexical_weight, "question_weight": args.question_weight,
                           "prior_margin": args.prior_margin,
                           "require_name_match": args.require_name_match, "name_pairs": args.name_pairs,
                           "locator_only": args.locator_only, "word_parts": args.word_parts},
        "ranked_document_index_s": ranked_index_s,
        "peak_memory_mb": peak_memory_mb(),
    }
    print(json.dumps(out, indent=2))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


def time_retrievers(index, documents_index, ranked_index, queries, k: int, args: argparse.Namespace,
                    baseline=None) -> dict:
    """One timed pass: the four retrievers (five with ``baseline``: the other version's retriever class, its
    DocumentIndex and an index over its own NumpyVectorStore) interleaved query by query over ``queries`` ((text,
    vector) pairs). ``baseline_differs``: the queries whose hits (node ids and scores) differ between ``ranked`` and
    ``baseline``."""
    dense = index.as_retriever(similarity_top_k=k)
    aware = DocumentAwareRetriever(index, documents_index, similarity_top_k=k, lexical_weight=0.0,
                                   question_weight=0.0)
    previous = DocumentAwareRetriever(index, documents_index, similarity_top_k=k,
                                      lexical_weight=args.lexical_weight, question_weight=args.question_weight)
    ranked = DocumentAwareRetriever(index, ranked_index, similarity_top_k=k, lexical_weight=args.lexical_weight,
                                    question_weight=args.question_weight)
    dense.retrieve(QueryBundle(queries[0][0], embedding=queries[0][1].tolist()))  # the matrix is built once
    if baseline is not None:
        baseline[2].as_retriever(similarity_top_k=1).retrieve(QueryBundle(queries[0][0],
                                                                          embedding=queries[0][1].tolist()))
    base = None if baseline is None else baseline[0](baseline[2], baseline[1], similarity_top_k=k,
                                                     lexical_weight=args.lexical_weight,
                                                     question_weight=args.question_weight)
    baseline_s: list[float] = []
    differs = 0
    plain_s: list[float] = []
    aware_s: list[float] = []
    previous_s: list[float] = []
    ranked_s: list[float] = []
    for i, (text, vector) in enumerate(queries):
        # interleaved; the order of the four rotates from query to query so no one always runs first
        runs = [(dense, plain_s), (aware, aware_s), (previous, previous_s), (ranked, ranked_s)]
        if base is not None:
            runs.append((base, baseline_s))
        answers = {}
        for retriever, times in runs[i % len(runs):] + runs[: i % len(runs)]:
            bundle = QueryBundle(text) if args.embed else QueryBundle(text, embedding=vector.tolist())
            t0 = time.perf_counter()
            found = retriever.retrieve(bundle)
            times.append(time.perf_counter() - t0)
            answers[id(times)] = [(hit.node.node_id, hit.score) for hit in found]
        if base is not None and answers[id(ranked_s)] != answers[id(baseline_s)]:
            differs += 1
    compared = {}
    if base is not None:
        compared = {
            "baseline_median_ms": 1000 * statistics.median(baseline_s),
            "baseline_ratio_of_medians": statistics.median(baseline_s) / statistics.median(plain_s),
            "ranked_over_baseline": statistics.median(ranked_s) / statistics.median(baseline_s),
            "baseline_p90_ms": 1000 * sorted(baseline_s)[int(0.9 * len(baseline_s))],
            "baseline_differs": differs,
        }
    return {
        **compared,
        "dense_median_ms": 1000 * statistics.median(plain_s),
        "aware_median_ms": 1000 * statistics.median(aware_s),
        "ratio_of_medians": statistics.median(aware_s) / statistics.median(plain_s),
        "previous_median_ms": 1000 * statistics.median(previous_s),
        "previous_ratio_of_medians": statistics.median(previous_s) / statistics.median(plain_s),
        "ranked_median_ms": 1000 * statistics.median(ranked_s),
        "ranked_ratio_of_medians": statistics.median(ranked_s) / statistics.median(plain_s),
        "ranked_over_aware": statistics.median(ranked_s) / statistics.median(aware_s),
        "ranked_over_previous": statistics.median(ranked_s) / statistics.median(previous_s),
        "dense_p90_ms": 1000 * sorted(plain_s)[int(0.9 * len(plain_s))],
        "aware_p90_ms": 1000 * sorted(aware_s)[int(0.9 * len(aware_s))],
        "previous_p90_ms": 1000 * sorted(previous_s)[int(0.9 * len(previous_s))],
        "ranked_p90_ms": 1000 * sorted(ranked_s)[int(0.9 * len(ranked_s))],
    }


if __name__ == "__main__":
    main()
