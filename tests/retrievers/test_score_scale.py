"""One scale for any retriever (``score_scale``, :func:`~llama_index_sac.retrievers.ranking.scaled_scores`): the
candidates' scores are put on one scale before the prior and the lexical score are added, so the weights mean the same
around a vector index (cosine, kept as it is), a ``BM25Retriever`` (mapped onto a cosine's spread over the
candidates, ``COSINE_SPAN``) and a ``QueryFusionRetriever``; the postprocessor the same."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llama_index.core.llms import MockLLM
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
from llama_index.core.schema import NodeWithScore, QueryBundle

from llama_index_sac import DocumentAwarePostprocessor, DocumentAwareRetriever, DocumentIndex
from llama_index_sac.constants import COSINE_SPAN
from llama_index_sac.retrievers.options import RankingOptions
from llama_index_sac.retrievers.ranking import scaled_scores
from tests.retrievers.test_document_retrieval import build, corpus
from tests.retrievers.test_document_retrieval_api import QUESTION, Fixed, hits

pytest.importorskip("bm25s")

NODES = corpus()
DOCUMENTS = DocumentIndex.from_nodes(NODES)
#: names Osprey's NDA; its words are the boilerplate clause's, which every contract holds
BM25_QUERY = "Osprey Robotics Confidential Information secret"


def _scores(found: list[NodeWithScore]) -> list[float | None]:
    return [hit.score for hit in found]


def _band(found: list[NodeWithScore]) -> list[NodeWithScore]:
    """``found`` mapped by hand: ``1 - COSINE_SPAN * (best - s) / (best - worst)``."""
    scores = [hit.score or 0.0 for hit in found]
    best, worst = max(scores), min(scores)
    return [NodeWithScore(node=hit.node, score=1.0 - COSINE_SPAN * (best - s) / (best - worst))
            for hit, s in zip(found, scores)]


def _ranked(found: list[NodeWithScore]) -> list[tuple[str, float]]:
    return [(hit.node.node_id, round(hit.score or 0.0, 9)) for hit in found]


def test_scaled_scores_hand_worked() -> None:
    bm25 = hits(("nda-kestrel.txt#0", 10.0), ("nda-osprey.txt#0", 8.0), ("msa-acme.txt#0", 4.0))
    assert COSINE_SPAN == 0.4
    # the best 1, the worst 1 - 0.4, 8 at 1 - 0.4 * (10 - 8) / (10 - 4)
    assert _scores(scaled_scores(bm25, "band")) == pytest.approx([1.0, 1.0 - 0.4 / 3, 0.6])
    assert _scores(scaled_scores(bm25, "auto")) == _scores(scaled_scores(bm25, "band"))  # above 1: not a cosine
    assert _scores(scaled_scores(bm25, "max")) == [1.0, 0.8, 0.4]
    assert _scores(scaled_scores(bm25, "as-is")) == [10.0, 8.0, 4.0]
    cosine = hits(("nda-kestrel.txt#0", 0.62), ("nda-osprey.txt#0", -0.1))
    assert _scores(scaled_scores(cosine, "auto")) == [0.62, -0.1]  # in [-1, 1]: kept as it is
    rounded = hits(("nda-kestrel.txt#0", 1.00000012), ("nda-osprey.txt#0", 0.5))  # float32: a vector with itself
    assert _scores(scaled_scores(rounded, "auto")) == [1.00000012, 0.5]
    assert _scores(scaled_scores(hits(("nda-kestrel.txt#0", 1.5), ("nda-osprey.txt#0", 0.75)), "auto")) \
        == pytest.approx([1.0, 0.6])
    assert _scores(scaled_scores(cosine, "max")) == pytest.approx([1.0, -0.1 / 0.62])
    signed = hits(("nda-kestrel.txt#0", -4.0), ("nda-osprey.txt#0", 2.0))
    assert _scores(scaled_scores(signed, "max")) == [-1.0, 0.5]  # by the largest absolute score: 0 stays 0
    assert _scores(scaled_scores(signed, "auto")) == pytest.approx([0.6, 1.0])
    # None counts as 0; all 0 or all equal: nothing to divide by
    assert _scores(scaled_scores(hits(("nda-kestrel.txt#0", 3.0)) + [NodeWithScore(node=NODES[1])], "max")) \
        == [1.0, 0.0]
    assert _scores(scaled_scores(hits(("nda-kestrel.txt#0", 0.0), ("nda-osprey.txt#0", 0.0)), "max")) == [0.0, 0.0]
    assert _scores(scaled_scores(hits(("nda-kestrel.txt#0", 7.0), ("nda-osprey.txt#0", 7.0)), "auto")) \
        == [1.0, 1.0]
    assert scaled_scores([], "max") == []
    assert bm25[0].score == 10.0  # new objects: the retriever's hits are not changed
    with pytest.raises(ValueError, match="score_scale must be one of"):
        scaled_scores(bm25, "z-score")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="score_scale"):
        RankingOptions(score_scale="z-score")  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(scores=st.lists(st.floats(-50.0, 50.0), min_size=1, max_size=len(NODES)),
       scale=st.sampled_from(["auto", "as-is", "band", "max"]))
def test_a_scale_keeps_the_order_of_the_scores(scores: list[float], scale: str) -> None:
    found = [NodeWithScore(node=NODES[i], score=s) for i, s in enumerate(scores)]
    scaled = _scores(scaled_scores(found, scale))  # type: ignore[arg-type]
    for i in range(len(scores)):
        for j in range(len(scores)):
            if scores[i] < scores[j]:
                assert scaled[i] <= scaled[j]  # type: ignore[operator]
    if scale in ("band", "max", "auto") and max(map(abs, scores)) > 1:
        assert all(-1.0 <= s <= 1.0 for s in scaled)  # type: ignore[operator]


def test_the_weights_mean_the_same_around_bm25_scores_as_around_cosine() -> None:
    # BM25-like scores 9, 8, 5 are put at 1, 0.9, 0.6 (the best 1, the worst 1 - 0.4): the prior (Osprey: 1.0) at 0.3
    # lifts Osprey's chunk as it lifts a cosine 0.9 over 1.0: 0.9 + 0.3 * 1 + 0.1 * 1 (the question's words: Osprey's
    # clause, in the document located) against 1.0
    raw = hits(("nda-kestrel.txt#0", 9.0), ("nda-osprey.txt#0", 8.0), ("msa-acme.txt#1", 5.0))
    cosine = hits(("nda-kestrel.txt#0", 1.0), ("nda-osprey.txt#0", 0.9), ("msa-acme.txt#1", 0.6))
    expected = [("nda-osprey.txt#0", 1.3), ("nda-kestrel.txt#0", 1.0)]
    for found in (raw, cosine):
        assert _ranked(DocumentAwareRetriever(Fixed(found), DOCUMENTS, similarity_top_k=2).retrieve(QUESTION)) \
            == expected
        post = DocumentAwarePostprocessor(DOCUMENTS, top_n=2)
        assert _ranked(post.postprocess_nodes(list(found), QueryBundle(query_str=QUESTION))) == expected
    # as before 0.3: the prior in cosine units added to raw BM25 scores cannot move the order
    as_is = DocumentAwareRetriever(Fixed(raw), DOCUMENTS, similarity_top_k=2, score_scale="as-is")
    assert _ranked(as_is.retrieve(QUESTION)) == [("nda-kestrel.txt#0", 9.0), ("nda-osprey.txt#0", 8.4)]


def test_around_a_bm25_retriever_the_scores_are_put_on_a_cosines_spread() -> None:
    bm25 = pytest.importorskip("llama_index.retrievers.bm25")
    inner = bm25.BM25Retriever.from_defaults(nodes=NODES, similarity_top_k=6)
    plain = inner.retrieve(BM25_QUERY)
    best = max(hit.score or 0.0 for hit in plain)
    assert best > 1.0  # raw BM25: not a cosine
    aware = DocumentAwareRetriever(inner, DOCUMENTS, similarity_top_k=3)
    assert aware.options.score_scale == "auto"
    found = aware.retrieve(BM25_QUERY)
    # the best chunk is Osprey's clause: 1 (the best BM25) + 0.3 * prior 1.0 + 0.1 * its lexical score 1.0
    assert _ranked(found)[0] == ("nda-osprey.txt#0", 1.4)
    # the same as the ranking of the hits mapped by hand
    assert _ranked(found) == _ranked(DocumentAwareRetriever(Fixed(_band(plain)), DOCUMENTS,
                                                            similarity_top_k=3).retrieve(BM25_QUERY))
    # and the postprocessor over the BM25 retriever's chunks gives the same
    post = DocumentAwarePostprocessor(DOCUMENTS, top_n=3)
    assert _ranked(post.postprocess_nodes(plain, QueryBundle(query_str=BM25_QUERY))) == _ranked(found)


def test_around_a_query_fusion_retriever() -> None:
    bm25 = pytest.importorskip("llama_index.retrievers.bm25")
    index = build(NODES)
    fusion = QueryFusionRetriever([index.as_retriever(similarity_top_k=6),
                                   bm25.BM25Retriever.from_defaults(nodes=NODES, similarity_top_k=6)],
                                  llm=MockLLM(), mode=FUSION_MODES.RECIPROCAL_RANK, num_queries=1,
                                  similarity_top_k=6, use_async=False)
    plain = fusion.retrieve(BM25_QUERY)
    assert all(0.0 < (hit.score or 0.0) < 1.0 for hit in plain)  # reciprocal ranks: small, kept by "auto"
    auto = DocumentAwareRetriever(fusion, DOCUMENTS, similarity_top_k=6).retrieve(BM25_QUERY)
    as_is = DocumentAwareRetriever(fusion, DOCUMENTS, similarity_top_k=6, score_scale="as-is").retrieve(BM25_QUERY)
    assert _ranked(auto) == _ranked(as_is)
    band = DocumentAwareRetriever(fusion, DOCUMENTS, similarity_top_k=6, score_scale="band").retrieve(BM25_QUERY)
    assert _ranked(band) == _ranked(DocumentAwareRetriever(Fixed(_band(plain)), DOCUMENTS, similarity_top_k=6,
                                                           score_scale="as-is").retrieve(BM25_QUERY))
    assert band[0].node.ref_doc_id == "nda-osprey.txt" and {h.node.node_id for h in band} \
        == {h.node.node_id for h in plain}


def test_over_a_vector_index_the_cosine_scores_are_kept_as_they_are() -> None:
    index = build(NODES)
    queries = [QUESTION, BM25_QUERY, "Notices to Acme go where?", "how long is information kept secret?"]
    default = DocumentAwareRetriever(index, DOCUMENTS, similarity_top_k=4)
    as_is = DocumentAwareRetriever(index, DOCUMENTS, similarity_top_k=4, score_scale="as-is")
    for query in queries:
        assert _ranked(default.retrieve(query)) == _ranked(as_is.retrieve(query))
