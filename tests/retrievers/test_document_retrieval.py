"""DocumentAwareRetriever / DocumentIndex: the summaries used at query time, fused softly."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.schema import NodeRelationship, NodeWithScore, QueryBundle, RelatedNodeInfo, TextNode

from llama_index_sac import NumpyVectorStore
from llama_index_sac.constants import DEFAULT_LEXICAL_WEIGHT, DEFAULT_NAME_WEIGHT
from llama_index_sac.retrievers.document_aware import DocumentAwareRetriever
from llama_index_sac.retrievers.document_index import DocumentIndex
from tests.conftest import FakeEmbedding, RecordingEmbedding

pytest.importorskip("bm25s")

SUMMARIES = {
    "nda-kestrel.txt": "Non-Disclosure Agreement between Kestrel Analytics, Inc. and Marlow Biotech Ltd.",
    "nda-osprey.txt": "Non-Disclosure Agreement between Osprey Robotics Corp. and Fairhaven Software Ltd.",
    "msa-acme.txt": "Master Services Agreement between Acme Logistics Corp. and Dunmore Software Ltd.",
}
CLAUSE = "The Receiving Party shall keep the Confidential Information secret for five years."


def chunk(doc_id: str, i: int, text: str) -> TextNode:
    node = TextNode(text=text, id_=f"{doc_id}#{i}", start_char_idx=1000 * i, end_char_idx=1000 * i + len(text),
                    metadata={"document_summary": SUMMARIES[doc_id]})
    node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=doc_id)
    return node


def build(nodes: list[TextNode]) -> VectorStoreIndex:
    embed = FakeEmbedding()
    store = NumpyVectorStore()
    return VectorStoreIndex(nodes, storage_context=StorageContext.from_defaults(vector_store=store), embed_model=embed)


def score(hit: NodeWithScore) -> float:
    """The score of a retrieved node (set by every retriever here: asserted)."""
    assert hit.score is not None, hit.node.node_id
    return hit.score


def corpus() -> list[TextNode]:
    nodes = [chunk(d, 0, CLAUSE) for d in SUMMARIES]  # the same boilerplate clause in every contract
    nodes += [chunk(d, 1, f"Notices to {d.split('-')[1].split('.')[0].title()} go to its registered office.")
              for d in SUMMARIES]
    return nodes


def test_prior_is_bm25_over_summaries_normalised_per_query(tmp_path: Path) -> None:
    index = DocumentIndex.from_nodes(corpus(), names=False)
    assert index.doc_ids == list(SUMMARIES) and len(index) == 3
    prior = index.prior("In the NDA between Kestrel Analytics and Marlow, how long is information kept secret?")
    assert prior.shape == (3,) and prior[0] == 1.0 and prior.max() == 1.0 and prior[2] < prior[0]
    assert index.prior("the of and").tolist() == [0.0, 0.0, 0.0]  # only stop words: no document signal
    assert index.prior_of("zebra quantum") == {}
    saved = index.save(tmp_path / "docs.json")
    assert DocumentIndex.load(saved).summaries == index.summaries
    (tmp_path / "bad.json").write_text("[]")
    with pytest.raises(ValueError, match="not a llama-index-sac/document-index"):
        DocumentIndex.load(tmp_path / "bad.json")
    with pytest.raises(ValueError, match="document_summary"):
        DocumentIndex.from_nodes([TextNode(text="x")])
    with pytest.raises(TypeError, match="mapping"):
        DocumentIndex(["a"])  # type: ignore[arg-type]


def test_the_named_contract_wins_the_boilerplate_tie() -> None:
    index = build(corpus())
    documents = DocumentIndex.from_nodes(corpus())
    question = "Consider the NDA between Osprey Robotics and Fairhaven Software; how long is information kept secret?"
    dense = index.as_retriever(similarity_top_k=3).retrieve(question)
    aware = DocumentAwareRetriever(index, documents, similarity_top_k=3, prior_weight=0.1).retrieve(question)
    assert aware[0].node.node_id == "nda-osprey.txt#0"  # the clause of the contract the query names comes first
    assert [score(n) for n in aware] == sorted((score(n) for n in aware), reverse=True)
    by_id = {n.node.node_id: score(n) for n in dense}
    # dense + weight * prior (1.0) + lexical weight * the question's BM25 (this clause is the best candidate: 1.0)
    assert aware[0].score == pytest.approx(by_id["nda-osprey.txt#0"] + 0.1 + DEFAULT_LEXICAL_WEIGHT)
    assert DEFAULT_LEXICAL_WEIGHT > 0
    plain = DocumentAwareRetriever(index, documents, similarity_top_k=3, prior_weight=0.0, focus_documents=0,
                                   lexical_weight=0.0)
    assert [(n.node.node_id, n.score) for n in plain.retrieve(question)] == \
        [(n.node.node_id, pytest.approx(n.score)) for n in dense]  # weights 0: plain dense retrieval


def test_focus_documents_bring_in_chunks_the_dense_ranking_missed() -> None:
    nodes = corpus() + [chunk("msa-acme.txt", i, f"Filler clause number {i} about deliveries.") for i in range(2, 40)]
    index = build(nodes)
    question = "Kestrel Marlow notices registered office"
    documents = DocumentIndex.from_nodes(nodes)
    kestrel = {"nda-kestrel.txt#0", "nda-kestrel.txt#1"}
    dense_top = {n.node.node_id for n in index.as_retriever(similarity_top_k=3).retrieve(question)}
    without = DocumentAwareRetriever(index, documents, similarity_top_k=3, candidate_top_k=3, focus_documents=0)
    with_focus = DocumentAwareRetriever(index, documents, similarity_top_k=3, candidate_top_k=3, focus_documents=1)
    ids_without = {n.node.node_id for n in without.retrieve(question)}
    ids_with = {n.node.node_id for n in with_focus.retrieve(question)}
    assert not kestrel <= dense_top and ids_without <= dense_top  # without focus: only dense candidates
    assert kestrel <= ids_with  # the filtered query found the named contract's chunks


def test_bad_settings_are_named() -> None:
    index = build(corpus())
    documents = DocumentIndex.from_nodes(corpus())
    for kwargs, match in (({"similarity_top_k": 0}, "similarity_top_k"), ({"focus_documents": -1}, "focus_documents"),
                          ({"prior_weight": -0.5}, "prior_weight"), ({"candidate_top_k": True}, "candidate_top_k"),
                          ({"prior_weight": float("inf")}, "finite"), ({"prior_weight": float("nan")}, "finite")):
        with pytest.raises(ValueError, match=match):
            DocumentAwareRetriever(index, documents, **kwargs)
    with pytest.raises(TypeError, match="DocumentIndex"):
        DocumentAwareRetriever(index, {"a": "b"})  # type: ignore[arg-type]



@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_a_blank_query_is_refused_before_anything_is_embedded(query: str) -> None:
    index = build(corpus())
    embed = index._embed_model
    assert isinstance(embed, RecordingEmbedding)
    before = len(embed.texts_embedded)
    with pytest.raises(ValueError, match="the query is empty"):
        DocumentAwareRetriever(index, DocumentIndex.from_nodes(corpus())).retrieve(query)
    assert len(embed.texts_embedded) == before
    # with a precomputed embedding the dense part has a vector: an empty query string is then plain dense retrieval
    bundle = QueryBundle(query, embedding=embed.get_query_embedding("Osprey"))
    dense = index.as_retriever(similarity_top_k=2).retrieve(QueryBundle("Osprey"))
    aware = DocumentAwareRetriever(index, DocumentIndex.from_nodes(corpus()), similarity_top_k=2).retrieve(bundle)
    assert [n.node.node_id for n in aware] == [n.node.node_id for n in dense]


def test_a_document_the_store_does_not_hold_is_reported_as_a_stale_index() -> None:
    from llama_index_sac import StaleDocumentIndexWarning

    index = build(corpus())
    stale = DocumentIndex({**SUMMARIES, "nda-brightwater.txt": "Non-Disclosure Agreement between Brightwater LLC "
                                                               "and Harrow Mills Inc."})
    question = "In the Brightwater NDA, how long is information kept secret?"
    with pytest.warns(StaleDocumentIndexWarning, match="'nda-brightwater.txt' of the document index has no chunk"):
        hits = DocumentAwareRetriever(index, stale, similarity_top_k=3).retrieve(question)
    assert len(hits) == 3 and all(h.node.ref_doc_id in SUMMARIES for h in hits)
    with warnings.catch_warnings():  # an index of the store itself: no warning
        warnings.simplefilter("error", StaleDocumentIndexWarning)
        DocumentAwareRetriever(index, DocumentIndex.from_nodes(corpus()), similarity_top_k=3).retrieve(
            "In the Osprey NDA, how long is information kept secret?")


def test_save_replaces_the_file_whole_and_load_names_unreadable_paths(tmp_path: Path) -> None:
    index = DocumentIndex.from_nodes(corpus())
    target = tmp_path / "docs.json"
    target.write_text("old contents")
    assert index.save(target) == target
    assert DocumentIndex.load(target).names == index.names
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docs.json"]  # no temporary file left beside it
    with pytest.raises(FileNotFoundError):
        DocumentIndex.load(tmp_path / "missing.json")
    with pytest.raises(FileNotFoundError):  # the folder of the target does not exist: nothing is written
        index.save(tmp_path / "no-such-folder" / "docs.json")
    assert not (tmp_path / "no-such-folder").exists()

def test_the_query_is_embedded_once() -> None:
    index = build(corpus())
    embed = index._embed_model
    assert isinstance(embed, RecordingEmbedding)  # build()'s FakeEmbedding, which records what it embeds
    before = len(embed.texts_embedded)
    DocumentAwareRetriever(index, DocumentIndex.from_nodes(corpus())).retrieve(QueryBundle("Kestrel secret"))
    # the query once for every dense query, and what it asks ("secret", without the name) once for the clause order
    assert embed.texts_embedded[before:] == ["Kestrel secret", "secret"]
    assert np.isfinite([score(n) for n in DocumentAwareRetriever(index, DocumentIndex.from_nodes(corpus()))
                        .retrieve("Osprey")]).all()


def test_summaries_can_be_kept_out_of_the_embedding_for_the_document_index() -> None:
    from llama_index.core.schema import Document, MetadataMode

    from llama_index_sac import RecursiveCharacterNodeParser, SummaryAugmentationTransformation

    doc = Document(text="MUTUAL NON-DISCLOSURE AGREEMENT between Kestrel Analytics, Inc. and Marlow Biotech Ltd. "
                   + "The Receiving Party shall keep secrets. " * 20, id_="nda.txt")
    nodes = RecursiveCharacterNodeParser(chunk_size=200)([doc])
    plain = SummaryAugmentationTransformation(embed_summary=False)(nodes)
    assert all(n.get_content(MetadataMode.EMBED) == n.get_content(MetadataMode.NONE) for n in plain)
    assert DocumentIndex.from_nodes(plain).summaries["nda.txt"].startswith("Mutual Non-Disclosure Agreement")


@pytest.mark.slow
def test_the_runner_offers_it_and_weight_zero_is_plain_sac(tmp_path: Path) -> None:
    from llama_index_sac import synthetic_contracts
    from llama_index_sac.apps.benchmark.config import EvaluationSetupError, RunSettings, parse_config
    from llama_index_sac.apps.benchmark.runner import run_evaluation

    configs = [parse_config("sac"),
               parse_config("sac-doc:document_retrieval.prior_weight=0,document_retrieval.focus_documents=0,name=w0"),
               parse_config("sac-doc"), parse_config("baseline-doc")]
    settings = RunSettings(ks=[1, 4], cache_dir=tmp_path, show_progress=False)
    results = run_evaluation(synthetic_contracts(8), configs, settings, embed_model=FakeEmbedding())
    plain, zero = results.config("sac"), results.config("w0")
    assert [r.retrieved for r in plain.records or []] == [r.retrieved for r in zero.records or []]
    assert results.config("sac-doc").aggregates.overall["4"].recall is not None
    assert results.config("baseline-doc").config.augmentation.embed_summary is False
    assert results.config("sac-doc").config.document_retrieval.name_weight == DEFAULT_NAME_WEIGHT
    with pytest.raises(ValueError, match="name_weight"):
        parse_config("sac-doc:document_retrieval.name_weight=1.5")
    for bad, match in (("baseline:retrieval=document-aware", "needs document summaries"),
                       ("sac:augmentation.embed_summary=false", "only makes sense")):
        with pytest.raises(EvaluationSetupError, match=match):
            parse_config(bad)


# -- distinctive names (document_names) and the names' share of the prior -----------------------------------------


def test_name_tokens_keep_capitalised_words_and_drop_possessives_and_stop_words() -> None:
    from llama_index_sac.retrievers.document_names import name_tokens, query_tokens, word_tokens

    text = "Consider Motorola's Non-Disclosure Agreement between CEII and 23andMe; The 2017-18 non-Disclosure X a-B."
    assert name_tokens(text) == ["consider", "motorola", "non-disclosure", "agreement", "ceii", "23andme"]
    assert word_tokens("Fiverr’s policy: the data-") == ["fiverr", "policy", "data"]
    # a query that capitalises only stop words is looked up with all its words
    assert query_tokens("what does the acme nda say?") == word_tokens("what does the acme nda say?")
    assert query_tokens("In the Acme MSA, what is the notice period?") == ["acme", "msa"]
    with pytest.raises(TypeError, match="str"):
        name_tokens(b"Acme")  # type: ignore[arg-type]


def test_distinctive_names_are_the_names_few_reference_documents_contain() -> None:
    from llama_index_sac import TermStatistics
    from llama_index_sac.retrievers.document_names import distinctive_names

    table = TermStatistics({"agreement": 50, "acme": 1, "receiving": 30, "party": 40, "kestrel": 4}, 100)
    text = "This Agreement between Acme and Kestrel. The Receiving Party and ACME keep Zyx secret."
    assert distinctive_names(text, statistics=table, max_document_frequency=0.05) == {"acme": 2, "kestrel": 1,
                                                                                       "zyx": 1}
    assert distinctive_names(text, statistics=table, max_document_frequency=0.04) == {"acme": 2, "zyx": 1}
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match="max_document_frequency"):
            distinctive_names(text, max_document_frequency=bad)
    with pytest.raises(TypeError, match="TermStatistics"):
        distinctive_names(text, statistics={"acme": 1})  # type: ignore[arg-type]


def named_only_in_the_text() -> list[TextNode]:
    """Three NDAs whose summaries are identical; only the text names the company (as users' queries do)."""
    out = []
    for doc_id, company in (("a.txt", "Motorola"), ("b.txt", "Velco"), ("c.txt", "Seeed")):
        first = f"This Non-Disclosure Agreement is made by {company}, the Disclosing Party. "
        second = f"{company} may end it. " + CLAUSE
        for i, (start, text) in enumerate(((0, first), (len(first) - 10, first[-10:] + second))):  # overlapping
            node = TextNode(text=text, id_=f"{doc_id}#{i}", start_char_idx=start, end_char_idx=start + len(text),
                            metadata={"document_summary": "Non-Disclosure Agreement. Key terms: Receiving."})
            node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=doc_id)
            out.append(node)
    return out


