"""Span metrics (evaluation/metrics.py) with values worked out by hand, empty inputs, aggregation, hostile
arguments."""

from __future__ import annotations

import warnings

import pytest

from llama_index_sac.evaluation.metrics import (
    LocatedSpan,
    QueryScores,
    aggregate,
    document_retrieval_mismatch,
    hit_rate,
    mean_or_none,
    reciprocal_rank,
    score_query,
    span_precision,
    span_recall,
)
from tests.conftest import load_case

A, B, C = "a.txt", "b.txt", "c.txt"


def S(doc: str, start: int, end: int) -> LocatedSpan:
    return LocatedSpan(doc, start, end)


# -- precision / recall ------------------------------------------------------------------------------------------


def test_precision_recall_single_overlap():
    # retrieved [0,100) in A, gold [50,150) in A: overlap 50 chars -> P = 50/100, R = 50/100
    assert span_precision([S(A, 0, 100)], [S(A, 50, 150)]) == 0.5
    assert span_recall([S(A, 0, 100)], [S(A, 50, 150)]) == 0.5


def test_precision_recall_two_chunks_one_wrong_document():
    # retrieved A[0,100) + B[0,100) = 200 chars; gold A[20,60) = 40 chars, fully covered
    retrieved, gold = [S(A, 0, 100), S(B, 0, 100)], [S(A, 20, 60)]
    assert span_precision(retrieved, gold) == 40 / 200
    assert span_recall(retrieved, gold) == 1.0


def test_same_offsets_in_another_document_do_not_count():
    # same character range, different document: no overlap at all
    assert span_precision([S(B, 0, 100)], [S(A, 0, 100)]) == 0.0
    assert span_recall([S(B, 0, 100)], [S(A, 0, 100)]) == 0.0


def test_overlapping_chunks_are_not_counted_twice():
    # chunks A[0,100) and A[50,150) overlap by 50: the union is A[0,150) = 150 chars (not 200);
    # gold A[80,120) = 40 chars lies inside both chunks: counted once -> P = 40/150, R = 1
    retrieved = [S(A, 0, 100), S(A, 50, 150)]
    assert span_precision(retrieved, [S(A, 80, 120)]) == pytest.approx(40 / 150)
    assert span_recall(retrieved, [S(A, 80, 120)]) == 1.0


def test_repeated_chunk_is_not_counted_twice():
    # the same chunk returned twice: union = 100 chars, overlap with gold A[0,10) = 10
    assert span_precision([S(A, 0, 100), S(A, 0, 100)], [S(A, 0, 10)]) == 0.1
    assert span_recall([S(A, 0, 100), S(A, 0, 100)], [S(A, 0, 10)]) == 1.0


def test_overlapping_gold_spans_are_merged():
    # gold A[0,60) and A[40,100) -> union A[0,100) = 100 chars; retrieved A[50,150): overlap 50
    gold = [S(A, 0, 60), S(A, 40, 100)]
    assert span_recall([S(A, 50, 150)], gold) == 0.5
    assert span_precision([S(A, 50, 150)], gold) == 0.5


def test_gold_in_two_documents():
    # gold A[0,10) (10 chars) and B[0,30) (30 chars) = 40; retrieved covers B[0,30) exactly -> R = 30/40, P = 1
    gold = [S(A, 0, 10), S(B, 0, 30)]
    assert span_recall([S(B, 0, 30)], gold) == 0.75
    assert span_precision([S(B, 0, 30)], gold) == 1.0


def test_non_overlapping_chunks_match_legalbench_rag_formula():
    # LegalBench-RAG sums pairwise overlaps; with disjoint chunks and disjoint gold the unions give the same values.
    retrieved = [S(A, 0, 500), S(A, 500, 1000), S(B, 0, 500)]
    gold = [S(A, 400, 600), S(B, 450, 550)]
    total_retrieved = sum(r.end - r.start for r in retrieved)
    total_gold = sum(g.end - g.start for g in gold)
    pairwise = sum(
        max(0, min(r.end, g.end) - max(r.start, g.start)) for r in retrieved for g in gold if r.doc_id == g.doc_id
    )
    assert pairwise == 100 + 100 + 50
    assert span_precision(retrieved, gold) == pairwise / total_retrieved == 250 / 1500
    assert span_recall(retrieved, gold) == pairwise / total_gold == 250 / 300


