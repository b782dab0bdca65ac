"""Building a run's parts from its settings: the benchmark, the embedding model, parsers, summarizers, the SAC
transformation and retrievers. Plain imports of the package's own modules; optional dependencies (Hugging Face,
OpenAI clients, llama.cpp, BM25) are imported by the components through ``require_extra``, and their ``ImportError``
becomes an :class:`~llama_index_sac.apps.benchmark.config.EvaluationSetupError` naming the extra to install.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
from llama_index.core.schema import BaseNode

from llama_index_sac import settings as library
from llama_index_sac._util import require_extra
from llama_index_sac.apps.benchmark.components import ExtractiveSummarizerSettings, LLMSummarizerSettings
from llama_index_sac.apps.benchmark.config import EvaluationSetupError, LoaderOptions, RunConfig, RunSettings
from llama_index_sac.apps.benchmark.datasets._corpus import LegalBenchRAGLayout
from llama_index_sac.apps.benchmark.datasets.base import RetrievalBenchmark
from llama_index_sac.apps.benchmark.datasets.folder import load_folder_benchmark
from llama_index_sac.apps.benchmark.datasets.legalbenchrag import load_legalbenchrag
from llama_index_sac.apps.benchmark.datasets.synthetic import synthetic_contracts
from llama_index_sac.apps.benchmark.wordings import WordingError, reworded_benchmark
from llama_index_sac.augmentation.transformation import SummaryAugmentationTransformation
from llama_index_sac.embeddings.default import EmbeddingBackendOptions, default_embedding_model
from llama_index_sac.embeddings.onnx import OnnxEmbedding
from llama_index_sac.retrievers.document_aware import DocumentAwareRetriever
from llama_index_sac.retrievers.document_index import DocumentIndex
from llama_index_sac.settings import build_parser, model_backend, model_identity, model_space, recorded_space
from llama_index_sac.summarizers import BaseSummarizer, ExtractiveSummarizer, LLMSummarizer
from llama_index_sac.vector_stores.numpy_store import NumpyVectorStore

__all__ = [
    "EXPERT_PROMPTS",
    "build_augmentation",
    "build_llm_summarizer",
    "build_parser",
    "build_retriever",
    "build_summarizers",
    "load_benchmark",
    "load_embedding_model",
    "model_backend",
    "model_identity",
    "model_space",
    "recorded_space",
    "query_embedder",
]


# -- benchmark and embedding model -------------------------------------------------------------------------------


def load_benchmark(options: LoaderOptions) -> tuple[RetrievalBenchmark, LoaderOptions]:
    """The benchmark ``options`` name, and the options as used (LegalBench-RAG: the datasets loaded and the benchmark
    folder found, relative to ``data_dir`` when inside it), for the results' :class:`BenchmarkInfo`.

    Raises:
        LegalBenchRAGError: unreadable or invalid LegalBench-RAG data (a ``ValueError``).
        FolderBenchmarkError: an unreadable folder or questions file (a ``ValueError`` listing every problem).
        EvaluationSetupError: ``options.wordings`` and a query that is not in the template.
    """
    benchmark, used = _load_benchmark(options)
    if options.wordings is None:
        return benchmark, used
    try:
        return reworded_benchmark(benchmark, options.wordings), used
    except WordingError as exc:
        raise EvaluationSetupError(f"--wordings: {exc}") from None


def _load_benchmark(options: LoaderOptions) -> tuple[RetrievalBenchmark, LoaderOptions]:
    """:func:`load_benchmark` without the wordings."""
    if options.source == "synthetic":
        return synthetic_contracts(n_documents=options.n_documents, seed=options.seed), options
    assert options.data_dir is not None  # LoaderOptions checks it
    if options.source == "folder":
        assert options.questions is not None
        return load_folder_benchmark(options.data_dir, options.questions), options
    benchmark = load_legalbenchrag(
        options.data_dir, options.datasets or None, sampling=options.sampling, sample_size=options.sample,
        seed=options.seed, scope=options.scope, benchmarks_dir=options.benchmarks_dir,
    )
    layout = LegalBenchRAGLayout.find(options.data_dir, options.benchmarks_dir)
    folder = Path(os.path.abspath(layout.benchmarks_dir))
    data_dir = Path(os.path.abspath(layout.data_dir))
    used = folder.relative_to(data_dir) if folder.is_relative_to(data_dir) else folder
    return benchmark, options.model_copy(update={"datasets": benchmark.datasets, "benchmarks_dir": str(used)})


def load_embedding_model(name: str | None, options: EmbeddingBackendOptions | None = None) -> BaseEmbedding:
    """The embedding model by name (``None``: the package default, all-MiniLM-L6-v2) on the runtime of ``options``
    (default: :class:`EmbeddingBackendOptions`' defaults). The model shows no progress bar of its own: the runner's
    embedding cache shows one over all the texts it computes.

    Raises:
        EvaluationSetupError: the model cannot be loaded (not available offline, the extra missing...).
    """
    options = options if options is not None else EmbeddingBackendOptions()
    try:
        return default_embedding_model(name, backend=options.backend, precision=options.precision,
                                       num_threads=options.num_threads, graph=options.graph, device=options.device)
    except Exception as exc:  # EmbeddingModelError, an ImportError naming the extra, an error of the backend
        raise EvaluationSetupError(f"embedding model {name or 'default'!r} cannot be loaded: {exc}") from None




def query_embedder(model: BaseEmbedding) -> Callable[[list[str]], list[list[float]]]:
    """A batch query-embedding function: ``HuggingFaceEmbedding`` embeds a batch of queries in one call (the same
    ``prompt_name="query"`` path as ``get_query_embedding``), ``OnnxEmbedding`` too (its queries are embedded as
    texts); other models are called once per query."""
    if isinstance(model, OnnxEmbedding):
        return lambda texts: model.embed_array(texts).astype(np.float64).tolist()  # type: ignore[no-any-return]
    batch = getattr(model, "_embed", None)
    hf = sys.modules.get("llama_index.embeddings.huggingface")  # not imported: the model cannot be one of its class
    if hf is not None and isinstance(model, hf.HuggingFaceEmbedding) and callable(batch):
        return lambda texts: batch(texts, prompt_name="query")
    return lambda texts: [model.get_query_embedding(text) for text in texts]


# -- summarizers -------------------------------------------------------------------------------------------------

#: Expert (document-type specific) summary prompts by dataset, as ``LLMSummarizer`` constructor names (the SAC
#: paper's expert-guided setting); other datasets get the generic prompt, and the run log says so.
EXPERT_PROMPTS: dict[str, str] = {
    "contractnli": "expert_nda",
    "nda": "expert_nda",
    "privacy_qa": "expert_privacy_policy",
    "maud": "expert_merger_agreement",
    "cuad": "expert_commercial_contract",
}


def build_llm_summarizer(settings: LLMSummarizerSettings) -> LLMSummarizer:
    """:func:`llama_index_sac.settings.build_llm_summarizer` (generic prompt).

    Raises:
        EvaluationSetupError: a missing model file, OpenAI without ``OPENAI_API_KEY``, a client extra not installed.
    """
    try:
        return library.build_llm_summarizer(settings)
    except library.SettingsError as exc:
        raise EvaluationSetupError(str(exc)) from None


def build_summarizers(config: RunConfig, datasets: Sequence[str], say: Callable[[str], None],
                      documents: Sequence[BaseNode] = ()) -> dict[str, BaseSummarizer]:
    """One summarizer per dataset of ``config`` (the same object for all, except expert prompts, which are per
    document type); empty for ``summarizer.kind="none"``.

    The extractive one weighs key terms against a table fitted on ``documents`` (every document of the run) when
    ``terms="corpus"``: one explicit artefact for the whole run, fixed before any summary is written.

    Raises:
        EvaluationSetupError: see :func:`build_llm_summarizer`.
    """
    settings = config.summarizer
    if isinstance(settings, ExtractiveSummarizerSettings):
        shared = ExtractiveSummarizer(**settings.component_kwargs())
        if settings.terms == "corpus":
            shared.fit(documents)
        return {dataset: shared for dataset in datasets}
    if not isinstance(settings, LLMSummarizerSettings):
        return {}
    generic = build_llm_summarizer(settings)
    if settings.prompt == "generic":
        return {dataset: generic for dataset in datasets}
    out: dict[str, BaseSummarizer] = {}
    for dataset in datasets:
        factory = EXPERT_PROMPTS.get(dataset)
        if factory is None:
            say(f"[{config.name}] no expert prompt for dataset {dataset!r}: its documents get the generic prompt")
            out[dataset] = generic
        else:
            out[dataset] = getattr(LLMSummarizer, factory)(generic.llm, **settings.component_kwargs())
    return out


def build_augmentation(summarizer: BaseSummarizer, settings: RunSettings, embed_summary: bool = True,
                       embed_model: BaseEmbedding | None = None,
                       on_embed_overflow: Literal["trim", "warn", "raise"] = "trim",
                       ) -> SummaryAugmentationTransformation:
    """SAC with ``summarizer``: summaries cached under ``<cache_dir>/summaries``, at most ``llm_concurrency``
    concurrent LLM requests; EMBED strings measured against ``embed_model``'s input limit (``on_embed_overflow``)."""
    return SummaryAugmentationTransformation(
        summarizer=summarizer,
        embed_summary=embed_summary,
        embed_model=embed_model,
        on_embed_overflow=on_embed_overflow,
        cache_dir=str(Path(settings.cache_dir) / "summaries"),
        num_workers=settings.llm_concurrency,
    )


# -- retrieval ---------------------------------------------------------------------------------------------------


def build_retriever(config: RunConfig, nodes: list[BaseNode], embed_model: BaseEmbedding, top_k: int,
                    vectors: np.ndarray | None = None) -> BaseRetriever:
    """Dense top-``top_k`` over ``nodes`` (their precomputed embeddings; exact cosine in ``NumpyVectorStore``), or
    ``hybrid``: dense + ``BM25Retriever`` over the same embedded text, fused by reciprocal rank (one query, no LLM).

    Raises:
        EvaluationSetupError: hybrid retrieval without the ``bm25`` extra.
    """
    # NumpyVectorStore: exact cosine top-k like SimpleVectorStore, without rebuilding the matrix on every query
    store = NumpyVectorStore()
    if vectors is None:  # the nodes carry node.embedding
        storage = StorageContext.from_defaults(vector_store=store)
        index = VectorStoreIndex(nodes, embed_model=embed_model, storage_context=storage, show_progress=False)
    else:  # one float32 (len(nodes), dim) matrix, handed over (normalised in place): no per-node lists
        store.add_matrix(nodes, vectors, copy=False)
        index = VectorStoreIndex.from_vector_store(store, embed_model=embed_model)
    dense = index.as_retriever(similarity_top_k=top_k)
    if config.retrieval == "dense":
        return dense
    if config.retrieval == "document-aware":
        settings = config.document_retrieval
        try:
            documents = DocumentIndex.from_nodes(nodes, names=settings.name_weight > 0 or settings.require_name_match,
                                                 options=settings.prior_options())
        except ImportError as exc:  # bm25s: the bm25 extra
            raise EvaluationSetupError(str(exc)) from None
        return DocumentAwareRetriever(index, documents, similarity_top_k=top_k, options=settings.ranking_options())
    try:
        bm25_module = require_extra("llama_index.retrievers.bm25", "bm25", "retrieval=hybrid")
    except ImportError as exc:
        raise EvaluationSetupError(str(exc)) from None
    bm25 = bm25_module.BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=top_k)
    return QueryFusionRetriever(
        [dense, bm25],
        llm=MockLLM(),
        mode=FUSION_MODES.RECIPROCAL_RANK,
        num_queries=1,
        similarity_top_k=top_k,
        use_async=False,
    )
