"""The main job: ingest a corpus under several configurations, retrieve for every query, score.

For each :class:`~llama_index_sac.apps.benchmark.config.RunConfig` (side by side, one shared embedding model and cache):

1. documents -> LlamaIndex ``Document`` objects whose ``id_`` is the corpus file path (so every chunk's
   ``ref_doc_id`` names its file and DRM is attributed by file path), with ``augmentation.embed_metadata`` visible
   to the embedding;
2. the node parser (``recursive`` / ``semantic`` / ``hybrid``, exact offsets);
3. optional Summary-Augmented Chunking: :class:`~llama_index_sac.SummaryAugmentationTransformation`
   with an extractive or LLM summarizer (summaries cached on disk by ``summarizers.cache.SummaryCache``);
4. the text each node is embedded with (``node.get_content(MetadataMode.EMBED)``) is embedded through the on-disk
   :class:`~.cache.EmbeddingCache` into one float32 matrix, and the nodes go with that matrix
   into a ``NumpyVectorStore`` (exact cosine top-k) under a real ``VectorStoreIndex``
   (``VectorStoreIndex.from_vector_store``);
5. retrieval: dense top-``max(ks)``, hybrid dense + BM25 fused by reciprocal rank, or document-aware;
6. :class:`~llama_index_sac.evaluation.RetrievalQualityEvaluator` scores every ``k`` from the single ranking;
   query embeddings are precomputed in a batch (and cached) and handed over in the ``QueryBundle``.

Memory (it streams, one configuration at a time): no node ever holds its vector as a Python list (``node.embedding``
stays ``None``; about 12 KiB per 384-dimension node saved), the texts to embed are computed from the nodes on demand
(no list of them), the store keeps the nodes themselves (no copy), and each configuration's nodes, matrix and index
are dropped once its records (plain dicts) are computed, before the next configuration is parsed. A run thus holds
one configuration's nodes and one ``n_chunks x dim`` float32 matrix at a time, besides the model and the corpus.
The ranking and scores are those of a retriever over nodes that carry their vectors as lists, bit for bit (the
same float32 vectors in the same rows).

The parts are built by :mod:`llama_index_sac.apps.benchmark.factories`; :func:`run_evaluation` returns
:class:`~llama_index_sac.apps.benchmark.results.RunResults`.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, overload

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import BaseNode, Document, MetadataMode, TextNode

from llama_index_sac.apps.benchmark import factories
from llama_index_sac.apps.benchmark.cache import CachedEmbedding, EmbeddingCache
from llama_index_sac.apps.benchmark.config import EvaluationSetupError, LoaderOptions, RunConfig, RunSettings
from llama_index_sac.apps.benchmark.datasets.base import RetrievalBenchmark
from llama_index_sac.apps.benchmark.environment import peak_memory_mb, versions
from llama_index_sac.apps.benchmark.results import (
    BenchmarkInfo,
    ConfigResult,
    RecordedSettings,
    RunResults,
    RunTimings,
    SummaryInfo,
)
from llama_index_sac.evaluation.confusion import confused_pairs
from llama_index_sac.evaluation.evaluator import RetrievalQualityEvaluator

__all__ = ["benchmark_info", "run_evaluation"]

logger = logging.getLogger(__name__)


class _EmbedTexts(Sequence[str]):
    """The text each node is embedded with (``get_content(MetadataMode.EMBED)``), computed on access: no list of
    every text is held (the cache reads each once for its key, and again only the texts it must compute)."""

    def __init__(self, nodes: Sequence[BaseNode]) -> None:
        self._nodes = nodes

    def __len__(self) -> int:
        return len(self._nodes)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...

    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        if isinstance(index, slice):
            return [node.get_content(metadata_mode=MetadataMode.EMBED) for node in self._nodes[index]]
        return self._nodes[index].get_content(metadata_mode=MetadataMode.EMBED)

    def __iter__(self) -> Iterator[str]:
        for node in self._nodes:
            yield node.get_content(metadata_mode=MetadataMode.EMBED)


class _QueryVectors(Mapping[str, list[float]]):
    """``query_id -> vector`` over one float32 matrix; each vector becomes a list of floats only when asked for
    (the ``QueryBundle`` of its query), with the values the list-based cache gave."""

    def __init__(self, query_ids: Sequence[str], matrix: np.ndarray) -> None:
        self._row = {query_id: i for i, query_id in enumerate(query_ids)}
        self._matrix = matrix

    def __getitem__(self, query_id: str) -> list[float]:
        return self._matrix[self._row[query_id]].astype(np.float64).tolist()  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator[str]:
        return iter(self._row)

    def __len__(self) -> int:
        return len(self._row)


def _augment(config: RunConfig, nodes: list[BaseNode], documents: Sequence[Document], doc_datasets: dict[str, str],
             settings: RunSettings, say: Callable[[str], None], embed_model: BaseEmbedding | None = None
             ) -> SummaryInfo:
    """Apply SAC per group of datasets sharing a summarizer (in place); returns the summary info."""
    datasets = list(dict.fromkeys(doc_datasets[doc.id_] for doc in documents))
    by_dataset = factories.build_summarizers(config, datasets, say, documents)
    groups: dict[int, list[str]] = {}
    for dataset in datasets:  # one transformation per distinct summarizer
        groups.setdefault(id(by_dataset[dataset]), []).append(dataset)
    calls = 0
    for members in groups.values():
        wanted = set(members)
        transform = factories.build_augmentation(by_dataset[members[0]], settings, config.augmentation.embed_summary,
                                                 embed_model, config.augmentation.on_embed_overflow)
        part = [n for n in nodes if doc_datasets.get(n.ref_doc_id or "") in wanted]
        docs = [d for d in documents if doc_datasets[d.id_] in wanted]
        transform(part, documents=docs, show_progress=settings.show_progress)
        calls += transform.summarizer_calls
        if transform.last_embed_fit.trimmed:
            say(f"[{config.name}] summary trimmed to fit the embedding model on {transform.last_embed_fit.trimmed} of "
                f"{transform.last_embed_fit.nodes} chunks")
    identities = {dataset: by_dataset[dataset].identity() for dataset in datasets}
    return SummaryInfo(summarizer_calls=calls, summarizer_identity=identities)


def _run_config(config: RunConfig, benchmark: RetrievalBenchmark, embed_model: BaseEmbedding,
                identity: dict[str, Any], cache: EmbeddingCache, query_vectors: Mapping[str, list[float]],
                settings: RunSettings, log: Callable[[str], None]) -> ConfigResult:
    timings: dict[str, float] = {}
    progress = settings.show_progress

    clock = time.perf_counter()
    documents = benchmark.to_documents(embed_metadata_keys=config.augmentation.embed_metadata)
    # sentence vectors of the semantic/hybrid parsers come from (and go to) the same cache as the chunk vectors
    parser = factories.build_parser(config.parser, CachedEmbedding(embed_model, cache, identity))
    nodes = parser.get_nodes_from_documents(documents, show_progress=progress)
    timings["parse_s"] = time.perf_counter() - clock
    log(f"[{config.name}] {len(nodes)} chunks from {len(documents)} documents ({timings['parse_s']:.1f} s)")

    summaries: dict[str, str] = {}
    summary_info: SummaryInfo | None = None
    if config.summarizer.kind != "none":
        clock = time.perf_counter()
        summary_info = _augment(config, nodes, documents, benchmark.doc_datasets, settings, log, embed_model)
        timings["summarize_s"] = time.perf_counter() - clock
        for node in nodes:  # a document's summary is its longest copy: a chunk may carry it trimmed to the model
            summary = node.metadata.get("document_summary")
            if node.ref_doc_id is not None and summary is not None \
                    and len(str(summary)) > len(summaries.get(node.ref_doc_id, "")):
                summaries[node.ref_doc_id] = str(summary)
        computed = summary_info.summarizer_calls
        log(f"[{config.name}] {len(summaries)} document summaries, {computed} computed, "
            f"{max(0, len(summaries) - computed)} from the cache ({timings['summarize_s']:.1f} s)")
    del documents, parser  # the nodes carry all that is needed from here on

    clock = time.perf_counter()
    texts = _EmbedTexts(nodes)
    before = cache.misses
    vectors = cache.embed_array(texts, identity, "text", embed_model.get_text_embedding_batch,
                                show_progress=progress, desc=f"Embedding chunks [{config.name}]")
    timings["embed_s"] = time.perf_counter() - clock
    embedded = cache.misses - before
    embedded_chars = sum(map(len, texts))
    log(f"[{config.name}] embedded {embedded} chunks, {len(nodes) - embedded} from cache ({timings['embed_s']:.1f} s)")

    clock = time.perf_counter()
    retriever = factories.build_retriever(config, nodes, embed_model, max(settings.ks), vectors=vectors)
    del vectors  # the store owns the matrix now (normalised in place)
    timings["index_s"] = time.perf_counter() - clock

    evaluator = RetrievalQualityEvaluator(retriever=retriever, ks=settings.ks, workers=settings.retrieval_threads)
    result = evaluator.evaluate_dataset(benchmark.queries, query_vectors, show_progress=progress,
                                        desc=f"Retrieving [{config.name}]")
    timings["retrieve_s"] = result.seconds
    lengths = [node.end_char_idx - node.start_char_idx for node in nodes
               if isinstance(node, TextNode) and node.start_char_idx is not None and node.end_char_idx is not None]
    n_chunks = len(nodes)
    del evaluator, retriever, texts, nodes  # the index, its store and its matrix: plain records from here on
    aggregates = _json_keys(result.aggregates)
    records = [record.as_dict() for record in result.records]
    del result
    return ConfigResult.model_validate({
        "config": config,
        "n_chunks": n_chunks,
        "mean_chunk_chars": sum(lengths) / len(lengths) if lengths else 0.0,
        "mean_embedded_chars": embedded_chars / n_chunks if n_chunks else 0.0,
        "chunks_embedded": embedded,
        "chunks_from_cache": n_chunks - embedded,
        "timings": timings,
        "aggregates": aggregates,
        "confusions": confused_pairs(records, min(settings.confusion_k, max(settings.ks)), top=50),
        "summaries": summaries,
        "summary_info": summary_info,
        "records": records,
    })


def _json_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _json_keys(v) for k, v in value.items()}
    return value


def benchmark_info(benchmark: RetrievalBenchmark, loader: LoaderOptions | None = None) -> BenchmarkInfo:
    """The results' description of ``benchmark``: its size, its datasets' query counts and, when ``loader`` made it
    (as returned by :func:`~llama_index_sac.apps.benchmark.factories.load_benchmark`), the loader options."""
    datasets: dict[str, int] = {}
    for query in benchmark.queries:
        datasets[query.dataset] = datasets.get(query.dataset, 0) + 1
    info: dict[str, Any] = {"source": "custom"}
    if loader is not None and loader.source == "synthetic":
        info = {"source": "synthetic", "seed": loader.seed, "wordings": loader.wordings}
    elif loader is not None and loader.source == "folder":
        info = loader.model_dump(include={"source", "data_dir", "questions"})
    elif loader is not None and loader.source == "legalbenchrag":
        info = loader.model_dump(include={"source", "data_dir", "benchmarks_dir", "sampling", "sample", "seed",
                                          "scope", "wordings"})
    return BenchmarkInfo(name=benchmark.name, description=benchmark.description, n_documents=len(benchmark.documents),
                         n_characters=benchmark.n_characters, n_queries=len(benchmark.queries), datasets=datasets,
                         **info)


def run_evaluation(
    benchmark: RetrievalBenchmark,
    configs: Sequence[RunConfig],
    settings: RunSettings | None = None,
    log: Callable[[str], None] | None = None,
    embed_model: BaseEmbedding | None = None,
    loader: LoaderOptions | None = None,
) -> RunResults:
    """Run every configuration on ``benchmark`` and return the results (see the module docstring).

    Args:
        benchmark: documents and queries.
        configs: configurations to compare (distinct names).
        settings: shared settings (k values, embedding model, cache folder, progress bars, threads).
        log: where progress lines go (default: ``logging`` at INFO).
        embed_model: an already-built embedding model (overrides ``settings.embed_model``).
        loader: the options that loaded ``benchmark`` (recorded in ``results.benchmark``; None: a custom benchmark).

    Raises:
        EvaluationSetupError: no configuration or duplicate names, a benchmark without queries, a model that cannot
            be loaded, a component whose extra is not installed.
        NodeLocationError: a retrieved node without document id or offsets (cannot happen with this package's
            parsers).
        SummarizationError: an LLM summary failed after its retries.
    """
    settings = settings or RunSettings()
    say = log or logger.info
    names = [c.name for c in configs]
    if not configs or len(set(names)) != len(names):
        raise EvaluationSetupError(f"configurations need distinct names, got {names}")
    if not benchmark.queries:
        raise EvaluationSetupError(f"benchmark {benchmark.name!r} has no query")
    wall = time.perf_counter()
    clock = time.perf_counter()
    model = embed_model if embed_model is not None else factories.load_embedding_model(
        settings.embed_model, settings.embed_options())
    identity = factories.model_identity(model)
    load_s = time.perf_counter() - clock
    cache = EmbeddingCache(settings.cache_dir)
    try:
        clock = time.perf_counter()
        query_matrix = cache.embed_array([q.query for q in benchmark.queries], identity, "query",
                                         factories.query_embedder(model), show_progress=settings.show_progress,
                                         desc="Embedding queries")
        query_vectors = _QueryVectors([q.query_id for q in benchmark.queries], query_matrix)
        query_s = time.perf_counter() - clock
        outcomes = []
        for config in configs:
            say(f"configuration {config.name}: {config.model_dump(exclude_defaults=True)}")
            outcomes.append(_run_config(config, benchmark, model, identity, cache, query_vectors, settings, say))
            gc.collect()  # this configuration's nodes and index (LlamaIndex objects hold cycles) before the next
    finally:
        cache.close()
    recorded = RecordedSettings(
        ks=settings.ks, embed_model=identity, cache_dir=str(settings.cache_dir),
        confusion_k=min(settings.confusion_k, max(settings.ks)), retrieval_threads=settings.retrieval_threads,
        llm_concurrency=settings.llm_concurrency,
    )
    return RunResults(
        benchmark=benchmark_info(benchmark, loader), settings=recorded, configs=outcomes,
        timings=RunTimings(model_load_s=load_s, query_embed_s=query_s, wall_s=time.perf_counter() - wall),
        peak_memory_mb=peak_memory_mb(), versions=versions(),
    )
