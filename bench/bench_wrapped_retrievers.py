"""DRM@k of DocumentAwareRetriever around retrievers other than a vector index (issue 39, item 3: one scale).

On the built-in contracts (``synthetic_contracts()``: 24 contracts, 108 queries), chunked by
``RecursiveCharacterNodeParser()``, summarized by ``ExtractiveSummarizer()`` (SAC) and embedded by the default
model, side by side in one run:

- ``dense`` / ``aware-dense``: the vector index's top k, and the package default around it; ``aware-dense-wrapped``:
  the default around a dense retriever of the top ``candidate_top_k`` that is not a vector index's (no focus
  documents, as around BM25);
- ``bm25``: ``BM25Retriever`` over the same nodes (its top k); ``aware-bm25-<scale>``: the default
  ``DocumentAwareRetriever`` around a ``BM25Retriever`` of the top ``candidate_top_k``, with ``score_scale`` =
  ``as-is`` (the raw BM25 scores, as before 0.3), ``auto`` (the default: ``band``, the best 1 and the worst
  ``1 - COSINE_SPAN``) and ``max`` (divided by the query's best);
- ``fusion``: ``QueryFusionRetriever`` of dense + BM25 by reciprocal rank; ``aware-fusion-<scale>`` around it.

DRM@k: the share of a query's top k chunks that are not from a gold document, averaged over the queries (Reuter et
al., arXiv 2510.06999). Every weight is the package default (chosen on LegalBench-RAG, not on these contracts);
``COSINE_SPAN`` was measured on the built-in contracts of seed 1 (other contracts, other
parties, other queries) with ``--seed 1 --spans``, and ``band`` was chosen over ``max`` there.

    python bench/bench_wrapped_retrievers.py --seed 1 --spans        # COSINE_SPAN and the choice of band
    python bench/bench_wrapped_retrievers.py --json /tmp/wrapped.json    # the results (seed 0)
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
from llama_index.core.schema import NodeWithScore, QueryBundle
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


class _Wrapped(BaseRetriever):
    """``inner``'s results, from a retriever that is not a ``VectorIndexRetriever`` (so it is wrapped as it is)."""

    def __init__(self, inner: BaseRetriever) -> None:
        super().__init__()
        self.inner = inner

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self.inner.retrieve(query_bundle)
SCALES = ("as-is", "auto", "max")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0, help="the built-in contracts' seed (0: those scored)")
    parser.add_argument("--spans", action="store_true", help="also print the median cosine span of the dense "
                        "candidates (best minus the candidate_top_k-th), as COSINE_SPAN was measured")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    embed_model = default_embedding_model()
    bench = synthetic_contracts(seed=args.seed)
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
    spans = None
    if args.spans:
        dense = index.as_retriever(similarity_top_k=candidates)
        spans = [(found[0].score or 0.0) - (found[-1].score or 0.0)
                 for found in (dense.retrieve(q.query) for q in bench.queries)]
        print(f"median cosine span over the top {candidates}: {statistics.median(spans):.4f}", flush=True)
    retrievers: dict[str, BaseRetriever] = {
        "dense": index.as_retriever(similarity_top_k=k),
        "aware-dense": DocumentAwareRetriever(index, doc_index, similarity_top_k=k),
        "aware-dense-wrapped": DocumentAwareRetriever(_Wrapped(index.as_retriever(similarity_top_k=candidates)),
                                                      doc_index, similarity_top_k=k),
        "bm25": bm25(k),
        **{f"aware-bm25-{s}": DocumentAwareRetriever(bm25(candidates), doc_index, similarity_top_k=k, score_scale=s)
           for s in SCALES},
        "fusion": fusion(k),
        **{f"aware-fusion-{s}": DocumentAwareRetriever(fusion(candidates), doc_index, similarity_top_k=k,
                                                       score_scale=s) for s in (*SCALES, "band")},
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
        args.json.write_text(json.dumps({"seed": args.seed,
                                         "queries": len(bench.queries),
                                         "median_span": statistics.median(spans) if spans else None,
                                         "drm": report}, indent=2))


if __name__ == "__main__":
    main()