def test_adjacent_spans_touch_without_overlap():
    # half-open: [0,50) and [50,100) share no character
    assert span_precision([S(A, 0, 50)], [S(A, 50, 100)]) == 0.0


def test_values_stay_in_unit_interval_for_many_duplicates():
    retrieved = [S(A, 0, 100)] * 5 + [S(A, 20, 80)] * 3
    p, r = span_precision(retrieved, [S(A, 0, 100)]), span_recall(retrieved, [S(A, 0, 100)])
    assert p == 1.0 and r == 1.0


@pytest.mark.parametrize("bad", [S(A, 5, 2), S(A, -1, 3)])
def test_malformed_spans_raise(bad):
    with pytest.raises(ValueError):
        span_precision([bad], [S(A, 0, 10)])
    with pytest.raises(ValueError):
        span_recall([S(A, 0, 10)], [bad])


def test_non_int_bounds_raise():
    with pytest.raises(TypeError):
        span_precision([LocatedSpan(A, 0.0, 5)], [S(A, 0, 10)])  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        span_precision([LocatedSpan("", 0, 5)], [S(A, 0, 10)])


# -- DRM, hit rate, MRR ---------------------------------------------------------------------------------------------


def test_drm_share_of_chunks_from_wrong_documents():
    # 4 chunks: A, B, A, C with gold document A -> 2 of 4 from wrong documents
    retrieved = [S(A, 0, 10), S(B, 0, 10), S(A, 10, 20), S(C, 0, 10)]
    assert document_retrieval_mismatch(retrieved, {A}) == 0.5
    assert document_retrieval_mismatch(retrieved, {A, B}) == 0.25
    assert document_retrieval_mismatch(retrieved, {C}) == 0.75


def test_drm_counts_slots_not_characters():
    # a long right chunk and a short wrong one: DRM is 1/2 whatever their lengths
    assert document_retrieval_mismatch([S(A, 0, 1000), S(B, 0, 1)], {A}) == 0.5


def test_drm_is_attributed_by_document_id_not_text():
    # a chunk of B whose offsets equal the gold span of A is still a mismatch
    assert document_retrieval_mismatch([S(B, 0, 50)], {A}) == 1.0


def test_hit_rate_and_mrr():
    gold = [S(A, 100, 200)]
    retrieved = [S(B, 100, 200), S(A, 0, 100), S(A, 150, 160)]  # the third chunk is the first to overlap gold
    assert hit_rate(retrieved, gold) == 1.0
    assert reciprocal_rank(retrieved, gold) == pytest.approx(1 / 3)
    assert hit_rate(retrieved[:2], gold) == 0.0
    assert reciprocal_rank(retrieved[:2], gold) == 0.0


def test_score_query_truncates_at_each_k():
    # gold A[0,100); ranking: B[0,100), A[0,100), A[100,200)
    gold = [S(A, 0, 100)]
    ranking = [S(B, 0, 100), S(A, 0, 100), S(A, 100, 200)]
    scores = score_query(ranking, gold, ks=[1, 2, 3, 10])
    assert scores is not None
    # k=1: only B -> P 0, R 0, DRM 1
    assert (scores[1].precision, scores[1].recall, scores[1].drm, scores[1].mrr) == (0.0, 0.0, 1.0, 0.0)
    # k=2: B + A[0,100) -> 100/200 precision, full recall, DRM 1/2, first hit at rank 2
    assert (scores[2].precision, scores[2].recall, scores[2].drm, scores[2].mrr) == (0.5, 1.0, 0.5, 0.5)
    # k=3: 100/300, DRM 1/3
    assert scores[3].precision == pytest.approx(1 / 3) and scores[3].drm == pytest.approx(1 / 3)
    # k=10 with 3 retrieved: same as k=3, n_retrieved says so
    assert scores[10].precision == scores[3].precision and scores[10].n_retrieved == 3


