"""Within-document ranking: the question's BM25 over the candidates, the prior's hub fix, two-word names."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llama_index.core.schema import BaseNode, NodeWithScore

from llama_index_sac import DocumentAwarePostprocessor, DocumentAwareRetriever, DocumentIndex
from llama_index_sac.retrievers.chunk_lexical import lexical_scores, question_text, question_tokens
from llama_index_sac.retrievers.document_index import _normalised
from llama_index_sac.retrievers.document_names import distinctive_names, name_pairs, query_tokens
from llama_index_sac.retrievers.options import DocumentPriorOptions, RankingOptions
from llama_index_sac.summarizers.terms import TermStatistics
from tests.retrievers.test_document_retrieval import build, corpus
from tests.retrievers.test_document_retrieval_api import QUESTION, Fixed, hits

pytest.importorskip("bm25s")


# -- the question -------------------------------------------------------------------------------------------------


def test_the_question_loses_its_locator_clause_and_the_documents_names() -> None:
    query = ("Consider the Non-Disclosure Agreement between CEII and NDA; Does the document permit the Receiving "
             "Party to copy Confidential Information?")
    assert question_text(query) == (" Does the document permit the Receiving Party to copy Confidential "
                                    "Information?")
    assert question_tokens(query) == ["does", "document", "permit", "receiving", "party", "copy", "confidential",
                                      "information"]
    # a name of the located document is dropped where the question repeats it; words appear once
    assert question_tokens("In the Acme NDA; may Acme assign, assign?", {"acme", "acme_nda"}) == ["assign"]
    assert question_text("Consider Keep;") == "Consider Keep;"  # nothing after it: the query is the question
    assert question_text("What is consideration; and?") == "What is consideration; and?"  # no locating word first
    assert question_text("how long is information kept secret?") == "how long is information kept secret?"


def test_lexical_scores_are_bm25_over_the_candidates_hand_worked() -> None:
    # N = 3 candidates, lengths 2, 1, 1 (mean 4/3); "copy" and "information" each in one: idf = ln(1 + 2.5 / 1.5)
    # copy: tf 2, norm = 1.5 * (0.25 + 0.75 * 2 / (4/3)) = 2.0625 -> idf * 2 * 2.5 / 4.0625
    # information: tf 1, norm = 1.5 * (0.25 + 0.75 * 0.75) = 1.21875 -> idf * 2.5 / 2.21875
    got = lexical_scores(["copy", "information"], ["copy copy", "Information", "zebra"])
    assert got.tolist() == pytest.approx([1.0, (2.5 / 2.21875) / (5 / 4.0625), 0.0], rel=1e-12)
    assert got[1] == pytest.approx(0.915492957746, rel=1e-9)
    assert lexical_scores(["absent"], ["copy", "zebra"]).tolist() == [0.0, 0.0]
    assert lexical_scores([], ["copy"]).tolist() == [0.0]
    assert lexical_scores(["copy"], []).shape == (0,)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="ab cd", max_size=30), max_size=6), st.lists(st.sampled_from(["ab", "cd", "abc"]),
                                                                              max_size=3))
def test_lexical_scores_are_in_0_1_with_maximum_1_or_all_zero(texts: list[str], question: list[str]) -> None:
    got = lexical_scores(question, texts)
    assert got.shape == (len(texts),) and ((got >= 0) & (got <= 1)).all()
    assert got.size == 0 or got.max() in (0.0, 1.0)


# -- the hub fix --------------------------------------------------------------------------------------------------

HUB = {"hub": "Non-Disclosure Agreement", "kestrel": "Non-Disclosure Agreement between Kestrel Analytics and Marlow"}
HUB_NAMES = {"hub": {}, "kestrel": {"kestrel": 3, "marlow": 2}}


def test_the_margin_keeps_only_a_match_that_stands_out() -> None:
    scores = np.array([2.0, 1.5, 0.0])
    assert _normalised(scores).tolist() == [1.0, 0.75, 0.0]
    assert _normalised(scores, 0.25).tolist() == [1.0, 0.75, 0.0]  # 2.0 >= 1.25 * 1.5
    assert _normalised(scores, 0.5).tolist() == [0.0, 0.0, 0.0]  # 2.0 < 1.5 * 1.5
    assert _normalised(np.array([3.0]), 5.0).tolist() == [1.0]  # one document: nothing to stand out from
    assert _normalised(np.array([0.0, 0.0]), 0.5).tolist() == [0.0, 0.0]


def test_a_generic_query_no_longer_makes_the_shortest_summary_a_hub() -> None:
    generic = "Does the Non-Disclosure Agreement permit copies?"

    def whole(**options: Any) -> DocumentIndex:  # the prior reads the whole query (the hub fix's setting)
        return DocumentIndex(HUB, HUB_NAMES, locator_only=False, **options)

    before = whole().prior(generic)
    assert before[0] == 0.5 and 0 < before[1] < 0.5  # no name matches, yet the short summary gets the top prior
    assert DocumentIndex(HUB, HUB_NAMES).prior(generic).tolist() == [0.0, 0.0]  # the default: no document named
    assert whole(require_name_match=True).prior(generic).tolist() == [0.0, 0.0]
    ratio = before[0] / before[1]  # the hub's summary score over the runner-up's
    assert whole(prior_margin=ratio - 1 + 0.01).prior(generic).tolist() == [0.0, 0.0]
    assert whole(prior_margin=ratio - 1 - 0.01).prior(generic).tolist() == before.tolist()
    named = "Does Kestrel's Non-Disclosure Agreement permit copies?"
    got = whole().prior(named)
    assert got[1] == 1.0 and got[0] < 0.5
    assert whole(require_name_match=True).prior(named).tolist() == got.tolist()
    assert whole(require_name_match=True, prior_margin=10.0).prior(named).tolist() == [
        0.0, 0.5]  # the summary part does not stand out 11 times over the runner-up's; the names part (its share) does


def test_bad_hub_fix_settings_are_named() -> None:
    with pytest.raises(ValueError, match="^prior_margin: Input should be greater than or equal to 0, got -0.1$"):
        DocumentIndex(HUB, HUB_NAMES, prior_margin=-0.1)
    with pytest.raises(ValueError, match="^prior_margin: Input should be a finite number, got inf$"):
        DocumentIndex(HUB, HUB_NAMES, prior_margin=math.inf)
    with pytest.raises(ValueError, match="require_name_match=True needs the documents' names"):
        DocumentIndex(HUB, require_name_match=True)
    with pytest.raises(ValueError, match="^name_pairs: Input should be a valid boolean, got 1$"):
        DocumentIndex(HUB, HUB_NAMES, name_pairs=1)
    with pytest.raises(ValueError, match="^lexical_weight: Input should be greater than or equal to 0, got -1$"):
        DocumentAwareRetriever(build(corpus()), DocumentIndex(HUB, HUB_NAMES), lexical_weight=-1)
    with pytest.raises(ValueError, match="^unknown option 'prior_weight' \\(the options: name_weight, "):
        DocumentIndex(HUB, HUB_NAMES, prior_weight=0.5)  # a ranking option, not the prior's
    with pytest.raises(TypeError, match="^options must be a DocumentPriorOptions, got RankingOptions$"):
        DocumentIndex(HUB, HUB_NAMES, options=RankingOptions())  # type: ignore[arg-type]


# -- two-word names -----------------------------------------------------------------------------------------------

TABLE = TermStatistics({"blue": 10, "apron": 10, "confidential": 90, "information": 90, "kestrel": 1,
                        "receiving": 60}, 100)


def test_two_common_words_rare_together_are_a_name() -> None:
    text = ("Blue Apron and Kestrel Blue shall keep Confidential Information.\nBlue\tApron, Blue, Apron; "
            "the Receiving Blue Apron")
    assert name_pairs("Blue Apron Holdings.\nBlue, Apron") == [("blue", "apron"), ("apron", "holdings")]
    # limit = 2 documents: blue, apron (10 each) are not distinctive alone; 10 * 10 / 100 = 1 < 2: the pair is.
    # confidential_information: 90 * 90 / 100 >= 2; kestrel_blue: kestrel is distinctive alone (1 < 2): no pair;
    # receiving_blue: 60 * 10 / 100 = 6 >= 2
    found = distinctive_names(text, statistics=TABLE, pairs=True)
    assert found == {"blue_apron": 3, "kestrel": 1}
    assert distinctive_names(text, statistics=TABLE) == {"kestrel": 1}
    assert query_tokens("Blue Apron's NDA", pairs=True) == ["blue", "apron", "nda", "blue_apron"]
    assert query_tokens("Blue Apron's NDA") == ["blue", "apron", "nda"]


def test_a_two_word_name_finds_its_document() -> None:
    summaries = {"apron": "Services Agreement", "other": "Services Agreement with Blue Ocean and Red Apron"}
    names = {"apron": {"blue_apron": 4}, "other": {}}
    # the summaries: only "other" holds "blue" and "apron" (summary part 1.0); the names: only the pair matches
    query = "Consider Blue Apron; who pays?"  # the whole prior (outside_prior=1): the match itself, not the locator's
    assert DocumentIndex(summaries, names, name_pairs=True, outside_prior=1.0).prior_of(query) == {"apron": 0.5,
                                                                                                  "other": 0.5}
    assert DocumentIndex(summaries, names, outside_prior=1.0).prior_of(query) == {"other": 0.5}


# -- persistence --------------------------------------------------------------------------------------------------


def test_the_options_are_persisted_and_a_file_of_another_format_is_one_clear_error(tmp_path: Path) -> None:
    index = DocumentIndex(HUB, HUB_NAMES, name_weight=0.25, name_pairs=True, prior_margin=0.5,
                          require_name_match=True, locator_only=False, max_document_frequency=0.5)
    saved = json.loads(index.save(tmp_path / "v4.json").read_text())
    assert saved["format"] == "llama-index-sac/document-index/v4"
    assert saved["statistics"] == TermStatistics.default().identity()
    loaded = DocumentIndex.load(tmp_path / "v4.json")
    assert loaded.options == index.options == DocumentPriorOptions(
        name_weight=0.25, name_pairs=True, prior_margin=0.5, require_name_match=True, locator_only=False,
        word_parts=True, max_document_frequency=0.5)
    assert loaded.names == index.names and loaded.summaries == index.summaries
    for version in ("v1", "v2", "v3", "v5"):
        old = {**saved, "format": f"llama-index-sac/document-index/{version}"}
        (tmp_path / f"{version}.json").write_text(json.dumps(old))
        with pytest.raises(ValueError, match=f"{version}.json: not a llama-index-sac/document-index/v4 file "
                                             f"\\(format 'llama-index-sac/document-index/{version}'\\)$"):
            DocumentIndex.load(tmp_path / f"{version}.json")
    del saved["prior_margin"]
    (tmp_path / "short.json").write_text(json.dumps(saved))
    with pytest.raises(ValueError, match="short.json: bad document index \\(missing prior_margin\\)"):
        DocumentIndex.load(tmp_path / "short.json")
    saved["prior_margin"] = "0.5"
    (tmp_path / "string.json").write_text(json.dumps(saved))
    with pytest.raises(ValueError, match="string.json: bad document index \\(prior_margin: Input should be a valid "
                                         "number, got '0.5'\\)"):
        DocumentIndex.load(tmp_path / "string.json")


# -- the retriever ------------------------------------------------------------------------------------------------


def test_the_question_words_lift_the_clause_inside_the_document() -> None:
    # dense: the Osprey notice 0.50, the Osprey clause 0.49; the question "how long is information kept secret?"
    # matches the clause ("information", "secret") and not the notice: lexical 1.0 and 0.0
    found = hits(("nda-osprey.txt#1", 0.50), ("nda-osprey.txt#0", 0.49))
    documents = DocumentIndex.from_nodes(corpus())
    plain = DocumentAwareRetriever(Fixed(found), documents, prior_weight=0.0, lexical_weight=0.0, similarity_top_k=2)
    assert [h.node.node_id for h in plain.retrieve(QUESTION)] == ["nda-osprey.txt#1", "nda-osprey.txt#0"]
    lexical = DocumentAwareRetriever(Fixed(found), documents, prior_weight=0.0, lexical_weight=0.05,
                                     similarity_top_k=2)
    ranked = [(h.node.node_id, round(h.score or 0.0, 9)) for h in lexical.retrieve(QUESTION)]
    assert ranked == [("nda-osprey.txt#0", 0.54), ("nda-osprey.txt#1", 0.5)]
    post = DocumentAwarePostprocessor(documents, prior_weight=0.0, lexical_weight=0.05)
    assert [(h.node.node_id, round(h.score or 0.0, 9)) for h in post.postprocess_nodes(
        [NodeWithScore(node=h.node, score=h.score) for h in found], query_str=QUESTION)] == ranked


def test_the_lexical_score_ranks_only_the_located_documents_chunks_by_default() -> None:
    # the boilerplate clause is in every contract: Kestrel's copy (dense 0.495) would take the top over Osprey's
    # (0.49) once both get the question's full lexical score; scoped to the located Osprey, only Osprey's gets it
    found = hits(("nda-osprey.txt#1", 0.50), ("nda-kestrel.txt#0", 0.495), ("nda-osprey.txt#0", 0.49))
    from llama_index_sac.retrievers.ranking import lexical_units

    assert lexical_units(found, QUESTION) == pytest.approx({"nda-kestrel.txt#0": 1.0, "nda-osprey.txt#0": 1.0})
    assert lexical_units(found, QUESTION, scope=["nda-osprey.txt"]) == {"nda-osprey.txt#0": 1.0}
    documents = DocumentIndex.from_nodes(corpus())
    assert documents.prior_of(QUESTION)["nda-osprey.txt"] == 1.0

    def ranked(scope: str) -> list[str]:
        retriever = DocumentAwareRetriever(Fixed(found), documents, prior_weight=0.001, lexical_weight=0.05,
                                           lexical_scope=scope, similarity_top_k=3)
        return [h.node.node_id for h in retriever.retrieve(QUESTION)]

    assert ranked("candidates")[0] == "nda-kestrel.txt#0"
    assert ranked("located") == ["nda-osprey.txt#0", "nda-osprey.txt#1", "nda-kestrel.txt#0"]
    assert DocumentAwareRetriever(Fixed(found), documents).options.lexical_scope == "located"
    with pytest.raises(ValueError, match="^lexical_scope: Input should be 'located' or 'candidates', got 'document'$"):
        DocumentAwareRetriever(Fixed(found), documents, lexical_scope="document")
    post = DocumentAwarePostprocessor(documents, prior_weight=0.001, lexical_weight=0.05)
    assert [h.node.node_id for h in post.postprocess_nodes(
        [NodeWithScore(node=h.node, score=h.score) for h in found], query_str=QUESTION)] == ranked("located")


def test_aretrieve_equals_retrieve_with_every_new_option() -> None:
    index = build(corpus())
    documents = DocumentIndex.from_nodes(corpus(), name_pairs=True, prior_margin=0.5, require_name_match=True)
    aware = DocumentAwareRetriever(index, documents, similarity_top_k=4, prior_weight=0.1, lexical_weight=0.05)
    for query in (QUESTION, "how long is information kept secret?"):
        sync = [(h.node.node_id, h.score) for h in aware.retrieve(query)]

        async def main(text: str = query) -> list[NodeWithScore]:
            return await aware.aretrieve(text)

        assert [(h.node.node_id, h.score) for h in asyncio.run(main())] == sync and len(sync) == 4


def test_the_benchmark_settings_reach_the_retriever_and_its_index() -> None:
    from llama_index_sac.apps.benchmark.config import parse_config
    from llama_index_sac.apps.benchmark.factories import build_retriever
    from tests.conftest import FakeEmbedding

    config = parse_config("default:document_retrieval.lexical_weight=0.05,document_retrieval.prior_margin=0.5,"
                          "document_retrieval.require_name_match=true,document_retrieval.name_pairs=true,"
                          "document_retrieval.locator_only=false,document_retrieval.word_parts=false,"
                          "document_retrieval.outside_prior=0.25")
    nodes: list[BaseNode] = list(corpus())
    retriever = build_retriever(config, nodes, FakeEmbedding(), 4)
    assert isinstance(retriever, DocumentAwareRetriever) and retriever.options.lexical_weight == 0.05
    assert retriever.document_index.options.model_dump() == {
        "name_weight": 0.5, "name_pairs": True, "prior_margin": 0.5, "require_name_match": True,
        "locator_only": False, "outside_prior": 0.25, "word_parts": False, "max_document_frequency": 0.02}
    assert build_retriever(parse_config("default"), nodes, FakeEmbedding(), 4).document_index.options.model_dump()[  # type: ignore[attr-defined]
        "locator_only"] is True
    assert retriever.options.lexical_scope == "located"
    scoped = parse_config("default:document_retrieval.lexical_scope=candidates")
    assert build_retriever(scoped, nodes, FakeEmbedding(), 4).options.lexical_scope == "candidates"  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="lexical_weight"):
        parse_config("default:document_retrieval.lexical_weight=-1")
    with pytest.raises(ValueError, match="lexical_scope"):
        parse_config("default:document_retrieval.lexical_scope=everything")


def _lexical_scores_one_by_one(question: list[str], texts: list[str]) -> list[float]:
    """The lexical score computed one candidate at a time in Python (how ``lexical_scores`` computed it before it
    worked on arrays): each text's sum over its question words in the order they first occur in it."""
    from collections import Counter

    from llama_index_sac.retrievers.chunk_lexical import BM25_B, BM25_K1, stems
    from llama_index_sac.retrievers.document_names import word_tokens

    n = len(texts)
    if n == 0 or not question:
        return [0.0] * n
    wanted = list(dict.fromkeys(stems(question)))
    counts, lengths, df = [], [], Counter[str]()
    for text in texts:
        words = stems(word_tokens(text))
        table = {w: (place, count) for place, (w, count) in enumerate(Counter(words).items())}
        lengths.append(float(len(words)))
        kept = {w: count for _, count, w in sorted([(*table[w], w) for w in wanted if w in table])}
        counts.append(kept)
        df.update(kept.keys())
    if not df:
        return [0.0] * n
    idf = {w: math.log(1.0 + (n - d + 0.5) / (d + 0.5)) for w, d in df.items()}
    mean_length = float(np.asarray(lengths).mean()) or 1.0
    norm = BM25_K1 * (1.0 - BM25_B + BM25_B * np.asarray(lengths) / mean_length)
    scores = np.zeros(n)
    for i, kept in enumerate(counts):
        scores[i] = sum(idf[w] * tf * (BM25_K1 + 1.0) / (tf + norm[i]) for w, tf in kept.items())
    top = float(scores.max())
    return (scores / top if top > 0 else scores).tolist()


WORDS = ["copy", "copies", "notice", "terminate", "termination", "party", "secret", "the", "of", "Acme", "zebra"]


@settings(max_examples=150, deadline=None)
@given(question=st.lists(st.sampled_from(WORDS), max_size=6),
       texts=st.lists(st.lists(st.sampled_from(WORDS), max_size=25).map(" ".join), max_size=12))
def test_lexical_scores_are_the_one_by_one_sums_to_the_bit(question: list[str], texts: list[str]) -> None:
    wanted = [w.lower() for w in question if w not in ("the", "of")]
    assert lexical_scores(wanted, texts).tolist() == _lexical_scores_one_by_one(wanted, texts)
