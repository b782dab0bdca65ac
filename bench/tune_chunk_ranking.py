"""Choose the within-document ranking options of DocumentAwareRetriever WITHOUT the test queries.

Grid: ``lexical_weight`` (the question's BM25 over the candidate chunks) x stemming (Snowball stems or the words as
they are) x ``question_weight`` (the question's own dense score in the order of a located document's chunks);
``lexical_scope`` "located", no hub fix, no two-word names (the choices of the previous grid, ``docs/results.md``
section 6i), every other option at the package default (``prior_weight``, ``focus_documents``, ``name_weight``,
``candidate_top_k``). ``--grid scope`` runs the previous grid instead (``lexical_weight`` x ``lexical_scope`` x the
prior's hub fix x ``name_pairs``, no stemming, question weight 0). Both read the whole query in the prior, without
word parts (as they ran). ``--grid prior`` crosses the clause grid with the document prior's ``locator_only`` x
``word_parts`` (112 points). ``--grid outside`` runs the package defaults with the share of the document prior kept
outside the documents the question names, ``outside_prior`` in 1, 0.75, 0.5, 0.25, 0 (1: the whole prior, as before
the option). Plain dense retrieval of the same embeddings is run beside it for reference.

Protocol (leave-one-dataset-out over LegalBench-RAG's four datasets, as ``bench/tune_document_retrieval.py``): every
grid point runs once on all queries; for each held-out dataset D the grid point with the best objective on the OTHER
three datasets is chosen and D is scored with it. The objective is the unweighted mean over
the three datasets of the mean over k of ``precision + recall - DRM``. The package defaults are the values chosen
most often across the four folds (ties: the point nearest the current ranking: smaller weight, fix off, pairs off,
no stemming, smaller question weight, the whole query, no word parts, the larger ``outside_prior``).

With ``--wordings`` (``llama_index_sac/apps/benchmark/wordings.py``) every query is scored in each wording, the
objective is the mean over the (dataset, wording) pairs, and the folds are leave-one-dataset-out (every wording of
the held-out dataset held out) and leave-one-wording-out (every dataset's queries in the held-out wording). Each fold
also reports the held-out mean over k of DRM, precision and recall, and precision@1.

    python bench/tune_chunk_ranking.py --data-dir ../shared/data/legalbenchrag --cache-dir /work/cache \
        --wordings template,trailing,merged,short,none --grid outside --json /tmp/ps/tune-outside.json

    python bench/tune_chunk_ranking.py --data-dir ../shared/data/legalbenchrag --base default --embed-graph plain \\
        --cache-dir /work/cache --json /tmp/rank/tune-clause-default.json
    python bench/tune_chunk_ranking.py --data-dir ../shared/data/legalbenchrag --base sac --cache-dir /work/cache
    python bench/tune_chunk_ranking.py --synthetic 24                  # the built-in contracts (2 datasets)

``--base default``: the ``default`` preset (file name folded into the summary); ``--base sac``: ``sac-doc``
(content-only summaries).

One pass of the ``llama-sac eval`` pipeline (its parser, summaries, augmentation and embedding cache) builds the
chunks and their vectors once; every grid point then queries the same ``NumpyVectorStore`` index through a
:class:`DocumentAwareRetriever` that remembers the store's answers (a dense query's hits depend on the query, k and
the document filter only) and the question's lexical score at weight 1 (it depends on the query, the candidates and
the located names only) and the question's embedding, so the grid costs one dense pass plus the priors and fusions.
The scores are those of the plain retriever (the same code ranks; only repeated store queries, lexical scores and
question embeddings are read from memory).
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from llama_index.core import VectorStoreIndex
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle

from llama_index_sac import NumpyVectorStore
from llama_index_sac.apps.benchmark import factories
from llama_index_sac.apps.benchmark.cache import EmbeddingCache
from llama_index_sac.apps.benchmark.config import LoaderOptions, RunSettings, parse_config
from llama_index_sac.apps.benchmark.runner import _augment, _EmbedTexts, _QueryVectors
from llama_index_sac.constants import (
    DEFAULT_LEXICAL_SCOPE,
    DEFAULT_LEXICAL_WEIGHT,
    DEFAULT_LOCATOR_ONLY,
    DEFAULT_NAME_PAIRS,
    DEFAULT_PRIOR_MARGIN,
    DEFAULT_QUESTION_WEIGHT,
    DEFAULT_REQUIRE_NAME_MATCH,
    DEFAULT_WORD_PARTS,
)
from llama_index_sac.evaluation.evaluator import RetrievalQualityEvaluator
from llama_index_sac.retrievers._llamaindex import DenseSearch, embed_model_of
from llama_index_sac.retrievers.document_aware import DocumentAwareRetriever
from llama_index_sac.retrievers.document_index import DocumentIndex
from llama_index_sac.retrievers.ranking import lexical_units, rank

LEXICAL_WEIGHTS = (0.0, 0.02, 0.05, 0.1, 0.2)
CLAUSE_LEXICAL_WEIGHTS = (0.0, 0.05, 0.1, 0.2)
QUESTION_WEIGHTS = (0.0, 0.25, 0.5, 0.75)
STEMMING = (False, True)
#: ``outside_prior`` of ``--grid outside``, today's value (1) first.
OUTSIDE_PRIORS = (1.0, 0.75, 0.5, 0.25, 0.0)
#: (prior_margin, require_name_match): off, a margin, a name match, both.
# require_name_match=True was in the first grid (section 6i); no fold chose it, and the second grid leaves it out
HUB_FIXES = ((0.0, False), (0.5, False))
LEXICAL_SCOPES = ("candidates", "located")
NAME_PAIRS = (False, True)
BASES = {"default": "default", "sac": "sac-doc"}
METRICS = ("drm", "precision", "recall")
OPTIONS = ("lexical_weight", "lexical_scope", "prior_margin", "require_name_match", "name_pairs", "stem",
           "question_weight", "locator_only", "word_parts", "outside_prior")
GRIDS = ("clause", "scope", "prior", "outside")

Point = tuple[float, str, float, bool, bool, bool, float, bool, bool, float]  # the values of OPTIONS


def point_name(point: Point) -> str:
    lexical, scope, margin, match, pairs, stem, question, locator, parts, outside = point
    return (f"l{lexical}-{scope[0]}-m{margin}-r{int(match)}-p{int(pairs)}-s{int(stem)}-q{question}"
            f"-o{int(locator)}-w{int(parts)}" + ("" if outside == 1.0 else f"-x{outside}"))


def grid_points(grid: str) -> list[Point]:
    """The grid's points: ``"clause"`` (the default), ``"scope"`` (the previous grid), ``"prior"`` or
    ``"outside"`` (module docstring)."""
    if grid == "outside":
        return [(DEFAULT_LEXICAL_WEIGHT, DEFAULT_LEXICAL_SCOPE, DEFAULT_PRIOR_MARGIN, DEFAULT_REQUIRE_NAME_MATCH,
                 DEFAULT_NAME_PAIRS, True, DEFAULT_QUESTION_WEIGHT, DEFAULT_LOCATOR_ONLY, DEFAULT_WORD_PARTS, outside)
                for outside in OUTSIDE_PRIORS]
    if grid == "prior":
        return [(*point[:7], locator, parts, 1.0) for locator, parts in itertools.product((False, True), (False, True))
                for point in grid_points("clause")]
    if grid == "scope":
        return [(lexical, scope, margin, match, pairs, False, 0.0, False, False, 1.0)
                for (margin, match), pairs in itertools.product(HUB_FIXES, NAME_PAIRS)
                for lexical, scope in itertools.product(LEXICAL_WEIGHTS, LEXICAL_SCOPES)
                if lexical > 0 or scope == LEXICAL_SCOPES[0]]  # no lexical score: the scope changes nothing
    return [(lexical, "located", 0.0, False, False, stem, question, False, False, 1.0)
            for lexical, stem, question in itertools.product(CLAUSE_LEXICAL_WEIGHTS, STEMMING, QUESTION_WEIGHTS)
            if lexical > 0 or not stem]  # no lexical score: stemming changes nothing


class _Remembered:
    """A store query whose hits are remembered per (query, k, documents)."""

    def __init__(self, retriever: DenseSearch, key: tuple[Any, ...], memory: dict[Any, list[NodeWithScore]]) -> None:
        self.retriever, self.key, self.memory = retriever, key, memory

    def retrieve(self, bundle: QueryBundle) -> list[NodeWithScore]:
        key = (bundle.query_str, *self.key)
        if key not in self.memory:
            self.memory[key] = list(self.retriever.retrieve(bundle))
        return self.memory[key]

    async def aretrieve(self, bundle: QueryBundle) -> list[NodeWithScore]:
        key = (bundle.query_str, *self.key)
        if key not in self.memory:
            self.memory[key] = list(await self.retriever.aretrieve(bundle))
        return self.memory[key]


class RememberingRetriever(DocumentAwareRetriever):
    """:class:`DocumentAwareRetriever` whose store answers, unit lexical scores and question embeddings come from
    shared memories; ``stem``: the lexical score's stemming."""

    dense_memory: dict[Any, list[NodeWithScore]] = {}
    lexical_memory: dict[Any, dict[str, float]] = {}
    question_memory: dict[str, list[float]] = {}

    def __init__(self, *args: Any, stem: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stem = stem

    def _dense(self, top_k: int, doc_ids: list[str] | None = None) -> Any:
        key = (top_k, tuple(doc_ids or ()))
        return _Remembered(super()._dense(top_k, doc_ids), key, self.dense_memory)

    def _question(self, query_bundle: QueryBundle, prior: dict[str, float]) -> QueryBundle | None:
        question = super()._question(query_bundle, prior)
        if question is not None:
            assert self.index is not None
            if question.query_str not in self.question_memory:
                self.question_memory[question.query_str] = embed_model_of(self.index).get_query_embedding(
                    question.query_str)
            question.embedding = self.question_memory[question.query_str]
        return question

    def _units(self, hits: Sequence[NodeWithScore], query: str, names: frozenset[str],
               scope: Collection[str] | None) -> dict[str, float]:
        key = (query, tuple(h.node.node_id for h in hits), names, tuple(scope or ()), self.stem)
        if key not in self.lexical_memory:
            self.lexical_memory[key] = lexical_units(hits, query, names, scope, stem=self.stem)
        return self.lexical_memory[key]

    def _rank(self, hits: list[NodeWithScore], prior: dict[str, float], query: str,
              question_hits: list[NodeWithScore] | None = None,
              whole: dict[str, float] | None = None) -> list[NodeWithScore]:
        return rank(hits, query, prior, self.document_index, self.options, self.similarity_top_k,
                    question_hits or (), units=self._units, whole_prior=whole)


def summary(aggregates: Mapping[str, Any], dataset: str) -> dict[str, float]:
    """Mean over k of DRM, precision and recall, and precision and recall at the smallest k (fractions)."""
    per_k = aggregates["datasets"][dataset]
    out = {m: statistics.fmean(per_k[k][m] or 0.0 for k in per_k) for m in METRICS}
    first = per_k[min(per_k)]
    out["precision@1"] = first["precision"] or 0.0
    out["recall@1"] = first["recall"] or 0.0
    return out


def objective(table: Mapping[str, Mapping[str, float]], datasets: list[str]) -> float:
    """Mean over ``datasets`` of the mean over k of precision + recall - DRM."""
    return statistics.fmean(table[d]["precision"] + table[d]["recall"] - table[d]["drm"] for d in datasets)


def pooled(table: Mapping[str, Mapping[str, float]], datasets: list[str]) -> dict[str, float]:
    """Each metric's mean over ``datasets``, and their objective."""
    out = {m: statistics.fmean(table[d][m] for d in datasets) for m in table[datasets[0]]}
    out["objective"] = objective(table, datasets)
    return out


def fold_sets(keys: list[str]) -> dict[str, list[str]]:
    """fold name -> the held-out keys: each dataset (``dataset DATASET``) and, when the keys are
    ``DATASET/WORDING``, each wording (``wording WORDING``)."""
    parts = [key.split("/", 1) for key in keys]
    folds = {f"dataset {d}": [k for k, p in zip(keys, parts) if p[0] == d] for d in dict.fromkeys(p[0] for p in parts)}
    if all(len(p) == 2 for p in parts):
        folds.update({f"wording {w}": [k for k, p in zip(keys, parts) if p[1] == w]
                      for w in dict.fromkeys(p[1] for p in parts)})
    return folds


def prepare(args: argparse.Namespace) -> tuple[Any, Any, RunSettings, list[Any], VectorStoreIndex, _QueryVectors]:
    """One pass of the ``llama-sac eval`` pipeline: the benchmark (``--datasets``, ``--wordings``), the base
    configuration, the settings, the chunks, a ``VectorStoreIndex`` over their cached vectors and the query vectors."""
    wordings = args.wordings.split(",") if args.wordings else None
    datasets = args.datasets.split(",") if args.datasets else None
    options = (LoaderOptions(source="legalbenchrag", data_dir=str(args.data_dir), datasets=datasets,
                             wordings=wordings) if args.data_dir is not None
               else LoaderOptions(source="synthetic", n_documents=args.synthetic, wordings=wordings))
    benchmark, options = factories.load_benchmark(options)
    settings = RunSettings(show_progress=False, embed_graph=args.embed_graph, **(
        {} if args.cache_dir is None else {"cache_dir": args.cache_dir}))
    config = parse_config(BASES[args.base])
    clock = time.perf_counter()
    model = factories.load_embedding_model(settings.embed_model, settings.embed_options())
    identity = factories.model_identity(model)
    cache = EmbeddingCache(settings.cache_dir)
    try:
        query_matrix = cache.embed_array([q.query for q in benchmark.queries], identity, "query",
                                         factories.query_embedder(model), show_progress=False)
        query_vectors = _QueryVectors([q.query_id for q in benchmark.queries], query_matrix)
        documents = benchmark.to_documents(embed_metadata_keys=config.augmentation.embed_metadata)
        nodes = factories.build_parser(config.parser, model).get_nodes_from_documents(documents)
        _augment(config, nodes, documents, benchmark.doc_datasets, settings, print, model)
        before = cache.misses
        vectors = cache.embed_array(_EmbedTexts(nodes), identity, "text", model.get_text_embedding_batch,
                                    show_progress=False)
        print(f"{len(nodes)} chunks, {cache.misses - before} embedded, the rest from the cache "
              f"({time.perf_counter() - clock:.1f} s)")
    finally:
        cache.close()
    store = NumpyVectorStore()
    store.add_matrix(nodes, vectors, copy=False)
    index = VectorStoreIndex.from_vector_store(store, embed_model=model)
    return benchmark, config, settings, nodes, index, query_vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--synthetic", type=int, help="use the built-in contracts with this many documents")
    parser.add_argument("--base", choices=sorted(BASES), default="default")
    parser.add_argument("--cache-dir", type=Path, help="the embedding cache (default: the runner's)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--datasets", help="LegalBench-RAG datasets, comma-separated (default: all four)")
    parser.add_argument("--wordings", help="score each query in these wordings, comma-separated "
                        "(apps/benchmark/wordings.py; default: as written)")
    parser.add_argument("--grid", choices=GRIDS, default="clause")
    parser.add_argument("--embed-graph", choices=("plain", "fused"), default="fused",
                        help="the ONNX graph of the default model (plain: the vectors of the published runs)")
    args = parser.parse_args()
    if (args.data_dir is None) == (args.synthetic is None):
        sys.exit("error: give --data-dir or --synthetic N")
    benchmark, config, settings, nodes, index, query_vectors = prepare(args)
    top_k = max(settings.ks)

    def evaluate(retriever: BaseRetriever) -> dict[str, dict[str, float]]:
        evaluator = RetrievalQualityEvaluator(retriever=retriever, ks=settings.ks, workers=2)
        result = evaluator.evaluate_dataset(benchmark.queries, query_vectors)
        return {d: summary(result.aggregates, d) for d in result.aggregates["datasets"]}

    dr = config.document_retrieval
    table: dict[str, dict[str, dict[str, float]]] = {"dense": evaluate(index.as_retriever(similarity_top_k=top_k))}
    grid = grid_points(args.grid)
    indexes: dict[tuple[float, bool, bool, bool, bool, float], DocumentIndex] = {}
    for point in grid:
        lexical, scope, margin, match, pairs, stem, question, locator, parts, outside = point
        key = (margin, match, pairs, locator, parts, outside)
        if key not in indexes:
            indexes[key] = DocumentIndex.from_nodes(
                nodes, name_weight=dr.name_weight, max_document_frequency=dr.max_document_frequency, name_pairs=pairs,
                prior_margin=margin, require_name_match=match, locator_only=locator, word_parts=parts,
                outside_prior=outside)
        clock = time.perf_counter()
        table[point_name(point)] = evaluate(RememberingRetriever(
            index, indexes[key], similarity_top_k=top_k,
            candidate_top_k=dr.candidate_top_k, prior_weight=dr.prior_weight, focus_documents=dr.focus_documents,
            lexical_weight=lexical, lexical_scope=scope, question_weight=question, stem=stem))
        print(f"{point_name(point)}: objective {objective(table[point_name(point)], list(table['dense'])):.4f} "
              f"({time.perf_counter() - clock:.1f} s)", flush=True)
    before_name = point_name(grid[0])  # the ranking before these options
    datasets = list(table["dense"])
    folds: dict[str, Any] = {}
    for fold, held in fold_sets(datasets).items():
        train = [d for d in datasets if d not in held]
        best = max(grid, key=lambda p: (objective(table[point_name(p)], train), -p[0], p[1] == "located", -p[2],
                                        -p[3], -p[4], -p[5], -p[6], -p[7], -p[8], p[9]))
        folds[fold] = {
            "chosen": dict(zip(OPTIONS, best)),
            "train_objective": objective(table[point_name(best)], train),
            "held_out": pooled(table[point_name(best)], held),
            "held_out_before": pooled(table[before_name], held),
            "held_out_dense": pooled(table["dense"], held)}
        kept, was = folds[fold]["held_out"], folds[fold]["held_out_before"]
        print(f"{fold}: chosen {point_name(best)}, objective {folds[fold]['train_objective']:.4f} on the others, "
              f"held out {kept['objective']:.4f} (before {was['objective']:.4f}), "
              f"P@1 {kept['precision@1']:.4f} (before {was['precision@1']:.4f})", flush=True)
    votes = Counter(tuple(f["chosen"].values()) for f in folds.values())
    default = sorted(votes.items(), key=lambda item: (-item[1], item[0]))[0][0]
    first = next(iter(folds.values()))
    mean = {key: {m: statistics.fmean(f[key][m] for f in folds.values()) for m in first[key]}
            for key in ("held_out", "held_out_before", "held_out_dense")}
    report = {"base": args.base, "grid_kind": args.grid, "benchmark": benchmark.description, "chunks": len(nodes),
              "grid": grid,
              "folds": folds, "mean_of_folds": mean,
              "default": dict(zip(OPTIONS, default)),
              "per_point": table}
    print(json.dumps({k: report[k] for k in ("base", "folds", "mean_of_folds", "default")}, indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