def test_score_query_rejects_bad_k():
    with pytest.raises(ValueError):
        score_query([S(A, 0, 1)], [S(A, 0, 1)], ks=[0, 1])


# -- case 20: nothing retrieved, no gold, zero-length spans, empty dataset --------------------------------------------


def _case20_spans(pairs):
    return [LocatedSpan(doc, start, end) for doc, start, end in pairs]


def test_empty_inputs():
    case = load_case("20")
    k = case["params"]["k"]
    expected = case["expected_values"]
    records = []
    for query in case["input"]["queries"]:
        gold, retrieved = _case20_spans(query["gold_spans"]), _case20_spans(query["retrieved"])
        scores = score_query(retrieved, gold, ks=[k])  # never raises
        records.append({"dataset": "case20", "query_id": query["id"], "scores": scores})
        want = expected[query["id"]]
        if want == "ineligible (excluded)":
            assert scores is None
            continue
        assert scores is not None
        got = scores[k]
        for name, value in want.items():
            assert getattr(got, name) == value, (query["id"], name)
    agg = aggregate(records, ks=[k])
    summary = agg["datasets"]["case20"][k]
    assert summary["recall"] == expected["mean_recall_over_eligible"] == 0.25
    assert summary["n_queries"] == 2 and summary["ineligible"] == 1
    # DRM: q_none_retrieved is undefined and left out; only q_zero_len (0.0) counts
    assert summary["drm"] == 0.0 and summary["drm_undefined"] == 1
    # precision: 0 (convention) and 1.0 -> 0.5
    assert summary["precision"] == 0.5


def test_dataset_with_only_ineligible_query_gives_none_and_warns():
    with pytest.warns(UserWarning, match="no eligible"):
        agg = aggregate([{"dataset": "d", "scores": score_query([S(A, 0, 40)], [], ks=[5])}], ks=[5])
    assert agg["datasets"]["d"][5]["recall"] is None
    assert agg["overall"][5]["recall"] is None and agg["overall"][5]["n_datasets"] == 0


def test_nothing_retrieved_conventions():
    scores = score_query([], [S(A, 0, 50)], ks=[1, 4])
    assert scores is not None
    for k in (1, 4):
        assert (scores[k].precision, scores[k].recall, scores[k].hit_rate, scores[k].mrr) == (0.0, 0.0, 0.0, 0.0)
        assert scores[k].drm is None


def test_only_zero_length_chunks_retrieved_is_nothing_retrieved():
    scores = score_query([S(B, 5, 5), S(A, 10, 10)], [S(A, 0, 50)], ks=[2])
    assert scores is not None and scores[2].drm is None and scores[2].precision == 0.0


def test_zero_length_gold_span_is_ignored():
    # gold A[0,0) carries nothing: only B[0,10) counts
    assert score_query([S(B, 0, 10)], [S(A, 0, 0), S(B, 0, 10)], ks=[1])[1].recall == 1.0  # type: ignore[index]
    assert score_query([S(B, 0, 10)], [S(A, 0, 0)], ks=[1]) is None
    # and a zero-length gold span does not make its document a gold document for DRM
    assert score_query([S(A, 0, 10)], [S(A, 3, 3), S(B, 0, 10)], ks=[1])[1].drm == 1.0  # type: ignore[index]


def test_mean_or_none():
    assert mean_or_none([0.25, None, 0.75]) == 0.5
    with pytest.warns(UserWarning):
        assert mean_or_none([None, None], "drm") is None
    with pytest.warns(UserWarning):
        assert mean_or_none([]) is None


