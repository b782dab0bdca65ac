"""SpanPrecisionMetric, SpanRecallMetric, DRMMetric and gold span ids (evaluation/llamaindex_metrics.py) in
LlamaIndex's RetrieverEvaluator; hostile fields and ids are one clear error."""

from __future__ import annotations

import math
import warnings

import pytest
from llama_index.core.evaluation import RetrieverEvaluator

from llama_index_sac.evaluation.evaluator import NodeLocationError, RetrievalQualityEvaluator
from llama_index_sac.evaluation.llamaindex_metrics import (
    DRMMetric,
    SpanPrecisionMetric,
    SpanRecallMetric,
    gold_span_id,
    parse_gold_span_id,
)
from llama_index_sac.evaluation.locations import node_locations
from tests.evaluation.test_evaluator import _ListRetriever, _node, _retriever
from tests.evaluation.test_metrics import A, B, S


def test_gold_span_ids_round_trip():
    span = S("cuad/x#1.txt", 5, 17)
    assert parse_gold_span_id(gold_span_id(span)) == span
    with pytest.raises(ValueError, match="gold span id"):
        parse_gold_span_id("cuad/x.txt")


def test_adapters_in_llamaindex_retriever_evaluator():
    nodes = [_node(A, 0, 100, "n1"), _node(B, 0, 100, "n2")]
    locations = node_locations(nodes)
    retriever = _ListRetriever({"first": nodes, "third": []})
    evaluator = RetrieverEvaluator(
        metrics=[
            SpanPrecisionMetric(node_locations=locations),
            SpanRecallMetric(node_locations=locations),
            DRMMetric(node_locations=locations),
            DRMMetric(node_locations=locations, k=1),
        ],
        retriever=retriever,
    )
    result = evaluator.evaluate("first", expected_ids=[gold_span_id(S(A, 0, 100))])
    values = result.metric_vals_dict
    assert values["span_precision"] == 0.5 and values["span_recall"] == 1.0
    # two DRM metrics share a name: the k=1 one (computed last) wins the dict slot -> 0.0; check both directly
    drm_all = DRMMetric(node_locations=locations).compute(expected_ids=[gold_span_id(S(A, 0, 100))],
                                                          retrieved_ids=["n1", "n2"])
    assert drm_all.score == 0.5 and drm_all.metadata["defined"] is True
    assert values["drm"] == 0.0
    # nothing retrieved: no exception (LlamaIndex's own metrics raise here, run-llama/llama_index#13926)
    empty = evaluator.evaluate("third", expected_ids=[gold_span_id(S(A, 0, 100))]).metric_dict
    assert empty["span_precision"].score == 0.0 and empty["span_recall"].score == 0.0
    assert math.isnan(empty["drm"].score) and empty["drm"].metadata["defined"] is False
    # no gold: ineligible, NaN with defined=False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        none = SpanRecallMetric(node_locations=locations).compute(expected_ids=[], retrieved_ids=["n1"])
    assert math.isnan(none.score) and none.metadata["defined"] is False


def test_adapter_unknown_node_id_is_a_clear_error():
    metric = SpanPrecisionMetric(node_locations={})
    with pytest.raises(NodeLocationError, match="node_locations"):
        metric.compute(expected_ids=[gold_span_id(S(A, 0, 1))], retrieved_ids=["zz"])


@pytest.mark.parametrize("metric_cls", [SpanPrecisionMetric, SpanRecallMetric, DRMMetric])
def test_adapters_refuse_reversed_gold_span_ids(metric_cls):
    """``"d1#9-2"`` used to parse as a zero-length gold span: NaN, "ineligible", without a word."""
    metric = metric_cls(node_locations=node_locations([_node(A, 0, 100, "n1")]))
    with pytest.raises(ValueError, match=r"expected id 'a.txt#9-2' is a reversed gold span id: start 9 > end 2"):
        metric.compute(expected_ids=[f"{A}#9-2"], retrieved_ids=["n1"])
    with pytest.raises(TypeError, match="expected_ids must be a list of ids, got str"):
        metric.compute(expected_ids=f"{A}#0-5", retrieved_ids=["n1"])
    with pytest.raises(TypeError, match="retrieved_ids must be a list of ids, got str 'n1'"):
        metric.compute(expected_ids=[f"{A}#0-5"], retrieved_ids="n1")
    with pytest.raises(TypeError, match="retrieved_ids must hold string ids, got 7"):
        metric.compute(expected_ids=[f"{A}#0-5"], retrieved_ids=[7])


def test_adapter_fields_and_gold_span_id_are_checked():
    with pytest.raises(ValueError, match=r"node_locations\['n1'\] span \('a.txt', 9, 2\): must satisfy"):
        DRMMetric(node_locations={"n1": (A, 9, 2)})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match=r"node_locations\['n1'\] must be a \(doc_id, start, end\) triple"):
        DRMMetric(node_locations={"n1": (A, 9)})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="k must be an int or None, got the bool True"):
        DRMMetric(node_locations={}, k=True)
    with pytest.raises(TypeError, match=r"span must be a \(doc_id, start, end\) triple, got \('a.txt', 5\)"):
        gold_span_id((A, 5))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must satisfy 0 <= start <= end"):
        gold_span_id((A, 5, 2))
    with pytest.raises(TypeError, match="must be a string"):
        parse_gold_span_id(5)  # type: ignore[arg-type]
    for bad in ({"ks": [True]}, {"ks": "1"}, {"workers": True}):
        with pytest.raises(ValueError):  # pydantic ValidationError naming the field
            RetrievalQualityEvaluator(retriever=_retriever(), **bad)
