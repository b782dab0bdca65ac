"""The clause order inside the located documents: the question's own dense score and stems."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle, TextNode

from llama_index_sac import DocumentAwareRetriever, DocumentIndex
from llama_index_sac.constants import DEFAULT_QUESTION_WEIGHT
from llama_index_sac.retrievers.chunk_lexical import lexical_scores, stems
from llama_index_sac.retrievers.clause_order import order_within_documents
from tests.retrievers.test_document_retrieval import build, corpus
from tests.retrievers.test_document_retrieval_api import QUESTION

pytest.importorskip("bm25s")


def node(doc: str, i: int) -> TextNode:
    found = TextNode(id_=f"{doc}#{i}", text=f"{doc} chunk {i}")
    found.relationships = {}
    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo

    found.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=doc)
    return found


def scored(doc: str, i: int, value: float) -> NodeWithScore:
    return NodeWithScore(node=node(doc, i), score=value)


def ids(hits: list[NodeWithScore]) -> list[tuple[str, float | None]]:
    return [(h.node.node_id, None if h.score is None else round(h.score, 9)) for h in hits]


# -- stems --------------------------------------------------------------------------------------------------------


def test_stems_let_a_question_meet_the_clauses_word_forms() -> None:
    assert stems(["copies", "copy", "copying", "terminate", "termination"]) == ["copi", "copi", "copi", "termin",
                                                                                 "termin"]
    texts = ["The Recipient may make copies.", "Termination of this Agreement.", "zebra"]
    got = lexical_scores(["copy", "terminate"], texts)
    assert got[0] > 0.5 and got[1] == 1.0 and got[2] == 0.0  # one stem each, same idf; the longer text lower
    assert lexical_scores(["copy", "terminate"], texts, stem=False).tolist() == [0.0, 0.0, 0.0]


# -- order_within_documents, hand-worked --------------------------------------------------------------------------


def test_a_located_documents_places_are_refilled_in_clause_order_hand_worked() -> None:
    ranked = [scored("a", 1, 0.9), scored("b", 1, 0.85), scored("a", 2, 0.8)]  # the fused answer
    candidates = [scored("a", 1, 0.6), scored("b", 1, 0.55), scored("a", 2, 0.5)]  # the full query's dense scores
    asked = [scored("a", 3, 0.9), scored("a", 2, 0.7)]  # the question's filtered query on "a"
    # a's floors: query 0.5 (a#3 was not returned), question 0.7 (a#1 was not returned)
    # clause = 0.5 * full + 0.5 * question: a#1 0.5*0.6 + 0.5*0.7 = 0.65; a#2 0.5*0.5 + 0.5*0.7 = 0.6;
    # a#3 0.5*0.5 + 0.5*0.9 = 0.7
    got = order_within_documents(ranked, candidates, asked, ["a"], 0.5, {}, 0.0)
    assert ids(got) == [("a#3", 0.9), ("b#1", 0.85), ("a#1", 0.8)]  # each place keeps its score and document
    # the lexical score: a#2 + 0.2 * 1.0 = 0.8 comes first
    got = order_within_documents(ranked, candidates, asked, ["a"], 0.5, {"a#2": 1.0}, 0.2)
    assert ids(got) == [("a#2", 0.9), ("b#1", 0.85), ("a#3", 0.8)]
    # question_weight 0: the full query's order (a#3 at its floor 0.5 ties a#2; ties by id)
    assert ids(order_within_documents(ranked, candidates, asked, ["a"], 0.0, {}, 0.0)) == [("a#1", 0.9), ("b#1", 0.85),
                                                                                  ("a#2", 0.8)]
    # question_weight 1: the question's order (a#1 at the question's floor 0.7 ties a#2; ties by id)
    assert ids(order_within_documents(ranked, candidates, asked, ["a"], 1.0, {}, 0.0)) == [("a#3", 0.9), ("b#1", 0.85),
                                                                                  ("a#1", 0.8)]
    # no located document in the answer, or none given: unchanged
    assert ids(order_within_documents(ranked, candidates, asked, ["c"], 0.5, {}, 0.0)) == ids(ranked)
    assert ids(order_within_documents(ranked, candidates, asked, [], 0.5, {}, 0.0)) == ids(ranked)
    # the documents already read (known) are not read again: the same answer; a node's known document is the one used
    known = {"a#1": "a", "a#2": "a", "a#3": "a", "b#1": "b"}
    assert ids(order_within_documents(ranked, candidates, asked, ["a"], 0.5, {}, 0.0, known=known)) == [
        ("a#3", 0.9), ("b#1", 0.85), ("a#1", 0.8)]
    moved = {**known, "a#3": "b"}  # a#3 counted in b: a's pool is a#1 0.65, a#2 0.6
    assert ids(order_within_documents(ranked, candidates, asked, ["a"], 0.5, {}, 0.0, known=moved)) == [
        ("a#1", 0.9), ("b#1", 0.85), ("a#2", 0.8)]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 5), st.floats(-1, 1)), min_size=1, max_size=12),
       st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 8), st.floats(-1, 1)), max_size=8),
       st.floats(0, 1), st.integers(1, 6))
def test_every_place_keeps_its_document_and_score(found: list[Any], asked: list[Any], weight: float, k: int) -> None:
    candidates = [scored(d, i, s) for d, i, s in found]
    from llama_index_sac.retrievers.ranking import fuse

    ranked = fuse(candidates, {}, 0.0, k)
    got = order_within_documents(ranked, candidates, [scored(d, i, s) for d, i, s in asked], ["a", "b"], weight,
                                 {}, 0.0)
    assert [h.node.ref_doc_id for h in got] == [h.node.ref_doc_id for h in ranked]
    assert [h.score for h in got] == [h.score for h in ranked]
    assert len({h.node.node_id for h in got}) == len(got)  # a chunk once


# -- the retriever ------------------------------------------------------------------------------------------------


class Counting(DocumentAwareRetriever):
    """Records the query text of every dense query."""

    calls: list[tuple[str, tuple[str, ...]]]

    def _dense(self, top_k: int, doc_ids: list[str] | None = None) -> Any:
        inner = super()._dense(top_k, doc_ids)
        calls = self.__dict__.setdefault("calls", [])  # one list per retriever

        class Recorder:
            def retrieve(self, bundle: QueryBundle) -> list[NodeWithScore]:
                calls.append((bundle.query_str, tuple(doc_ids or ())))
                return inner.retrieve(bundle)

            async def aretrieve(self, bundle: QueryBundle) -> list[NodeWithScore]:
                calls.append((bundle.query_str, tuple(doc_ids or ())))
                return await inner.aretrieve(bundle)

        return Recorder()


def test_the_question_is_searched_in_the_located_document_and_places_keep_their_documents() -> None:
    index, documents = build(corpus()), DocumentIndex.from_nodes(corpus())
    aware = Counting(index, documents, similarity_top_k=4, focus_documents=1)
    assert aware.options.question_weight == DEFAULT_QUESTION_WEIGHT
    got = aware.retrieve(QUESTION)
    question = "how long is information kept secret?"
    assert (question, ("nda-osprey.txt",)) in aware.calls  # the question alone, in the located document
    fused = Counting(index, documents, similarity_top_k=4, focus_documents=1, question_weight=0.0)
    before = fused.retrieve(QUESTION)
    assert all(q != question for q, _ in fused.calls)  # weight 0: no question query
    assert [h.node.ref_doc_id for h in got] == [h.node.ref_doc_id for h in before]
    assert [h.score for h in got] == [h.score for h in before]
    plain = Counting(index, documents, similarity_top_k=4)
    plain.retrieve("how long is information kept secret?")  # no locator clause: nothing more to ask
    assert {q for q, _ in plain.calls} == {"how long is information kept secret?"}


def test_aretrieve_equals_retrieve_with_the_question() -> None:
    index, documents = build(corpus()), DocumentIndex.from_nodes(corpus())
    aware = DocumentAwareRetriever(index, documents, similarity_top_k=4, question_weight=0.75)
    sync = ids(aware.retrieve(QUESTION))

    async def main() -> list[NodeWithScore]:
        return await aware.aretrieve(QUESTION)

    assert ids(asyncio.run(main())) == sync and len(sync) == 4


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), True, "0.5"])
def test_a_question_weight_outside_0_1_is_named(bad: Any) -> None:
    with pytest.raises(ValueError, match="^question_weight: Input should be "):
        DocumentAwareRetriever(build(corpus()), DocumentIndex.from_nodes(corpus()), question_weight=bad)


def test_the_benchmark_setting_reaches_the_retriever_and_the_published_presets_keep_the_fused_order() -> None:
    from llama_index_sac.apps.benchmark.config import parse_config
    from llama_index_sac.apps.benchmark.factories import build_retriever
    from tests.conftest import FakeEmbedding

    nodes: list[BaseNode] = list(corpus())
    built = build_retriever(parse_config("default:document_retrieval.question_weight=0.25"), nodes, FakeEmbedding(), 4)
    assert isinstance(built, DocumentAwareRetriever) and built.options.question_weight == 0.25
    assert parse_config("default").document_retrieval.question_weight == DEFAULT_QUESTION_WEIGHT
    assert parse_config("sac-doc").document_retrieval.question_weight == 0.0
    with pytest.raises(ValueError, match="question_weight"):
        parse_config("default:document_retrieval.question_weight=2")


def test_a_candidate_text_that_is_not_a_str_is_named_and_texts_are_read_once() -> None:
    from llama_index_sac.retrievers import chunk_lexical

    with pytest.raises(TypeError, match="a candidate's text must be a str, got list"):
        lexical_scores(["copy"], [["copy"]])  # type: ignore[list-item]
    text = "The Recipient may make one copy of the Confidential Information."
    before = chunk_lexical._terms.cache_info().hits
    first = lexical_scores(["copy"], [text, "zebra"])
    assert lexical_scores(["copy"], [text, "zebra"]).tolist() == first.tolist()
    assert chunk_lexical._terms.cache_info().hits >= before + 2  # both texts came from the cache the second time
