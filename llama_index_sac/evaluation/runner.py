"""The main job: ingest a corpus under several configurations, retrieve for every query, score, report.

For each :class:`RunConfig` (side by side, one shared embedding model and cache):

1. documents -> LlamaIndex ``Document`` objects whose ``id_`` is the corpus file path (so every chunk's
   ``ref_doc_id`` names its file and DRM is attributed by file path);
2. node parser (``recursive`` / ``semantic`` / ``hybrid``, exact offsets);
3. optional Summary-Augmented Chunking: :class:`~llama_index_sac.augmentation.SummaryAugmentationTransformation`
   with an extractive or LLM summarizer (summaries cached on disk by ``summarizers.cache.SummaryCache``);
4. the text each node is embedded with (``node.get_content(MetadataMode.EMBED)``: the chunk, plus the document
   summary for SAC, plus ``file_path`` for the "LlamaIndex default" configuration) is embedded through the on-disk
   :class:`~llama_index_sac.evaluation.cache.EmbeddingCache`, and the nodes with their precomputed embeddings go
   into a real ``VectorStoreIndex`` (``NumpyVectorStore``: exact cosine top-k, one matrix product per query);
5. retrieval: dense top-``max(ks)`` from that index, or ``hybrid`` = dense + ``BM25Retriever`` (over the same
   embedded text) fused by reciprocal rank (LlamaIndex's ``QueryFusionRetriever``, ``mode="reciprocal_rerank"``,
   one query, no LLM);
6. :class:`~llama_index_sac.evaluation.evaluator.RetrievalQualityEvaluator` scores every ``k`` from the single
   ranking; query embeddings are precomputed in a batch (and cached) and handed over in the ``QueryBundle``.

:func:`run_evaluation` returns one JSON-serialisable ``results`` dictionary (configuration, per-query records,
aggregates, most-confused document pairs, timings, versions, peak memory) that :mod:`.report` renders.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import os
import platform
import resource
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import BaseModel, Field, ValidationError, model_validator
from llama_index.core.schema import BaseNode, MetadataMode, TextNode

from llama_index_sac.datasets.base import RetrievalBenchmark
from llama_index_sac.evaluation.cache import CachedEmbedding, EmbeddingCache, default_cache_dir
from llama_index_sac.evaluation.evaluator import RetrievalQualityEvaluator
from llama_index_sac.evaluation.metrics import DEFAULT_KS
from llama_index_sac.evaluation.report import confused_pairs

__all__ = [
    "PRESETS",
    "EvaluationSetupError",
    "RunConfig",
    "RunSettings",
    "parse_config",
    "run_evaluation",
]

logger = logging.getLogger(__name__)


class EvaluationSetupError(ValueError):
    """A configuration, model or option that cannot be used (the CLI prints the message and exits non-zero)."""


class RunConfig(BaseModel):
    """One configuration of the comparison: how documents are chunked, augmented, embedded and retrieved."""

    name: str = Field(min_length=1, description="Label in tables, plots and results.json.")
    parser: Literal["recursive", "semantic", "hybrid"] = Field(
        default="recursive",
        description="recursive: RecursiveCharacterNodeParser(chunk_size, chunk_overlap); semantic: "
        "SemanticNodeParser with its defaults (max chunk 1000 characters); hybrid: HybridNodeParser(chunk_size, "
        "chunk_overlap).",
    )
    chunk_size: int = Field(default=500, gt=0, description="Chunk size in characters (recursive and hybrid).")
    chunk_overlap: int = Field(default=0, ge=0, description="Chunk overlap in characters (recursive and hybrid).")
    summarizer: Literal["none", "extractive", "llm"] = Field(
        default="none", description="Document summaries embedded with every chunk (SAC): none, extractive or llm."
    )
    llm: str | None = Field(
        default=None,
        description="LLM summarizer model: an OpenAI model name (needs OPENAI_API_KEY), a local .gguf path "
        "(llama-cpp-python), or a model name served at llm_api_base.",
    )
    llm_api_base: str | None = Field(
        default=None, description="OpenAI-compatible endpoint (e.g. http://127.0.0.1:8000/v1 for llama_cpp.server)."
    )
    prompt: Literal["generic", "expert"] = Field(
        default="generic", description="LLM summary prompt: generic, or expert (document-type specific)."
    )
    summary_chars: int = Field(default=150, gt=0, description="Target summary length in characters.")
    summary_terms: Literal["corpus", "shipped"] = Field(
        default="corpus",
        description="Extractive summarizer, the document frequencies its key terms are weighted against: corpus "
        "(a TermStatistics table built from every document of the run, before summarizing: the published runs) or "
        "shipped (the package's legal-terms-v1 table, what ExtractiveSummarizer() uses by default).",
    )
    long_document: Literal["map_reduce", "head_tail"] = Field(
        default="map_reduce",
        description="LLM summarizer, documents longer than its input window: map_reduce (read every window) or "
        "head_tail (one request on the start and the end; see llama_index_sac.summarizers.llm).",
    )
    llm_input_chars: int | None = Field(
        default=None,
        gt=0,
        description="LLM summarizer input window in characters (its max_input_chars); None = what fits the model's "
        "context. A smaller window costs less per document (head_tail: the start and the end of each document).",
    )
    summary_metadata: list[str] = Field(
        default_factory=list,
        description="Document metadata keys folded into the summary (the summarizer's metadata_keys, e.g. "
        "['file_name']): [] is content-only, ['file_name'] the metadata-aware setting.",
    )
    embed_metadata: list[str] = Field(
        default_factory=list,
        description="Document metadata keys embedded with every chunk: [] (SAC paper setting) or ['file_path'] "
        "(what LlamaIndex's SimpleDirectoryReader does out of the box).",
    )
    retrieval: Literal["dense", "hybrid"] = Field(
        default="dense", description="dense top-k, or hybrid: dense + BM25 fused by reciprocal rank."
    )

    @model_validator(mode="after")
    def _check(self) -> RunConfig:
        if self.summarizer == "llm" and not self.llm:
            raise ValueError(f"configuration {self.name!r}: summarizer=llm needs llm=<model name or .gguf path>")
        if self.parser != "semantic" and self.chunk_overlap >= self.chunk_size:
            raise ValueError(f"configuration {self.name!r}: chunk_overlap must be < chunk_size")
        unknown = set(self.embed_metadata + self.summary_metadata) - {"file_path", "file_name", "dataset"}
        if unknown:
            raise ValueError(f"configuration {self.name!r}: unknown embed_metadata keys {sorted(unknown)}")
        return self


#: Named configurations (``--config NAME`` or ``NAME:key=value,...``).
PRESETS: dict[str, dict[str, Any]] = {
    "baseline": {"name": "baseline"},
    "sac": {"name": "sac", "summarizer": "extractive"},
    "sac-llm": {"name": "sac-llm", "summarizer": "llm"},
    "sac-expert": {"name": "sac-expert", "summarizer": "llm", "prompt": "expert", "summary_chars": 300},
    "llamaindex": {"name": "llamaindex", "embed_metadata": ["file_path"]},
}


def parse_config(
    spec: str, common: dict[str, Any] | None = None, summary_options: dict[str, Any] | None = None
) -> RunConfig:
    """Parse ``PRESET`` or ``PRESET:key=value,key=value`` into a :class:`RunConfig`.

    Precedence, lowest first: ``common`` (options for every configuration, e.g. the CLI's ``--parser``), the
    preset, ``summary_options`` (e.g. ``--summarizer``/``--llm``/``--prompt``; applied only to configurations that
    have a summarizer), then the spec's own keys. ``name=`` renames; ``embed_metadata`` lists use ``+``. Without
    ``name=``, a spec with keys is named after itself (``"sac[parser=hybrid]"``).

    Raises:
        EvaluationSetupError: unknown preset or key, or an invalid value, naming the spec.
    """
    preset, _, rest = spec.partition(":")
    preset = preset.strip()
    if preset not in PRESETS:
        raise EvaluationSetupError(f"unknown configuration {preset!r} in {spec!r}: choose from {', '.join(PRESETS)}")
    values: dict[str, Any] = {**(common or {}), **PRESETS[preset]}
    if values.get("summarizer", "none") != "none":
        values.update(summary_options or {})
    own: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if not eq or key not in RunConfig.model_fields:
            raise EvaluationSetupError(
                f"bad option {item!r} in configuration {spec!r}: expected key=value with key in "
                f"{', '.join(RunConfig.model_fields)}"
            )
        own[key] = (
            [v for v in value.split("+") if v] if key in ("embed_metadata", "summary_metadata") else value.strip()
        )
    values.update(own)
    if own and "name" not in own:
        values["name"] = f"{preset}[{rest.strip()}]"
    try:
        return RunConfig(**values)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'config'}: {e['msg']}" for e in exc.errors())
        raise EvaluationSetupError(f"invalid configuration {spec!r}: {problems}") from None


@dataclass
class RunSettings:
    """Settings shared by every configuration of one run."""

    ks: list[int] = field(default_factory=lambda: list(DEFAULT_KS))
    embed_model: str | None = None  #: None: default_embedding_model() (all-MiniLM-L6-v2, offline)
    cache_dir: Path = field(default_factory=default_cache_dir)
    confusion_k: int = 8
    show_progress: bool = True
    workers: int = 4
    llm_concurrency: int = 2


def _versions() -> dict[str, str]:
    names = [
        "llama-index-sac", "llama-index-core", "llama-index-embeddings-huggingface", "llama-index-retrievers-bm25",
        "sentence-transformers", "transformers", "torch", "numpy",
    ]
    out = {"python": platform.python_version(), "platform": platform.platform()}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def peak_memory_mb() -> float:
    """Peak resident memory of this process so far, in MiB (``ru_maxrss``)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024


def load_embedding_model(name: str | None) -> BaseEmbedding:
    """The embedding model by name (``None``: the package default, all-MiniLM-L6-v2).

    Raises:
        EvaluationSetupError: the model cannot be loaded (e.g. not available offline), with the reason.
    """
    from llama_index_sac.embeddings import default_embedding_model

    try:
        return default_embedding_model(name)
    except Exception as exc:  # EmbeddingModelError, or an import error of the backend
        raise EvaluationSetupError(f"embedding model {name or 'default'!r} cannot be loaded: {exc}") from None


def _embedding_identity(model: BaseEmbedding) -> dict[str, Any]:
    from llama_index_sac.embeddings import embedding_identity

    identity: dict[str, Any] = dict(embedding_identity(model))
    for key in ("max_length", "normalize", "query_instruction", "text_instruction", "pooling"):
        value = getattr(model, key, None)
        if value is not None:
            identity[key] = str(value)
    return identity


def _query_embedder(model: BaseEmbedding) -> Callable[[list[str]], list[list[float]]]:
    """A batch query-embedding function: ``HuggingFaceEmbedding`` embeds a batch of queries in one call (the same
    ``prompt_name="query"`` path as ``get_query_embedding``); other models are called once per query."""
    batch = getattr(model, "_embed", None)
    try:
        from llama_index.embeddings.huggingface import HuggingFaceEmbedding
    except ImportError:  # pragma: no cover - a hard dependency
        HuggingFaceEmbedding = None  # type: ignore[assignment,misc]  # noqa: N806
    if HuggingFaceEmbedding is not None and isinstance(model, HuggingFaceEmbedding) and callable(batch):
        return lambda texts: batch(texts, prompt_name="query")
    return lambda texts: [model.get_query_embedding(text) for text in texts]


def _build_parser(config: RunConfig, embed_model: BaseEmbedding) -> Any:
    if config.parser == "recursive":
        from llama_index_sac.node_parser.recursive import RecursiveCharacterNodeParser

        return RecursiveCharacterNodeParser(chunk_size=config.chunk_size, chunk_overlap=config.chunk_overlap)
    try:
        if config.parser == "semantic":
            from llama_index_sac.node_parser.semantic import SemanticNodeParser

            return SemanticNodeParser.from_defaults(embed_model=embed_model)
        from llama_index_sac.node_parser.hybrid import HybridNodeParser

        return HybridNodeParser.from_defaults(
            embed_model=embed_model, chunk_size=config.chunk_size, chunk_overlap=config.chunk_overlap
        )
    except ImportError as exc:
        raise EvaluationSetupError(f"parser {config.parser!r} is not available in this install: {exc}") from None


def _build_llm_summarizer(config: RunConfig, summarizers: Any, **kwargs: Any) -> Any:
    """``LLMSummarizer`` on a local ``.gguf`` file, an OpenAI-compatible server, or OpenAI's API."""
    assert config.llm is not None
    model = config.llm
    cls = summarizers.LLMSummarizer
    try:  # os.path.expanduser never raises ("~nobody"); a name too long for the OS is not a local file
        local = model.endswith(".gguf") or Path(os.path.expanduser(model)).is_file()
    except (OSError, ValueError):
        local = False
    if local:
        try:
            return cls.from_gguf(model, **kwargs)
        except (FileNotFoundError, ImportError) as exc:
            raise EvaluationSetupError(str(exc)) from None
    try:
        if config.llm_api_base:
            return cls.from_openai_like(config.llm_api_base, model, **kwargs)
        if not os.environ.get("OPENAI_API_KEY"):
            raise EvaluationSetupError(
                f"LLM {model!r} is taken as an OpenAI model name but OPENAI_API_KEY is not set; pass a local .gguf "
                "path or --llm-api-base for an OpenAI-compatible server (e.g. llama_cpp.server on 127.0.0.1)"
            )
        return cls.from_openai(model, **kwargs)
    except ImportError as exc:
        raise EvaluationSetupError(f"LLM {model!r} needs a client that is not installed: {exc}") from None


#: Expert (document-type specific, 300-character) summary prompts by dataset, as ``LLMSummarizer`` constructor names
#: (the SAC paper's expert-guided setting); other datasets get the generic prompt, and the run log says so.
EXPERT_PROMPTS: dict[str, str] = {
    "contractnli": "expert_nda",
    "nda": "expert_nda",
    "privacy_qa": "expert_privacy_policy",
    "maud": "expert_merger_agreement",
    "cuad": "expert_commercial_contract",
}


def _summarizers_for(config: RunConfig, datasets: Sequence[str], say: Callable[[str], None],
                     documents: Sequence[Any] = ()) -> dict[str, Any]:
    """One summarizer per dataset (the same object for all, except expert prompts, which are per document type).

    The extractive one weighs key terms against a table built from ``documents`` (every document of the run) when
    ``summary_terms="corpus"``: one explicit artefact for the whole run, fixed before any summary is written."""
    try:
        summarizers = importlib.import_module("llama_index_sac.summarizers")
    except ImportError as exc:
        raise EvaluationSetupError(f"summarizers are not available in this install: {exc}") from None
    if config.summarizer == "extractive":
        shared = summarizers.ExtractiveSummarizer(
            max_chars=config.summary_chars, metadata_keys=list(config.summary_metadata)
        )
        if config.summary_terms == "corpus":
            shared.fit(documents)
        return {dataset: shared for dataset in datasets}
    generic = _build_llm_summarizer(
        config, summarizers, max_chars=config.summary_chars, long_document=config.long_document,
        metadata_keys=list(config.summary_metadata), max_input_chars=config.llm_input_chars,
    )
    if config.prompt == "generic":
        return {dataset: generic for dataset in datasets}
    out: dict[str, Any] = {}
    for dataset in datasets:
        factory = EXPERT_PROMPTS.get(dataset)
        if factory is None:
            say(f"[{config.name}] no expert prompt for dataset {dataset!r}: its documents get the generic prompt")
            out[dataset] = generic
        else:
            out[dataset] = getattr(summarizers.LLMSummarizer, factory)(
                generic.llm, max_chars=config.summary_chars, long_document=config.long_document,
                metadata_keys=list(config.summary_metadata), max_input_chars=config.llm_input_chars,
            )
    return out


def _augment(
    config: RunConfig,
    nodes: list[BaseNode],
    documents: Sequence[Any],
    doc_datasets: dict[str, str],
    settings: RunSettings,
    say: Callable[[str], None],
) -> tuple[list[BaseNode], dict[str, Any]]:
    """Apply SAC (``SummaryAugmentationTransformation``) per dataset group; returns the nodes and summary info."""
    try:
        augmentation = importlib.import_module("llama_index_sac.augmentation")
    except ImportError as exc:
        raise EvaluationSetupError(f"summary augmentation is not available in this install: {exc}") from None
    datasets = list(dict.fromkeys(doc_datasets[doc.id_] for doc in documents))
    by_dataset = _summarizers_for(config, datasets, say, documents)
    groups: dict[int, list[str]] = {}
    for dataset in datasets:  # one transformation per distinct summarizer
        groups.setdefault(id(by_dataset[dataset]), []).append(dataset)
    calls = 0
    for members in groups.values():
        summarizer = by_dataset[members[0]]
        wanted = set(members)
        transform = augmentation.SummaryAugmentationTransformation(
            summarizer=summarizer,
            cache_dir=str(Path(settings.cache_dir) / "summaries"),
            num_workers=settings.llm_concurrency,
        )
        part = [n for n in nodes if doc_datasets.get(n.ref_doc_id or "") in wanted]
        docs = [d for d in documents if doc_datasets[d.id_] in wanted]
        transform(part, documents=docs, show_progress=settings.show_progress)
        calls += transform.summarizer_calls
    identities = {dataset: by_dataset[dataset].identity() for dataset in datasets}
    return nodes, {"summarizer_calls": calls, "summarizer_identity": identities}


def _build_retriever(config: RunConfig, nodes: list[BaseNode], embed_model: BaseEmbedding, top_k: int) -> Any:
    from llama_index.core import StorageContext, VectorStoreIndex

    from llama_index_sac.vector_store import NumpyVectorStore

    # NumpyVectorStore: exact cosine top-k like SimpleVectorStore, without rebuilding the matrix on every query
    storage = StorageContext.from_defaults(vector_store=NumpyVectorStore())
    index = VectorStoreIndex(nodes, embed_model=embed_model, storage_context=storage, show_progress=False)
    dense = index.as_retriever(similarity_top_k=top_k)
    if config.retrieval == "dense":
        return dense
    try:
        from llama_index.retrievers.bm25 import BM25Retriever
    except ImportError:
        raise EvaluationSetupError(
            "retrieval=hybrid needs BM25: pip install 'llama-index-sac[bm25]'"
        ) from None
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import QueryFusionRetriever
    from llama_index.core.retrievers.fusion_retriever import FUSION_MODES

    bm25 = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=top_k)
    return QueryFusionRetriever(
        [dense, bm25],
        llm=MockLLM(),
        mode=FUSION_MODES.RECIPROCAL_RANK,
        num_queries=1,
        similarity_top_k=top_k,
        use_async=False,
    )


