"""The one ranking (``retrievers/ranking.py``) and its options (``retrievers/options.py``): the retriever and the
postprocessor give the same order for the same candidates; the documents located follow one rule; every option is
declared once and reaches the settings and the command line without being declared again."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llama_index.core.schema import NodeRelationship, NodeWithScore, QueryBundle, RelatedNodeInfo, TextNode

from llama_index_sac import DocumentAwarePostprocessor, DocumentAwareRetriever, DocumentIndex
from llama_index_sac.retrievers.options import DocumentPriorOptions, RankingOptions
from llama_index_sac.retrievers.ranking import _Pool, fuse, lexical_units, located_documents, rank
from llama_index_sac.settings import DocumentRetrievalSettings
from tests.retrievers.test_document_retrieval import build, corpus
from tests.retrievers.test_document_retrieval_api import QUESTION, Fixed

pytest.importorskip("bm25s")

DOCUMENTS = DocumentIndex.from_nodes(corpus())
NODES = corpus()
QUERIES = [QUESTION, "how long is information kept secret?", "Notices to Acme go where?",
           "In the Kestrel NDA, who keeps copies of Confidential Information?"]


def _ids(found: list[NodeWithScore]) -> list[tuple[str, float | None]]:
    return [(hit.node.node_id, hit.score) for hit in found]


@settings(max_examples=60, deadline=None)
@given(scores=st.lists(st.floats(0.0, 1.0), min_size=len(NODES), max_size=len(NODES)),
       order=st.permutations(range(len(NODES))), query=st.sampled_from(QUERIES),
       prior_weight=st.sampled_from([0.0, 0.05, 0.3, 1.0]), lexical_weight=st.sampled_from([0.0, 0.1, 0.5]),
       scope=st.sampled_from(["located", "candidates"]), top_n=st.integers(1, len(NODES)))
def test_the_retriever_and_the_postprocessor_give_the_same_order_for_the_same_candidates(
        scores: list[float], order: list[int], query: str, prior_weight: float, lexical_weight: float, scope: Any,
        top_n: int) -> None:
    found = [NodeWithScore(node=NODES[i], score=scores[i]) for i in order]
    options = RankingOptions(prior_weight=prior_weight, lexical_weight=lexical_weight, lexical_scope=scope)
    retriever = DocumentAwareRetriever(Fixed(found), DOCUMENTS, similarity_top_k=top_n, options=options)
    post = DocumentAwarePostprocessor(DOCUMENTS, options=options, top_n=top_n)
    by_retriever = retriever.retrieve(query)
    assert _ids(by_retriever) == _ids(post.postprocess_nodes(list(found), QueryBundle(query_str=query)))
    prior = DOCUMENTS.prior_of(query) if prior_weight > 0 else {}
    assert _ids(by_retriever) == _ids(rank(found, query, prior, DOCUMENTS, options, top_n))
    assert len(by_retriever) == top_n


def test_the_documents_located_are_the_top_prior_ones_at_least_one() -> None:
    prior = {"b": 0.5, "a": 0.5, "c": 1.0, "d": 0.1}
    assert located_documents(prior, 0) == located_documents(prior, 1) == ["c"]
    assert located_documents(prior, 2) == ["c", "a"]  # ties by id
    assert located_documents(prior, 9) == ["c", "a", "b", "d"]
    assert located_documents({}, 3) == []


def test_the_share_of_the_prior_outside_the_named_documents_moves_the_fused_score_only() -> None:
    """At outside_prior=0 only Osprey has a prior, yet the ranking still locates the two documents of highest whole
    prior (Osprey, then Kestrel, which shares "Non-Disclosure Agreement"): the same filtered searches, the same
    lexical scope and clause order; only Kestrel's fused scores lose prior_weight times its whole prior."""

    class Spy(DocumentAwareRetriever):
        def _dense(self, top_k: int, doc_ids: list[str] | None = None) -> Any:
            self.searched.append(tuple(doc_ids or ()))  # type: ignore[attr-defined]
            return super()._dense(top_k, doc_ids)

    query = "Under Osprey's Non-Disclosure Agreement, how long is information kept secret?"
    found: dict[float, dict[str, float]] = {}
    for share in (1.0, 0.0):
        documents = DocumentIndex.from_nodes(corpus(), outside_prior=share)
        retriever = Spy(build(corpus()), documents, similarity_top_k=4)
        retriever.searched = []  # type: ignore[attr-defined]
        found[share] = {hit.node.node_id: float(hit.score or 0.0) for hit in retriever.retrieve(query)}
        whole = documents.prior_of(query, whole=True)
        assert located_documents(whole, 2) == ["nda-osprey.txt", "nda-kestrel.txt"]
        # the unfiltered query, one filtered to each located document, then the question's in each
        assert retriever.searched == [(), ("nda-osprey.txt",), ("nda-kestrel.txt",), ("nda-osprey.txt",),  # type: ignore[attr-defined]
                                      ("nda-kestrel.txt",)]
    kestrel = DocumentIndex.from_nodes(corpus(), outside_prior=1.0).prior_of(query)["nda-kestrel.txt"]
    assert DocumentIndex.from_nodes(corpus(), outside_prior=0.0).prior_of(query) == {"nda-osprey.txt": 1.0}
    assert found[0.0]["nda-osprey.txt#0"] == found[1.0]["nda-osprey.txt#0"]
    assert found[0.0]["nda-kestrel.txt#0"] == pytest.approx(found[1.0]["nda-kestrel.txt#0"] - 0.3 * kestrel)
    # the ranking given the kept prior alone locates Osprey only, so Kestrel's clause gets no lexical score; given
    # the whole prior it locates both, as the retriever does
    documents = DocumentIndex.from_nodes(corpus(), outside_prior=0.0)
    hits = [NodeWithScore(node=node, score=0.5) for node in NODES]
    prior, whole = documents.prior_of(query), documents.prior_of(query, whole=True)

    def kestrel_clause(**whole_prior: Any) -> float | None:
        ranked = rank(hits, query, prior, documents, RankingOptions(focus_documents=2), None, **whole_prior)
        return {hit.node.node_id: hit.score for hit in ranked}["nda-kestrel.txt#0"]

    assert kestrel_clause() == 0.5
    assert kestrel_clause(whole_prior=whole) == pytest.approx(0.5 + 0.1 * 1.0)  # the best lexical match in scope
    post = DocumentAwarePostprocessor(documents, top_n=4)  # one located document: the top of the whole prior
    assert _ids(post.postprocess_nodes(list(hits), QueryBundle(query_str=query))) == _ids(
        rank(hits, query, prior, documents, post.options, 4, whole_prior=whole))