def test_names_find_the_document_its_summary_does_not_name(tmp_path: Path) -> None:
    nodes = named_only_in_the_text()
    query = "Consider Velco's Non-Disclosure Agreement; may the Receiving Party keep copies?"
    summaries_only = DocumentIndex.from_nodes(nodes, names=False)  # no summary names Velco: no document located
    assert summaries_only.names is None and summaries_only.prior(query).tolist() == [0.0, 0.0, 0.0]
    assert DocumentIndex.from_nodes(nodes, names=False, locator_only=False).prior(query).tolist() == [1.0, 1.0, 1.0]
    index = DocumentIndex.from_nodes(nodes, name_weight=0.5, outside_prior=1.0)
    # the text rebuilt from the overlapping chunks counts each name once per use: "Velco" twice
    assert index.names is not None and index.names["b.txt"] == {"velco": 2}
    assert index.prior(query).tolist() == [0.5, 1.0, 0.5]  # (1 - 0.5) * 1 (summaries) + 0.5 * (names: b only)
    # the default keeps no prior outside the document the question names (Velco's: b)
    assert DocumentIndex.from_nodes(nodes, name_weight=0.5).prior(query).tolist() == [0.0, 1.0, 0.0]
    assert DocumentIndex.from_nodes(nodes, name_weight=1.0).prior_of(query) == {"b.txt": 1.0}
    loaded = DocumentIndex.load(index.save(tmp_path / "docs.json"))
    assert (loaded.names, loaded.options.name_weight) == (index.names, 0.5)
    assert loaded.prior(query).tolist() == index.prior(query).tolist()
    # a summaries-only index (names=None) is saved and loaded as one
    assert DocumentIndex.load(summaries_only.save(tmp_path / "plain.json")).names is None
    with pytest.raises(ValueError, match="name_weight"):
        DocumentIndex({"a": "x"}, name_weight=1.5)
    with pytest.raises(ValueError, match="without a summary"):
        DocumentIndex({"a": "x"}, {"b": {"acme": 1}})
    with pytest.raises(TypeError, match="counts"):
        DocumentIndex({"a": "x"}, {"a": {"acme": 0}})


