"""DocumentLocator: the documents a question names, wherever it names them, and what it asks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llama_index_sac.retrievers.document_index import DocumentIndex
from llama_index_sac.retrievers.locator import DocumentLocator, Located, file_name_words, title_acronyms

NAMES = {
    "contracts/acme-nda.txt": {"acme": 12, "dunmore": 4},
    "contracts/kestrel_msa.txt": {"kestrel": 9, "marlow": 3},
    "contracts/osprey.txt": {"osprey": 7, "fairhaven": 2},
    "policies/Keep.txt": {"healthkit": 4},
}
SUMMARIES = {
    "contracts/acme-nda.txt": "acme-nda. Non-Disclosure Agreement between Acme Logistics Corp. and Dunmore Software.",
    "contracts/kestrel_msa.txt": "kestrel msa. Master Services Agreement between Kestrel Analytics and Marlow Biotech.",
    "contracts/osprey.txt": "osprey. Mutual Non-Disclosure Agreement between Osprey Robotics and Fairhaven Software.",
    "policies/Keep.txt": "Keep. Privacy Policy: App. Key terms: HealthKit, collect, training.",
}
LOCATOR = DocumentLocator(NAMES, SUMMARIES)
ACME, KESTREL, OSPREY, KEEP = NAMES


@pytest.mark.parametrize(("query", "documents", "question"), [
    # the template, and the same question with the name after it, inside it, short and possessive
    ("Consider the Non-Disclosure Agreement between Acme and Dunmore; Does the document allow copies?", (ACME,),
     "Does the document allow copies?"),
    ("Does the agreement allow copies, in the Non-Disclosure Agreement between Acme and Dunmore?", (ACME,),
     "Does the agreement allow copies?"),
    ("Does the Acme NDA allow copies?", (ACME,), "Does it allow copies?"),
    ("Under Kestrel's MSA, what is the notice period?", (KESTREL,), "what is the notice period?"),
    ("What is the notice period of the Master Services Agreement between Kestrel Analytics and Marlow Biotech?",
     (KESTREL,), "What is the notice period?"),
    ("can the app read my HealthKit data, according to Keep's privacy policy?", (KEEP,),
     "can the app read my HealthKit data?"),
    ("does osprey share my data?", (OSPREY,), "does it share my data?"),  # no capitals: its rare words name it
    # no document named: none located, the question itself
    ("Which of our NDAs let the recipient keep copies?", (), "Which of our NDAs let the recipient keep copies?"),
    ("Does the Receiving Party have to return Confidential Information?", (),
     "Does the Receiving Party have to return Confidential Information?"),
    ("Where is the Notice Clause", (), "Where is the Notice Clause"),
])
def test_documents_are_located_by_their_names_wherever_the_question_names_them(query, documents, question):
    found = LOCATOR.locate(query)
    assert found.documents == documents and found.question == question
    assert bool(found) == bool(documents)
    for start, end in found.spans:  # each span is a phrase of the query that holds a name
        assert 0 <= start < end <= len(query)


def test_two_documents_named_are_both_located_and_the_question_keeps_its_words():
    found = LOCATOR.locate("Do the Acme NDA and the Kestrel MSA both allow copies?")
    assert set(found.documents) == {ACME, KESTREL}
    assert "allow copies" in found.question and "Acme" not in found.question and "Kestrel" not in found.question


def test_a_rare_capitalised_word_is_a_name_only_in_a_phrase_that_reads_as_a_documents_name():
    """"Dunmore" is one document's name, yet "the Dunmore Clause" is what is asked about (no type word, possessive,
    "between" or preposition); in "Under the Dunmore agreement" it names the document."""
    assert LOCATOR.locate("Where is the Dunmore Clause").documents == ()
    assert LOCATOR.locate("Under the Dunmore agreement, where is the notice clause?").documents == (ACME,)
    # a word of the file name names its document without more ("does osprey ..."); one that is a stop word
    # ("Keep") only in such a phrase, written as a name inside the sentence
    assert LOCATOR.locate("Does Osprey sell my data?").documents == (OSPREY,)
    assert LOCATOR.locate("Does Keep sell my data?").documents == ()
    assert LOCATOR.locate("Does Keep's policy let it sell my data?").documents == (KEEP,)
    assert LOCATOR.locate("Keep's policy: may it sell my data?").documents == ()  # the first word of a sentence


def test_a_word_many_documents_hold_names_none():
    names = {f"d{i}.txt": {"acme": 1} for i in range(4)}
    assert DocumentLocator(names).locate("Under the Acme NDA, may I keep copies?").documents == ()  # 4 > 3
    assert DocumentLocator(names, max_documents=4).locate("Under the Acme NDA, may I?").documents == tuple(names)
    two = DocumentLocator({"a": {"acme": 1, "dunmore": 1}, "b": {"acme": 1}}, min_share=0.5)
    assert two.locate("Under the Acme NDA, may I?").documents == ("a", "b")  # 1/2 each: a tie
    assert two.locate("Under the Acme NDA with Dunmore, may I?").documents == ("a",)  # 1.5 against 0.5
    assert DocumentLocator({"a": {"acme": 1}, "b": {"acme": 1}}).locate("Under the Acme NDA?").documents == ("a", "b")


def test_title_acronyms():
    assert title_acronyms(SUMMARIES[KESTREL]) == {"msa"}  # "Master Services Agreement"; the lower-case stem is none
    assert title_acronyms(SUMMARIES[OSPREY]) == {"mnda", "nda"}  # one initial per part of "Non-Disclosure"
    # two words ("Supply Agreement"), a title broken by "and"/"of", words apart, a head word not capitalised: none
    assert title_acronyms("Supply Agreement. Agreement and Plan of Merger. Master  Services, Agreement. Acme nda "
                          "agreement.") == set()
    # at most the last six words' initials
    assert title_acronyms("Alpha Beta Gamma Delta Epsilon Zeta Eta Lease") == {"ezel", "dezel", "gdezel", "zel"}


def test_a_title_acronym_names_its_document_among_look_alikes():
    # a regression: two documents of the same two parties, an NDA and a services agreement; "the Quartz MSA" located
    # both by "Quartz", and the prior, which reads the NDA's summary as closer, answered from the NDA
    names = {"nda/meridian_quartz_nda.md": {"quartz": 3, "meridian": 3},
             "commercial/quartz_services_agreement.txt": {"quartz": 2, "meridian": 2}}
    summaries = {"nda/meridian_quartz_nda.md": "meridian quartz nda. Confidentiality Agreement between Meridian "
                                                "Shipping Ltd. and Quartz Analytics Pty Ltd.",
                 "commercial/quartz_services_agreement.txt": "quartz services agreement. Master Services Agreement, "
                                                              "dated February 2, 2022."}
    locator = DocumentLocator(names, summaries)
    # "Quartz": 2 (file name) / 2 documents each; "MSA": 1 / 1 document, the services agreement's title acronym
    for query in ("In the Quartz MSA, what is the SLA?", "What's the uptime SLA Quartz promises Meridian in the MSA?"):
        assert locator.locate(query).documents == ("commercial/quartz_services_agreement.txt",), query
    assert locator.locate("In the Quartz MSA, what is the SLA?").question == "what is the SLA?"
    # an acronym held by more than max_documents documents names none, as any word does
    many = {f"nda-{i}.txt": f"nda {i}. Non-Disclosure Agreement between Party{i} and Other{i}." for i in range(4)}
    assert not DocumentLocator({}, many).locate("Does the NDA allow copies?")


def test_file_name_words():
    assert file_name_words("privacy_qa/Keep.txt") == ["keep"]
    assert file_name_words("contractnli/Grindrod%20SA%20NDA.txt") == ["grindrod", "sa", "nda"]
    assert file_name_words("C:\\docs\\acme-nda_v2.pdf") == ["acme", "nda", "v2"]
    assert file_name_words("3f2a9c1e") == ["3f2a9c1e"] and file_name_words("2024.txt") == []


@pytest.mark.parametrize("query", [
    "Acme Kestrel Osprey",  # only names
    "the of and is it",  # only stop words
    "Does the " + "Acme " * 2000 + "NDA allow copies?",  # 10,000 characters
    "x" * 10_000,
    "¿Permite el acuerdo de Acme hacer copias?",  # another language
    "アクメ社の秘密保持契約はコピーを認めますか？",  # another script
    "Does the Acme NDA or the Kestrel MSA allow copies?",  # two documents
    "", " ", "?", "'s", "Acme's'", "- - -", "\u200b", "a\x00b",
])
def test_bad_input_gives_an_answer_never_an_error(query):
    found = LOCATOR.locate(query)
    assert isinstance(found, Located) and isinstance(found.question, str)
    assert found.question if query.strip() and any(c.isalnum() for c in query) else True
    assert set(found.documents) <= set(NAMES)


def test_the_locator_is_linear_in_the_query():
    """A long question of names and glue words: every phrase is widened once (the spans do not overlap)."""
    query = " and ".join(["the Acme NDA"] * 3000)
    found = LOCATOR.locate(query)
    assert found.documents == (ACME,)
    ends = [end for _, end in found.spans]
    assert all(a[1] <= b[0] for a, b in zip(found.spans, found.spans[1:])) and ends == sorted(ends)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(list("AaKk e'-,.;?") + ["Acme", "Kestrel", " NDA ", " the ", " of "]),
                max_size=40).map("".join))
def test_any_text_gives_located_documents_of_the_index_and_spans_inside_the_query(query):
    found = LOCATOR.locate(query)
    assert set(found.documents) <= set(NAMES)
    assert all(0 <= s < e <= len(query) for s, e in found.spans)
    assert not found.documents or found.spans
    assert found.question == query or found.documents


def test_bad_options_are_named():
    with pytest.raises(ValueError, match="max_documents must be an int >= 1"):
        DocumentLocator(NAMES, max_documents=0)
    with pytest.raises(ValueError, match=r"min_share must be a number in \(0, 1\]"):
        DocumentLocator(NAMES, min_share=0)
    with pytest.raises(TypeError, match="names must be a mapping"):
        DocumentLocator(["acme"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="query must be a str"):
        LOCATOR.locate(None)  # type: ignore[arg-type]


def test_the_prior_reads_the_naming_phrase_and_a_question_naming_no_document_has_none():
    index = DocumentIndex(SUMMARIES, NAMES)
    named = index.prior_of("May the recipient keep copies, under the Osprey NDA?")
    assert max(named, key=lambda d: named[d]) == OSPREY and named[OSPREY] == 1.0
    assert index.prior("May the recipient keep copies of Confidential Information?").tolist() == [0.0] * 4
    assert index.locate("Under the Osprey NDA, may I?") is index.locate("Under the Osprey NDA, may I?")  # remembered
    whole = DocumentIndex(SUMMARIES, NAMES, locator_only=False)
    generic = "Does the Non-Disclosure Agreement allow copies?"
    assert np.count_nonzero(whole.prior(generic)) > 0 and not index.prior(generic).any()


# name phrases: parties named by common words (each word in more than max_documents documents)
COMMON = {f"other/{i}.txt": {"florida": 1, "chemical": 1, "information": 1, "capital": 1, "partners": 1}
          for i in range(4)}
PHRASE_SUMMARIES = {
    "cuad/FLOTEK-SUPPLY AGREEMENT.txt": "FLOTEK SUPPLY AGREEMENT. Supply Agreement between Florida Chemical Company, "
                                        "LLC and Flotek Chemistry, LLC.",
    "cuad/DUOS-STRATEGIC ALLIANCE AGREEMENT.txt": "DUOS. Strategic Alliance Agreement between Information System "
                                                  "Associates, Inc.",
    "maud/Bank of Commerce Holdings_Columbia Banking System, Inc..txt": "Agreement and Plan of Merger between "
                                                                        "Columbia Banking System, Inc. and Bank of "
                                                                        "Commerce",
    "nda/juniper.txt": "Non-Disclosure Agreement between Copperleaf Biotech LLC and Juniper Capital Partners LP.",
    "nda/acme.txt": "Mutual Non-Disclosure Agreement between Emberton Analytics Inc. and Acme Capital Partners LP.",
    "nda/larkspur.txt": "Mutual Non-Disclosure Agreement between Larkspur Energy and Everly Capital Partners LP.",
}
PHRASES = DocumentLocator({**COMMON, **{d: {} for d in PHRASE_SUMMARIES}}, PHRASE_SUMMARIES)
FLOTEK, DUOS, COLUMBIA, JUNIPER, _, _ = PHRASE_SUMMARIES


def test_a_name_of_common_words_is_located_as_a_phrase():
    """"Florida" and "Chemical" are each in more than max_documents documents: alone they name none; as the name
    phrase of one document's parties they name it."""
    assert PHRASES.documents_of("florida") == {} and PHRASES.documents_of_phrase("florida", "chemical") == {FLOTEK: 2.0}
    found = PHRASES.locate("Under Florida Chemical Company's supply agreement, what is the governing law?")
    assert found.documents == (FLOTEK,) and found.question == "what is the governing law?"
    assert PHRASES.locate("What is the governing law, in the agreement of Florida Chemical?").documents == (FLOTEK,)
    # the phrase must read as a document's name, as a single name must ("the Florida Chemical clause" does not)
    assert PHRASES.locate("Where is the Florida Chemical clause").documents == ()
    assert PHRASES.locate("Does florida chemical law apply?").documents == ()  # not written as a name
    # a name phrase holding a word of the document's file name names it without more, as that word does
    assert LOCATOR.locate("Osprey Robotics Confidential Information secret").documents == (OSPREY,)


