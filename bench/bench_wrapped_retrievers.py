"""DRM@k of DocumentAwareRetriever around retrievers other than a vector index (issue 39, item 3: one scale).

On the built-in contracts (``synthetic_contracts()``: 24 contracts, 108 queries), chunked by
``RecursiveCharacterNodeParser()``, summarized by ``ExtractiveSummarizer()`` (SAC) and embedded by the default model
(``--fake``: the deterministic test embedding), side by side in one run:

- ``dense`` / ``aware-dense``: the vector index's top k, and the package default around it;
- ``bm25``: ``BM25Retriever`` over the same nodes (its top k); ``aware-bm25-<scale>``: the default
  ``DocumentAwareRetriever`` around a ``BM25Retriever`` of the top ``candidate_top_k``, with ``score_scale`` =
  ``as-is`` (the raw BM25 scores, as before 0.3), ``auto`` (the default: divided by the query's best) and ``min-max``;
- ``fusion``: ``QueryFusionRetriever`` of dense + BM25 by reciprocal rank; ``aware-fusion-<scale>`` around it.

DRM@k: the share of a query's top k chunks that are not from a gold document, averaged over the queries (Reuter et
al., arXiv 2510.06999). Every weight is the package default (chosen on LegalBench-RAG, not on these contracts);
``score_scale="auto"`` has no constant.

    python bench/bench_wrapped_retrievers.py --json /tmp/wrapped.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from llama_index.core import Document, StorageContext, VectorStoreIndex
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.llms import MockLLM
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
from llama_index.retrievers.bm25 import BM25Retriever

from llama_index_sac import (
    DocumentAwareRetriever,
    DocumentIndex,
    ExtractiveSummarizer,
    NumpyVectorStore,
    RecursiveCharacterNodeParser,
    SummaryAugmentationTransformation,
)
from llama_index_sac.apps.benchmark.datasets.synthetic import synthetic_contracts
from llama_index_sac.constants import DEFAULT_CANDIDATE_TOP_K
from llama_index_sac.embeddings.default import default_embedding_model

KS = (1, 2, 4, 8)
SCALES = ("as-is", "auto", "min-max")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fake", action="store_true", help="the deterministic test embedding, not the default model")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.fake:
        from tests.conftest import FakeEmbedding
        embed_model = FakeEmbedding()
    else:
        embed_model = default_embedding_model()
    bench = synthetic_contracts()
    documents = [Document(text=text, id_=doc_id) for doc_id, text in bench.documents.items()]
    nodes = RecursiveCharacterNodeParser()(documents)
    nodes = list(SummaryAugmentationTransformation(summarizer=ExtractiveSummarizer(), embed_model=embed_model)(nodes))
    index = VectorStoreIndex(nodes, storage_context=StorageContext.from_defaults(vector_store=NumpyVectorStore()),
                             embed_model=embed_model)
    doc_index = DocumentIndex.from_nodes(nodes)
    k = max(KS)

    def bm25(top_k: int) -> BM25Retriever:
        return BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=top_k)

    def fusion(top_k: int) -> QueryFusionRetriever:
        return QueryFusionRetriever([index.as_retriever(similarity_top_k=top_k), bm25(top_k)], llm=MockLLM(),
                                    mode=FUSION_MODES.RECIPROCAL_RANK, num_queries=1, similarity_top_k=top_k,
                                    use_async=False)

    candidates = DEFAULT_CANDIDATE_TOP_K
    retrievers: dict[str, BaseRetriever] = {
        "dense": index.as_retriever(similarity_top_k=k),
        "aware-dense": DocumentAwareRetriever(index, doc_index, similarity_top_k=k),
        "bm25": bm25(k),
        **{f"aware-bm25-{s}": DocumentAwareRetriever(bm25(candidates), doc_index, similarity_top_k=k, score_scale=s)
           for s in SCALES},
        "fusion": fusion(k),
        **{f"aware-fusion-{s}": DocumentAwareRetriever(fusion(candidates), doc_index, similarity_top_k=k,
                                                       score_scale=s) for s in (*SCALES, "max")},
    }
    report: dict[str, dict[str, float]] = {}
    for name, retriever in retrievers.items():
        per_k: dict[int, list[float]] = {kk: [] for kk in KS}
        for query in bench.queries:
            gold = query.gold_doc_ids
            found = [hit.node.ref_doc_id for hit in retriever.retrieve(query.query)]
            for kk in KS:
                top = found[:kk]
                per_k[kk].append(sum(d not in gold for d in top) / len(top) if top else 1.0)
        report[name] = {f"drm@{kk}": round(statistics.fmean(v), 4) for kk, v in per_k.items()}
        print(f"{name:22s} " + "  ".join(f"{m}={v:.3f}" for m, v in report[name].items()), flush=True)
    if args.json:
        args.json.write_text(json.dumps({"embedding": "fake" if args.fake else "default", "queries": len(bench.queries),
                                         "drm": report}, indent=2))


if __name__ == "__main__":
    main()