_NAMEY = st.text(alphabet=st.sampled_from(list("AbCdEz19-_'’ .,;\n\tÉé")), max_size=200)


@settings(max_examples=200, deadline=None)
@given(_NAMEY)
def test_name_tokens_are_lower_cased_words_of_the_text(text: str) -> None:
    from llama_index_sac.retrievers.document_names import name_tokens, word_tokens

    low = text.lower()
    for token in name_tokens(text):
        assert token == token.lower() and len(token) >= 2 and any(c.isalpha() for c in token)
        assert token in low and not token.startswith("-") and not token.endswith("-")
    assert set(name_tokens(text)) <= set(word_tokens(text))  # names are words that start capitalised


@settings(max_examples=100, deadline=None)
@given(st.lists(_NAMEY, min_size=1, max_size=5), _NAMEY)
def test_the_prior_is_in_0_1_with_its_maximum_at_1_or_all_zero(texts: list[str], query: str) -> None:
    from llama_index_sac import distinctive_names

    summaries = {f"d{i}": text[:60] for i, text in enumerate(texts)}
    names = {f"d{i}": dict(distinctive_names(text)) for i, text in enumerate(texts)}
    for weight in (0.0, 0.5, 1.0):
        prior = DocumentIndex(summaries, names, name_weight=weight).prior(query)
        assert prior.shape == (len(texts),) and ((prior >= 0) & (prior <= 1 + 1e-12)).all()
        # each match is divided by its own maximum: the best document of a matching part gets its whole share
        assert prior.max() == 0 or prior.max() >= (0.5 if weight == 0.5 else 1.0) - 1e-12


