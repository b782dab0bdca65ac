"""RetrievalQualityEvaluator and locate_node (evaluation/evaluator.py): per-query records and aggregates worked out
by hand, sync and async alike, nodes that cannot be located."""

from __future__ import annotations

import pytest
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeRelationship, NodeWithScore, QueryBundle, RelatedNodeInfo, TextNode

from llama_index_sac.apps.benchmark.datasets.base import BenchmarkQuery
from llama_index_sac.evaluation.evaluator import NodeLocationError, RetrievalQualityEvaluator, locate_node
from tests.evaluation.test_metrics import A, B, S


def _node(doc: str | None, start: int | None, end: int | None, node_id: str) -> TextNode:
    node = TextNode(id_=node_id, text="x", start_char_idx=start, end_char_idx=end)
    if doc is not None:
        node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=doc)
    return node


class _ListRetriever(BaseRetriever):
    """Returns a fixed ranking per query string (records the query bundles it sees)."""

    def __init__(self, rankings: dict[str, list[TextNode]]):
        super().__init__()
        self.rankings = rankings
        self.bundles: list[QueryBundle] = []

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        self.bundles.append(query_bundle)
        return [NodeWithScore(node=n, score=1.0) for n in self.rankings[query_bundle.query_str]]


def _queries():
    return [
        BenchmarkQuery("q1", "first", (S(A, 0, 100),), "x"),
        BenchmarkQuery("q2", "second", (S(B, 0, 100),), "y"),
        BenchmarkQuery("q3", "third", (S(A, 0, 100),), "y"),
    ]


def _retriever():
    return _ListRetriever(
        {
            "first": [_node(A, 0, 100, "n1"), _node(B, 0, 100, "n2")],
            "second": [_node(A, 0, 100, "n1"), _node(B, 50, 150, "n3")],
            "third": [],
        }
    )


def test_evaluator_records_and_aggregates():
    evaluator = RetrievalQualityEvaluator(retriever=_retriever(), ks=[2, 1])
    result = evaluator.evaluate_dataset(_queries(), query_embeddings={"q1": [0.1, 0.2]})
    assert evaluator.ks == [1, 2]
    by_id = {r.query_id: r for r in result.records}
    assert [r.query_id for r in result.records] == ["q1", "q2", "q3"]
    # q1 k=2: A[0,100) + B[0,100): P = 100/200, R = 1, DRM = 1/2
    s = by_id["q1"].scores[2]  # type: ignore[index]
    assert (s.precision, s.recall, s.drm) == (0.5, 1.0, 0.5)
    # q2 k=2: gold B[0,100), retrieved A[0,100) + B[50,150): overlap 50 -> P 50/200, R 0.5, DRM 1/2
    s = by_id["q2"].scores[2]  # type: ignore[index]
    assert (s.precision, s.recall, s.drm) == (0.25, 0.5, 0.5)
    # q3: nothing retrieved -> DRM None
    assert by_id["q3"].scores[2].drm is None  # type: ignore[index]
    agg = result.aggregates
    assert agg["datasets"]["y"][2]["precision"] == pytest.approx(0.125)  # (0.25 + 0) / 2
    assert agg["datasets"]["y"][2]["drm"] == 0.5 and agg["datasets"]["y"][2]["drm_undefined"] == 1
    assert result.overall("recall", 2) == pytest.approx((1.0 + 0.25) / 2)
    assert by_id["q1"].as_dict()["scores"]["2"]["drm"] == 0.5


def test_evaluator_async_equals_sync_and_passes_query_embedding():
    import asyncio

    retriever = _retriever()
    evaluator = RetrievalQualityEvaluator(retriever=retriever, ks=[1, 2])
    sync = evaluator.evaluate_dataset(_queries(), {"q1": [0.5, 0.5]})
    asyn = asyncio.run(evaluator.aevaluate_dataset(_queries(), {"q1": [0.5, 0.5]}))
    assert [r.as_dict() | {"seconds": 0} for r in sync.records] == [
        r.as_dict() | {"seconds": 0} for r in asyn.records
    ]
    assert sync.aggregates == asyn.aggregates
    first = [b for b in retriever.bundles if b.query_str == "first"]
    assert first and all(b.embedding == [0.5, 0.5] for b in first)
    assert evaluator.evaluate(_queries()[0]).scores[1].precision == 1.0  # type: ignore[index]


def test_node_without_document_id_or_offsets_names_what_is_missing():
    with pytest.raises(NodeLocationError, match="n9.*document id"):
        locate_node(_node(None, 0, 10, "n9"))
    with pytest.raises(NodeLocationError, match="n8.*start_char_idx"):
        locate_node(_node(A, None, None, "n8"))
    node = _node(None, 0, 10, "n7")
    node.metadata["file_path"] = "a.txt"
    assert locate_node(node, doc_id_metadata_key="file_path") == S(A, 0, 10)
    evaluator = RetrievalQualityEvaluator(retriever=_ListRetriever({"first": [_node(None, 0, 1, "nx")]}), ks=[1])
    with pytest.raises(NodeLocationError, match="nx"):
        evaluator.evaluate(_queries()[0])