def test_metric_warnings_point_at_the_callers_line():
    """The three warnings of metrics.py name this file's line, not a line inside the package."""
    only_ineligible = [{"dataset": "d", "scores": None}]
    calls = [
        lambda: mean_or_none([]),
        lambda: aggregate(only_ineligible, ks=[1]),  # "dataset 'd' has no eligible query" + "no eligible query in any"
        lambda: aggregate([], ks=[1]),
    ]
    for call in calls:
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            call()
        assert record, call
        assert {(w.filename, w.lineno) for w in record} == {(__file__, call.__code__.co_firstlineno)}


# -- aggregation ------------------------------------------------------------------------------------------------


def _rec(dataset, precision, recall, drm):
    scores = {1: {"precision": precision, "recall": recall, "drm": drm, "hit_rate": 1.0, "mrr": 1.0}}
    return {"dataset": dataset, "scores": scores}


def test_overall_is_unweighted_mean_of_dataset_means():
    # dataset x: 3 queries with recall 1, 0, 0.5 -> 0.5; dataset y: 1 query with recall 1 -> 1.0
    # overall = (0.5 + 1.0) / 2 = 0.75 (a query-weighted mean would give 0.625)
    records = [_rec("x", 1, 1, 0), _rec("x", 0, 0, 1), _rec("x", 0.5, 0.5, 0.5), _rec("y", 1, 1, None)]
    agg = aggregate(records, ks=[1])
    assert agg["datasets"]["x"][1]["recall"] == 0.5
    assert agg["datasets"]["y"][1]["recall"] == 1.0
    assert agg["overall"][1]["recall"] == 0.75
    # DRM: x = (0 + 1 + 0.5)/3 = 0.5; y has no defined DRM -> None and left out of the overall mean
    assert agg["datasets"]["x"][1]["drm"] == 0.5
    assert agg["datasets"]["y"][1]["drm"] is None and agg["datasets"]["y"][1]["drm_undefined"] == 1
    assert agg["overall"][1]["drm"] == 0.5
    assert agg["overall"][1]["n_queries"] == 4 and agg["overall"][1]["n_datasets"] == 2


def test_aggregate_accepts_string_keys_after_json_round_trip():
    record = {"dataset": "x", "scores": {"1": {"precision": 0.2, "recall": 0.4, "drm": 0.0, "hit_rate": 1, "mrr": 1}}}
    assert aggregate([record], ks=[1])["overall"][1]["recall"] == 0.4


def test_aggregate_no_records_warns():
    with pytest.warns(UserWarning):
        agg = aggregate([], ks=[1])
    assert agg["overall"][1]["precision"] is None


# -- hostile input: one clear error naming the argument, never a silent value --------------------------

_SPAN_FUNCTIONS = {
    "span_precision": lambda r: span_precision(r, [S(A, 0, 10)]),
    "span_recall": lambda r: span_recall(r, [S(A, 0, 10)]),
    "hit_rate": lambda r: hit_rate(r, [S(A, 0, 10)]),
    "reciprocal_rank": lambda r: reciprocal_rank(r, [S(A, 0, 10)]),
    "document_retrieval_mismatch": lambda r: document_retrieval_mismatch(r, {A}),
    "score_query": lambda r: score_query(r, [S(A, 0, 10)], ks=[1]),
}


@pytest.mark.parametrize("name", list(_SPAN_FUNCTIONS))
@pytest.mark.parametrize("retrieved, message", [
    ([(A, 5)], r"retrieved\[0\] is \('a.txt', 5\): each span must be a \(doc_id, start, end\) triple"),
    ([S(A, 0, 5), "a.txt"], r"retrieved\[1\] is 'a.txt': each span must be a \(doc_id, start, end\) triple"),
    (S(A, 0, 5), r"retrieved must be a list of \(doc_id, start, end\) spans, got the single span"),
    ("a.txt", r"retrieved must be a list of \(doc_id, start, end\) spans, got str"),
    (5, r"retrieved must be a list of \(doc_id, start, end\) spans, got int"),
    ([S(A, True, 5)], r"retrieved span \('a.txt', True, 5\): start and end must be ints"),
])
def test_malformed_retrieved_argument_is_named(name, retrieved, message):
    with pytest.raises(TypeError, match=message):
        _SPAN_FUNCTIONS[name](retrieved)