def _run_config(
    config: RunConfig,
    benchmark: RetrievalBenchmark,
    embed_model: BaseEmbedding,
    identity: dict[str, Any],
    cache: EmbeddingCache,
    query_vectors: dict[str, list[float]],
    settings: RunSettings,
    log: Callable[[str], None],
) -> dict[str, Any]:
    timings: dict[str, float] = {}
    progress = settings.show_progress

    clock = time.perf_counter()
    documents = benchmark.to_documents(embed_metadata_keys=config.embed_metadata)
    # sentence vectors of the semantic/hybrid parsers come from (and go to) the same cache as the chunk vectors
    parser = _build_parser(config, CachedEmbedding(embed_model, cache, identity))
    nodes = parser.get_nodes_from_documents(documents, show_progress=progress)
    timings["parse_s"] = time.perf_counter() - clock
    log(f"[{config.name}] {len(nodes)} chunks from {len(documents)} documents ({timings['parse_s']:.1f} s)")

    summaries: dict[str, str] = {}
    summary_info: dict[str, Any] = {}
    if config.summarizer != "none":
        clock = time.perf_counter()
        nodes, summary_info = _augment(config, nodes, documents, benchmark.doc_datasets, settings, log)
        timings["summarize_s"] = time.perf_counter() - clock
        for node in nodes:
            summary = node.metadata.get("document_summary")
            if node.ref_doc_id is not None and summary is not None:
                summaries.setdefault(node.ref_doc_id, str(summary))
        log(
            f"[{config.name}] {len(summaries)} document summaries, {summary_info['summarizer_calls']} computed, "
            f"the rest from the cache ({timings['summarize_s']:.1f} s)"
        )

    clock = time.perf_counter()
    texts = [node.get_content(metadata_mode=MetadataMode.EMBED) for node in nodes]
    before = cache.misses
    vectors = cache.embed(
        texts,
        identity,
        "text",
        embed_model.get_text_embedding_batch,
        show_progress=progress,
        desc=f"Embedding chunks [{config.name}]",
    )
    for node, vector in zip(nodes, vectors):
        node.embedding = vector
    timings["embed_s"] = time.perf_counter() - clock
    embedded = cache.misses - before
    log(f"[{config.name}] embedded {embedded} chunks, {len(nodes) - embedded} from cache ({timings['embed_s']:.1f} s)")

    clock = time.perf_counter()
    retriever = _build_retriever(config, nodes, embed_model, max(settings.ks))
    timings["index_s"] = time.perf_counter() - clock

    evaluator = RetrievalQualityEvaluator(retriever=retriever, ks=settings.ks, workers=settings.workers)
    result = evaluator.evaluate_dataset(
        benchmark.queries, query_vectors, show_progress=progress, desc=f"Retrieving [{config.name}]"
    )
    timings["retrieve_s"] = result.seconds
    records = [record.as_dict() for record in result.records]
    chunk_lengths = [
        node.end_char_idx - node.start_char_idx
        for node in nodes
        if isinstance(node, TextNode) and node.start_char_idx is not None and node.end_char_idx is not None
    ]
    return {
        "config": config.model_dump(),
        "n_chunks": len(nodes),
        "mean_chunk_chars": sum(chunk_lengths) / len(chunk_lengths) if chunk_lengths else 0.0,
        "mean_embedded_chars": sum(map(len, texts)) / len(texts) if texts else 0.0,
        "chunks_embedded": embedded,
        "chunks_from_cache": len(nodes) - embedded,
        "timings": timings,
        "aggregates": _json_keys(result.aggregates),
        "confusions": confused_pairs(records, min(settings.confusion_k, max(settings.ks)), top=50),
        "summaries": summaries,
        "summary_info": summary_info,
        "records": records,
    }


