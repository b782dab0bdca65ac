"""Span arithmetic: union, length and intersection worked out by hand, plus properties against a brute force."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llama_index_sac.spans import intersection_length, merge_spans, spans_length, validate_span


def test_merge_by_hand():
    assert merge_spans([(5, 10), (0, 3), (3, 4), (8, 12), (20, 20), (15, 18)]) == [(0, 4), (5, 12), (15, 18)]
    assert merge_spans([]) == []


def test_lengths_by_hand():
    # [0,10) and [5,15) cover 15 characters; [20,25) adds 5
    assert spans_length([(0, 10), (5, 15), (20, 25), (7, 7)]) == 20
    # gold [10,60) vs retrieved [30,30) (empty) and [10,35): 25 characters in common
    assert intersection_length([(10, 60)], [(30, 30), (10, 35)]) == 25
    assert intersection_length([(0, 5)], [(5, 10)]) == 0
    assert intersection_length([(0, 10), (0, 10)], [(2, 4), (3, 6)]) == 4


@pytest.mark.parametrize("span, error", [((3, 1), ValueError), ((-1, 2), ValueError), ((0, 1.5), TypeError),
                                         ((True, 2), TypeError), ((0, 11), ValueError)])
def test_validate_span_errors(span, error):
    with pytest.raises(error):
        validate_span(span, text_length=10)


SPANS = st.lists(st.tuples(st.integers(0, 60), st.integers(0, 20)).map(lambda t: (t[0], t[0] + t[1])), max_size=12)


@given(SPANS, SPANS)
def test_against_brute_force(a, b):
    chars_a = {i for s, e in a for i in range(s, e)}
    chars_b = {i for s, e in b for i in range(s, e)}
    assert spans_length(a) == len(chars_a)
    assert intersection_length(a, b) == len(chars_a & chars_b)
    merged = merge_spans(a)
    assert all(x[1] < y[0] for x, y in zip(merged, merged[1:]))