@pytest.mark.parametrize("query", [
    "Kestrel Osprey Acme",  # only names
    "the of and is it",  # only stop words
    "Does the Kestrel NDA " + "really " * 1430 + "keep information secret?",  # about 10,000 characters
    "ケストレル社の秘密保持契約では情報は何年秘密ですか？",  # another script
    "Do the Kestrel NDA and the Osprey NDA keep information secret for the same time?",  # two documents
])
def test_bad_questions_get_a_ranked_answer(query: str) -> None:
    """Every question gets the top-k ranked (the store holds 6 chunks; k = 4), scores finite and in order."""
    hits = DocumentAwareRetriever(build(corpus()), DocumentIndex.from_nodes(corpus()), similarity_top_k=4).retrieve(
        query)
    scores = [score(hit) for hit in hits]
    assert len(hits) == 4 and np.isfinite(scores).all() and scores == sorted(scores, reverse=True)


def test_a_question_naming_no_document_ranks_as_the_dense_retrieval_of_the_same_chunks() -> None:
    index = build(corpus())
    question = "How long must the Receiving Party keep the Confidential Information secret?"
    aware = DocumentAwareRetriever(index, DocumentIndex.from_nodes(corpus()), similarity_top_k=4).retrieve(question)
    dense = index.as_retriever(similarity_top_k=4).retrieve(question)
    assert [(h.node.node_id, h.score) for h in aware] == [(h.node.node_id, h.score) for h in dense]
    named = DocumentAwareRetriever(index, DocumentIndex.from_nodes(corpus()), similarity_top_k=4).retrieve(
        "How long must the Receiving Party keep the Confidential Information secret, under the Osprey NDA?")
    assert named[0].node.ref_doc_id == "nda-osprey.txt"
