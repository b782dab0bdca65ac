"""The most-confused document pairs (``llama_index_sac.evaluation.confusion``) with counts worked out by hand."""

from __future__ import annotations

from typing import Any

import pytest

from llama_index_sac.evaluation.confusion import confused_pairs


def test_confused_pairs_counts_wrong_document_chunks():
    records: list[dict[str, Any]] = [
        {"query_id": "q1", "gold": [["a", 0, 5]], "retrieved": [["b", 0, 5], ["a", 0, 5], ["b", 5, 9]],
         "scores": {}},
        {"query_id": "q2", "gold": [["a", 0, 5]], "retrieved": [["c", 0, 5], ["b", 0, 5]], "scores": {}},
        {"query_id": "q3", "gold": [], "retrieved": [["z", 0, 5]], "scores": None},  # ineligible: ignored
        {"query_id": "q4", "gold": [["a", 0, 5], ["d", 0, 2]], "retrieved": [["b", 3, 3], ["c", 1, 2]], "scores": {}},
    ]
    assert confused_pairs(records, k=2) == [
        {"gold": "a", "retrieved": "b", "chunks": 2, "queries": 2},
        {"gold": "a", "retrieved": "c", "chunks": 1, "queries": 1},
        {"gold": "a + d", "retrieved": "c", "chunks": 1, "queries": 1},  # the empty span b[3:3] is not counted
    ]
    assert confused_pairs(records, k=2, top=1) == [{"gold": "a", "retrieved": "b", "chunks": 2, "queries": 2}]
    for bad, error in (({"k": 0}, ValueError), ({"k": 2, "top": -1}, ValueError), ({"k": "2"}, TypeError)):
        with pytest.raises(error):
            confused_pairs(records, **bad)