def test_a_longer_name_outweighs_its_words():
    """"System" names the document whose file name holds it (a stop word there: weight 0.5), yet "Information
    System Associates" is the name phrase of another's parties: the phrase counts, its words do not on their own."""
    assert PHRASES.documents_of("system") == {COLUMBIA: 0.5}
    assert PHRASES.locate("Under Columbia Banking System's merger agreement, may it?").documents == (COLUMBIA,)
    found = PHRASES.locate("Under Information System Associates' alliance agreement, is there a cap on liability?")
    assert found.documents == (DUOS,) and found.question == "is there a cap on liability?"


def test_a_name_phrase_is_read_from_the_start_of_the_name():
    """"Capital Partners" is in three documents' parties, but "Juniper Capital Partners LP" is told apart by its first
    words: only the phrase at the start of a run of names is looked up."""
    assert len(PHRASES.documents_of_phrase("capital", "partners")) == 3  # at most max_documents=3: a name phrase
    assert len(PHRASES.locate("Under the Capital Partners NDA, may I keep copies?").documents) == 3
    query = "Under the NDA between Copperleaf Biotech LLC and Juniper Capital Partners LP, may I keep copies?"
    assert PHRASES.locate(query).documents == (JUNIPER,)


def test_name_phrases_keep_the_locator_linear():
    """A 10,000-word question of capitalised words: one phrase look-up at most per word, spans in order and
    disjoint."""
    calls = 0

    class Counting(DocumentLocator):
        def documents_of_phrase(self, first: str, second: str) -> dict[str, float]:
            nonlocal calls
            calls += 1
            return super().documents_of_phrase(first, second)

    counting = Counting({**COMMON, **{d: {} for d in PHRASE_SUMMARIES}}, PHRASE_SUMMARIES)
    cases = [(" ".join(["Florida Chemical Company's NDA and"] * 2000), 10_000, (FLOTEK,)),
             # one run of 10,000 names: one phrase at its start ("florida_information": none); "System" names the
             # document of its file name
             ("Under " + " ".join(["Florida", "Information", "Capital", "System"] * 2500) + " NDA?", 10_002,
              (COLUMBIA,)),
             (" ".join(["Under Florida Chemical's NDA"] * 2500), 10_000, (FLOTEK,))]
    for query, words, documents in cases:
        calls = 0
        found = counting.locate(query)
        assert calls <= words and found.documents == documents
        assert all(a[1] <= b[0] for a, b in zip(found.spans, found.spans[1:]))