def test_focus_documents_resolves_by_what_is_wrapped_and_a_postprocessor_filters_nothing() -> None:
    assert DocumentAwareRetriever(build(corpus()), DOCUMENTS).options.focus_documents == 2
    assert DocumentAwareRetriever(Fixed([]), DOCUMENTS).options.focus_documents == 0
    assert DocumentAwarePostprocessor(DOCUMENTS).options.focus_documents == 0
    with pytest.raises(ValueError, match="^focus_documents=1: a postprocessor filters no query by document"):
        DocumentAwarePostprocessor(DOCUMENTS, focus_documents=1)
    with pytest.raises(ValueError, match="^focus_documents=2 needs a vector index"):
        DocumentAwareRetriever(Fixed([]), DOCUMENTS, options=RankingOptions(focus_documents=2))
    # single options are set over the options given
    retriever = DocumentAwareRetriever(build(corpus()), DOCUMENTS, options=RankingOptions(prior_weight=0.9),
                                       lexical_weight=0.2)
    assert (retriever.options.prior_weight, retriever.options.lexical_weight) == (0.9, 0.2)
    with pytest.raises(ValueError, match="^unknown option 'name_weight' \\(the options: prior_weight, "):
        DocumentAwareRetriever(build(corpus()), DOCUMENTS, name_weight=0.5)  # the prior's option, not the ranking's


def test_every_option_is_declared_once_and_reaches_the_settings_and_the_command_line() -> None:
    # a new option is a Field of RankingOptions or DocumentPriorOptions (options.py), its default in constants.py
    # and its use (ranking.py or document_index.py): the settings, the presets and `-c` read the fields from there
    from llama_index_sac.apps.benchmark.config import CONFIG_KEYS, parse_config

    fields = {**DocumentPriorOptions.model_fields, **RankingOptions.model_fields}
    assert DocumentRetrievalSettings.model_fields.keys() == fields.keys()
    for name, info in fields.items():
        mine = DocumentRetrievalSettings.model_fields[name]
        assert (mine.annotation, mine.default, mine.description, mine.metadata) == (
            info.annotation, info.default, info.description, info.metadata)
        assert f"document_retrieval.{name}" in CONFIG_KEYS
    config = parse_config("default:document_retrieval.max_document_frequency=0.05,document_retrieval.focus_documents=3")
    assert config.document_retrieval.prior_options().max_document_frequency == 0.05
    assert config.document_retrieval.ranking_options().focus_documents == 3
    assert config.document_retrieval.prior_options() == DocumentPriorOptions(max_document_frequency=0.05)