@pytest.mark.parametrize("name", ["span_precision", "span_recall", "hit_rate", "reciprocal_rank"])
def test_malformed_gold_argument_is_named(name):
    function = globals()[name]
    with pytest.raises(TypeError, match=r"gold\[0\] is \('a.txt', 0\): each span must be"):
        function([S(A, 0, 5)], [(A, 0)])
    with pytest.raises(ValueError, match=r"gold span \('a.txt', 9, 2\): must satisfy 0 <= start <= end"):
        function([S(A, 0, 5)], [S(A, 9, 2)])


@pytest.mark.parametrize("gold_ids, error, message", [
    ("a.txt", TypeError, "gold_doc_ids must be a collection of document ids"),
    (b"a.txt", TypeError, "gold_doc_ids must be a collection of document ids"),
    ({1}, TypeError, "gold_doc_ids must hold document ids as strings, got 1"),
    (None, TypeError, "gold_doc_ids must be a collection of document ids"),
])
def test_drm_gold_ids_must_be_a_collection_of_strings(gold_ids, error, message):
    """A string used to be iterated as its characters: DRM 1.0 for a chunk of the gold document itself."""
    with pytest.raises(error, match=message):
        document_retrieval_mismatch([S(A, 0, 5)], gold_ids)
    assert document_retrieval_mismatch([S(A, 0, 5), S(B, 0, 5)], [A]) == 0.5  # any collection of ids works


@pytest.mark.parametrize("ks, error", [(5, TypeError), ([True], TypeError), ([1.5], TypeError), ("1", TypeError),
                                       ([], ValueError), ([0, 1], ValueError)])
def test_k_values_must_be_positive_ints(ks, error):
    with pytest.raises(error, match="ks must be|k values must be positive"):
        score_query([S(A, 0, 1)], [S(A, 0, 1)], ks=ks)
    with pytest.raises(error, match="ks must be|k values must be positive"):
        aggregate([], ks=ks)


@pytest.mark.parametrize("values, error, message", [
    ([0.5, float("nan")], ValueError, "must be finite, got nan"),
    ([0.5, float("inf")], ValueError, "must be finite, got inf"),
    ([0.5, "0.5"], TypeError, "must be numbers or None, got '0.5'"),
    ([True], TypeError, "must be numbers or None, got True"),
    ("0.5", TypeError, "must be an iterable of numbers or None, got str"),
])
def test_mean_or_none_refuses_what_is_not_a_finite_number(values, error, message):
    with pytest.raises(error, match=message):
        mean_or_none(values, "precision")


def test_aggregate_names_the_bad_record_or_argument():
    scores = {"1": QueryScores(1, 0.5, 0.5, 0.0, 1.0, 1.0, 1).as_dict()}
    with pytest.raises(TypeError, match="metrics must be a list of metric names, got the string 'drm'"):
        aggregate([{"dataset": "d", "scores": scores}], ks=[1], metrics="drm")
    with pytest.raises(ValueError, match=r"unknown metric name\(s\) \['ndcg'\]"):
        aggregate([{"dataset": "d", "scores": scores}], ks=[1], metrics=["ndcg"])
    with pytest.raises(TypeError, match=r"records\[1\] must be a mapping"):
        aggregate([{"dataset": "d", "scores": scores}, "d"], ks=[1])  # type: ignore[list-item]
    with pytest.raises(ValueError, match=r"records\[0\] has no 'dataset' key"):
        aggregate([{"scores": scores}], ks=[1])
    with pytest.raises(TypeError, match=r"records\[0\]\['scores'\] must be None or a mapping"):
        aggregate([{"dataset": "d", "scores": [0.5]}], ks=[1])
    with pytest.raises(TypeError, match="records must be an iterable of mappings"):
        aggregate({"dataset": "d", "scores": scores}, ks=[1])  # type: ignore[dict-item]
    assert aggregate([{"dataset": "d", "scores": scores}], ks=[1])["overall"][1]["precision"] == 0.5