def test_outside_prior_is_the_share_of_the_prior_kept_outside_the_documents_the_question_names():
    """The phrase "Under Osprey's NDA" shares "NDA" with every NDA summary: at outside_prior=0 only Osprey's has a
    prior (1.0), at 1 the others keep their whole match, at 0.5 half of it."""
    query = "Under Osprey's Non-Disclosure Agreement, may I keep copies?"
    shared = DocumentIndex(SUMMARIES, NAMES, outside_prior=1.0).prior_of(query)
    assert shared[OSPREY] == 1.0 and set(shared) > {OSPREY}
    assert DocumentIndex(SUMMARIES, NAMES).prior_of(query) == {OSPREY: 1.0}  # the default: 0
    assert DocumentIndex(SUMMARIES, NAMES, outside_prior=0.0).prior_of(query) == {OSPREY: 1.0}
    half = DocumentIndex(SUMMARIES, NAMES, outside_prior=0.5)
    assert half.prior_of(query) == {d: 1.0 if d == OSPREY else p / 2 for d, p in shared.items()}
    assert half.prior_of(query, whole=True) == shared  # what the ranking chooses its located documents by
    # a question naming no document: no prior at any share; two documents named: both keep theirs
    assert not DocumentIndex(SUMMARIES, NAMES, outside_prior=0.0).prior("May I keep copies?").any()
    two = DocumentIndex(SUMMARIES, NAMES, outside_prior=0.0).prior_of("Do the Acme NDA and the Kestrel MSA differ?")
    assert set(two) == {ACME, KESTREL} and max(two.values()) == 1.0
    with pytest.raises(ValueError, match="outside_prior"):
        DocumentIndex(SUMMARIES, NAMES, outside_prior=1.5)