def _json_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _json_keys(v) for k, v in value.items()}
    return value


def run_evaluation(
    benchmark: RetrievalBenchmark,
    configs: Sequence[RunConfig],
    settings: RunSettings | None = None,
    log: Callable[[str], None] | None = None,
    embed_model: BaseEmbedding | None = None,
) -> dict[str, Any]:
    """Run every configuration on ``benchmark`` and return the results dictionary (see the module docstring).

    Args:
        benchmark: documents and queries.
        configs: configurations to compare (distinct names).
        settings: shared settings (k values, embedding model, cache folder, progress bars).
        log: where progress lines go (default: ``logging`` at INFO).
        embed_model: an already-built embedding model (overrides ``settings.embed_model``).

    Raises:
        EvaluationSetupError: duplicate configuration names, bad k values, a model that cannot be loaded, a
            component not available in this install.
        NodeLocationError: a retrieved node without document id or offsets (cannot happen with this package's
            parsers).
    """
    settings = settings or RunSettings()
    say = log or logger.info
    names = [c.name for c in configs]
    if not configs or len(set(names)) != len(names):
        raise EvaluationSetupError(f"configurations need distinct names, got {names}")
    if not settings.ks or min(settings.ks) < 1:
        raise EvaluationSetupError(f"k values must be positive integers, got {settings.ks}")
    settings.ks = sorted(set(settings.ks))
    if not benchmark.queries:
        raise EvaluationSetupError(f"benchmark {benchmark.name!r} has no query")
    wall = time.perf_counter()
    clock = time.perf_counter()
    model = embed_model if embed_model is not None else load_embedding_model(settings.embed_model)
    identity = _embedding_identity(model)
    load_s = time.perf_counter() - clock
    cache = EmbeddingCache(settings.cache_dir)
    try:
        clock = time.perf_counter()
        query_list = cache.embed(
            [q.query for q in benchmark.queries],
            identity,
            "query",
            _query_embedder(model),
            show_progress=settings.show_progress,
            desc="Embedding queries",
        )
        query_vectors = {q.query_id: v for q, v in zip(benchmark.queries, query_list)}
        query_s = time.perf_counter() - clock
        outcomes = []
        for config in configs:
            say(f"configuration {config.name}: {config.model_dump(exclude_defaults=True)}")
            outcomes.append(_run_config(config, benchmark, model, identity, cache, query_vectors, settings, say))
    finally:
        cache.close()
    datasets: dict[str, int] = {}
    for query in benchmark.queries:
        datasets[query.dataset] = datasets.get(query.dataset, 0) + 1
    return {
        "benchmark": {
            "name": benchmark.name,
            "description": benchmark.description,
            "n_documents": len(benchmark.documents),
            "n_characters": benchmark.n_characters,
            "n_queries": len(benchmark.queries),
            "datasets": datasets,
        },
        "settings": {
            "ks": settings.ks,
            "embed_model": identity,
            "cache_dir": str(settings.cache_dir),
            "confusion_k": min(settings.confusion_k, max(settings.ks)),
        },
        "configs": outcomes,
        "timings": {"model_load_s": load_s, "query_embed_s": query_s, "wall_s": time.perf_counter() - wall},
        "peak_memory_mb": peak_memory_mb(),
        "versions": _versions(),
    }
