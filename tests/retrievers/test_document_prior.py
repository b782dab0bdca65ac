"""The document prior reads the query's locator clause only, and a hyphenated word gives its distinctive parts."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llama_index_sac import DocumentIndex
from llama_index_sac.retrievers import document_names
from llama_index_sac.retrievers.document_names import with_word_parts, word_tokens
from llama_index_sac.summarizers.terms import TermStatistics, stop_words

# 100 documents: a word is distinctive below 2 of them (the default 2%)
TABLE = TermStatistics({"nda": 50, "privacy": 70, "policy": 60, "agreement": 90, "txt": 40}, 100)


def test_a_hyphenated_word_gives_its_distinctive_parts_only() -> None:
    words = word_tokens("AGProjects-NDA.txt, the privacy-policy of x-Acme, Acme-2024 and co-acme")
    assert words == ["agprojects-nda", "txt", "privacy-policy", "x-acme", "acme-2024", "co-acme"]
    # agprojects, acme: in no document of the table; nda, privacy, policy: frequent; x: one character; 2024: no
    # letter; co: an English stop word
    assert with_word_parts(words, statistics=TABLE) == [
        "agprojects-nda", "agprojects", "txt", "privacy-policy", "x-acme", "acme", "acme-2024", "acme", "co-acme",
        "acme"]
    # a looser limit: nda (50 of 100) is now distinctive too
    assert with_word_parts(["agprojects-nda"], statistics=TABLE, max_document_frequency=0.6) == [
        "agprojects-nda", "agprojects", "nda"]
    with pytest.raises(ValueError, match="max_document_frequency must be in"):
        with_word_parts(words, max_document_frequency=0)
    with pytest.raises(TypeError, match="statistics must be a TermStatistics"):
        with_word_parts(words, statistics={"nda": 1})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not a str"):
        with_word_parts("agprojects-nda")


AG = {"ag": "AGProjects-NDA.txt: Non-Disclosure Agreement", "kestrel": "Non-Disclosure Agreement with Kestrel"}


def test_a_query_naming_a_hyphenated_file_name_finds_its_summary() -> None:
    query = "Consider the AGProjects NDA; may copies be made?"
    assert DocumentIndex(AG, statistics=TABLE).prior_of(query) == {"ag": 1.0}
    # without the parts, "agprojects" matches nothing and the summaries tie on "nda"-less words: no document stands
    # out in the whole prior; kept to the document the locator names (the default outside_prior=0), it has 1
    assert DocumentIndex(AG, statistics=TABLE, word_parts=False, outside_prior=1.0).prior_of(query) == {}
    assert DocumentIndex(AG, statistics=TABLE, word_parts=False).prior_of(query) == {"ag": 1.0}


HUB = {"hub": "Receiving Party shall keep Confidential Information", "kestrel": "Kestrel Analytics and Marlow NDA"}


def test_the_prior_reads_only_the_locator_clause() -> None:
    query = "Consider Kestrel's NDA; must the Receiving Party keep Confidential Information?"
    # the whole query: the question's words make the hub summary match too (and best: it holds four of them)
    whole = DocumentIndex(HUB, locator_only=False).prior_of(query)
    assert set(whole) == {"hub", "kestrel"} and whole["hub"] == 1.0
    assert DocumentIndex(HUB).prior_of(query) == {"kestrel": 1.0}  # "Consider Kestrel's NDA; " only
    # the name anywhere: only the phrase that names the document is read ("at Kestrel", "Kestrel's NDA")
    plain = "Must the Receiving Party at Kestrel keep Confidential Information?"
    assert DocumentIndex(HUB, locator_only=False).prior_of(plain)["hub"] == 1.0
    assert DocumentIndex(HUB).prior_of(plain) == {"kestrel": 1.0}
    assert DocumentIndex(HUB).prior_of("May the Receiving Party keep copies, under Kestrel's NDA?") == {"kestrel": 1.0}
    assert DocumentIndex(HUB).prior_of("Consider Kestrel's NDA;") == {"kestrel": 1.0}
    assert DocumentIndex(HUB).prior_of("In short; does the Kestrel NDA allow copies?") == {"kestrel": 1.0}
    # no document named: no prior at all (the whole query would make the hub summary a confident wrong document)
    assert DocumentIndex(HUB).prior_of("Must the Receiving Party keep Confidential Information?") == {}
    with pytest.raises(TypeError, match="query must be a str"):
        DocumentIndex(HUB).prior(None)  # type: ignore[arg-type]


def test_the_options_are_checked() -> None:
    with pytest.raises(ValueError, match="^locator_only: Input should be a valid boolean, got 1$"):
        DocumentIndex(HUB, locator_only=1)
    with pytest.raises(ValueError, match="^word_parts: Input should be a valid boolean, got 'yes'$"):
        DocumentIndex(HUB, word_parts="yes")
    with pytest.raises(ValueError, match="^max_document_frequency: Input should be less than or equal to 1, got 1.5$"):
        DocumentIndex(HUB, max_document_frequency=1.5)


def test_an_index_loads_only_with_the_table_it_was_saved_with(tmp_path: Path) -> None:
    path = DocumentIndex(AG, statistics=TABLE).save(tmp_path / "ag.json")
    with pytest.raises(ValueError, match="ag.json: saved with the term statistics .* pass statistics="):
        DocumentIndex.load(path)
    loaded = DocumentIndex.load(path, statistics=TABLE)
    assert loaded.prior_of("Consider the AGProjects NDA; copies?") == {"ag": 1.0}
    assert DocumentIndex.from_persist_dir(*_persisted(tmp_path), statistics=TABLE).options == loaded.options
    with pytest.raises(TypeError, match="statistics must be a TermStatistics"):
        DocumentIndex.load(path, statistics={"nda": 1})  # type: ignore[arg-type]
    # without word parts the table plays no part: any table loads it
    plain = DocumentIndex(AG, statistics=TABLE, word_parts=False).save(tmp_path / "plain.json")
    assert DocumentIndex.load(plain).options.model_dump()["word_parts"] is False
    # a v4 file must name its table
    data = json.loads(path.read_text())
    for bad in (None, 3):
        data["statistics"] = bad
        (tmp_path / "bad.json").write_text(json.dumps(data))
        with pytest.raises(ValueError, match="bad.json: bad document index .statistics must be"):
            DocumentIndex.load(tmp_path / "bad.json", statistics=TABLE)


def _persisted(tmp_path: Path) -> tuple[Path, str]:
    DocumentIndex(AG, statistics=TABLE).persist(tmp_path / "storage")
    return tmp_path / "storage", "document_index.json"


def test_a_pickled_index_does_not_carry_the_shipped_table() -> None:
    index = DocumentIndex(AG)
    copy = pickle.loads(pickle.dumps(index))
    assert len(pickle.dumps(index)) < 4096 and copy.statistics is TermStatistics.default()
    query = "Consider the AGProjects NDA; copies?"
    assert copy.prior(query).tolist() == index.prior(query).tolist() and set(copy.prior_of(query)) == {"ag"}




def _word_by_word(text: str) -> list[str]:
    """word_tokens by its rule, one run at a time (the path every non-ASCII text takes)."""
    found = (document_names._word(run, False, stop_words()) for run in document_names._RUN_RE.findall(text))
    return [word for word in found if word is not None]


@given(st.text(alphabet=st.sampled_from(list("aZq9_-' .,;\n\"Eéİß")), max_size=80))
def test_word_tokens_of_ascii_text_follow_the_rule_of_each_run(text: str) -> None:
    assert word_tokens(text) == _word_by_word(text)  # ASCII texts take the lower-cased fast path, the others not


def test_word_tokens_hand_worked_ascii_and_not() -> None:
    text = "The Receiving-Party's 2 copies of NDA-2024, -x- 12-34 _a_ Co_Op"
    assert text.isascii() and word_tokens(text) == ["receiving-party", "copies", "nda-2024", "co_op"]
    assert word_tokens("Die Ärzte-Kammer of İstanbul") == ["die", "ärzte-kammer", "i̇stanbul"]