def test_the_results_of_0_2_read_their_max_name_frequency() -> None:
    recorded = DocumentRetrievalSettings.model_validate({"max_name_frequency": 0.03, "focus_documents": 2})
    assert recorded.max_document_frequency == 0.03 and recorded.focus_documents == 2


# -- the candidates read once: first hits, documents, the fused order -----------------------------------------------


def _hit(node_id: str, doc: str | None, score: float | None) -> NodeWithScore:
    node = TextNode(id_=node_id, text=f"text of {node_id}")
    if doc is not None:
        node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=doc)
    return NodeWithScore(node=node, score=score)


def test_fuse_hand_worked_ties_by_node_id_none_scores_duplicates_and_every_place() -> None:
    found = [_hit("a#2", "a", 0.5), _hit("b#1", "b", None), _hit("a#1", "a", 0.5), _hit("a#2", "a", 0.9),
             _hit("c#1", "c", 0.2), _hit("x#1", None, 0.35)]
    prior, lexical = {"a": 0.5, "c": 1.0, "": 9.0}, {"b#1": 1.0, "a#2": 0.0}
    # a#2 0.5 + 0.2 * 0.5 = 0.6 (its second hit, 0.9, does not count); a#1 the same: ties by node id;
    # c#1 0.2 + 0.2 * 1.0 = 0.4; x#1 (no document: the prior of "") 0.35 + 0.2 * 9.0 = 2.15; b#1 None: 0 + 0.1 * 1.0
    every = fuse(found, prior, 0.2, None, lexical, 0.1)
    assert [h.node.node_id for h in every] == ["x#1", "a#1", "a#2", "c#1", "b#1"]
    assert [h.score for h in every] == pytest.approx([2.15, 0.6, 0.6, 0.4, 0.1])
    assert [h.node.node_id for h in fuse(found, prior, 0.2, 2, lexical, 0.1)] == ["x#1", "a#1"]
    assert fuse(found, prior, 0.2, 0, lexical, 0.1) == [] and fuse([], prior, 0.2, None) == []
    assert [(h.node.node_id, h.score) for h in fuse(found, {}, 0.0, None)] == [
        ("a#1", 0.5), ("a#2", 0.5), ("x#1", 0.35), ("c#1", 0.2), ("b#1", 0.0)]  # no weight: the scores as given


def test_a_pool_keeps_each_nodes_first_hit_and_its_document() -> None:
    first, again, loose = _hit("a#1", "a", 0.4), _hit("a#1", "a", 0.9), _hit("x#1", None, 0.3)
    pool = _Pool.of([first, _hit("b#1", "b", None), again, loose])
    assert list(pool.hits) == ["a#1", "b#1", "x#1"] and pool.hits["a#1"] is first
    assert pool.documents == {"a#1": "a", "b#1": "b", "x#1": None}
    asked = _Pool.of([_hit("c#1", "c", 0.8), again, _hit("b#2", "b", 0.1)])
    joined = pool.then(asked)  # the pool of [*pool's hits, *asked's hits]
    assert list(joined.hits) == ["a#1", "b#1", "x#1", "c#1", "b#2"] and joined.hits["a#1"] is first
    assert joined.documents == {"a#1": "a", "b#1": "b", "x#1": None, "c#1": "c", "b#2": "b"}
    assert [h.node.node_id for h in joined.within({"b", ""})] == ["b#1", "x#1", "b#2"]  # no document counts as ""
    assert _Pool.of([]) == _Pool({}, {}) and pool.within(set()) == []


def test_the_lexical_units_of_a_pool_are_those_of_the_hits() -> None:
    found = [_hit("a#1", "a", 0.4), _hit("a#2", "a", 0.3), _hit("a#1", "a", 0.1), _hit("b#1", "b", 0.2)]
    for hit, text in zip(found, ["copies copies", "notices", "zebra", "copies"]):
        assert isinstance(hit.node, TextNode)
        hit.node.text = text  # the third hit repeats a#1: its text is not read
    # stems "keep" (in no text) and "copi"; a#1's first hit: 2 words, copi twice; b#1 1 word; mean length 4/3; the
    # same idf cancels: a#1 2 * 2.5 / (2 + 1.5 * (0.25 + 0.75 * 1.5)), b#1 2.5 / (1 + 1.5 * (0.25 + 0.75 * 0.75))
    expected = (2.5 / 2.21875) / (5 / 4.0625)
    assert lexical_units(found, "who keeps copies?") == {"a#1": 1.0, "b#1": pytest.approx(expected)}
    assert lexical_units(found, "who keeps copies?", scope=["b"]) == {"b#1": 1.0}
    assert lexical_units(found, "notices?", scope=["a"]) == {"a#2": 1.0}
    assert lexical_units(found, "zebra?") == {}
