"""Retrieval benchmarks: the LegalBench-RAG loader and the built-in synthetic contracts dataset."""

from llama_index_sac.apps.benchmark.datasets.base import BenchmarkQuery, RetrievalBenchmark
from llama_index_sac.apps.benchmark.datasets.legalbenchrag import LegalBenchRAGError, load_legalbenchrag
from llama_index_sac.apps.benchmark.datasets.synthetic import synthetic_contracts

__all__ = [
    "BenchmarkQuery",
    "LegalBenchRAGError",
    "RetrievalBenchmark",
    "load_legalbenchrag",
    "synthetic_contracts",
]