@pytest.mark.parametrize(("share", "whole", "expected"), [
    # doc_ids: Acme, Kestrel (the two named), Osprey, Keep; the whole prior favours Osprey, which is not named
    (1.0, [0.6, 0.3, 1.0, 0.2], [0.6, 0.3, 1.0, 0.2]),
    # named, kept: 0.6 / 0.6 and 0.3 / 0.6
    (0.5, [0.6, 0.3, 1.0, 0.2], [0.5 * 0.6 + 0.5 * 1.0, 0.5 * 0.3 + 0.5 * 0.5, 0.5, 0.1]),
    (0.0, [0.6, 0.3, 1.0, 0.2], [1.0, 0.5, 0.0, 0.0]),
    # the named documents match nothing: 1 each once kept to them
    (0.0, [0.0, 0.0, 1.0, 0.2], [1.0, 1.0, 0.0, 0.0]),
    (0.5, [0.0, 0.0, 1.0, 0.2], [0.5, 0.5, 0.5, 0.1]),
])
def test_outside_prior_by_hand(share: float, whole: list[float], expected: list[float],
                               monkeypatch: pytest.MonkeyPatch) -> None:
    """``s * P + (1 - s) * K``: P the whole prior, K the prior kept to the named documents (divided by its maximum
    over them)."""
    index = DocumentIndex(SUMMARIES, NAMES, outside_prior=share)
    assert index.doc_ids == [ACME, KESTREL, OSPREY, KEEP]
    read: list[str] = []

    def match(phrases: str) -> np.ndarray:
        read.append(phrases)
        return np.array(whole)

    monkeypatch.setattr(index, "_prior", match)
    query = "Do the Acme NDA and the Kestrel MSA differ?"
    assert set(index.locate(query).documents) == {ACME, KESTREL}
    assert index.prior(query).tolist() == pytest.approx(expected, abs=1e-15)
    assert index.prior(query, whole=True).tolist() == whole
    assert index.prior(query).tolist() == pytest.approx(expected, abs=1e-15)  # the remembered match is not changed
    assert len(read) == 1  # the prior and the whole prior of one query: the phrases matched once
