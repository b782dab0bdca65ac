"""Sentence segmentation: exact spans that tile the text, legal abbreviations, other scripts, no silent fallback."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llama_index_sac import sentences as sentences_module
from llama_index_sac.sentences import sentence_spans, sentences
from tests.conftest import load_case

LEGAL = (
    "See Sec. 4.2 of the Agreement. It cites 35 U.S.C. § 101 and Fed. R. Civ. P. 12(b)(6). "
    "Acme Inc. shall pay. No. 5 applies."
)


def assert_tiles(text, spans):
    assert "".join(text[s:e] for s, e in spans) == text
    assert all(s < e for s, e in spans)
    if spans:
        assert spans[0][0] == 0 and spans[-1][1] == len(text)
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))


def test_legal_abbreviations_do_not_end_sentences():
    assert sentences(LEGAL) == [
        "See Sec. 4.2 of the Agreement. ",
        "It cites 35 U.S.C. § 101 and Fed. R. Civ. P. 12(b)(6). ",
        "Acme Inc. shall pay. ",
        "No. 5 applies.",
    ]


def test_nltk_backend_runs_offline_and_tiles():
    spans = sentence_spans(LEGAL, backend="nltk")
    assert_tiles(LEGAL, spans)
    # NLTK's English Punkt is the weaker one on legal text: it breaks after "Sec." (why nupunkt is the default)
    assert len(spans) > 4


@pytest.mark.parametrize("backend", ["nupunkt", "nltk"])
def test_sentence_ends_of_other_scripts(backend):
    text = "本合同自签署之日起生效。双方应遵守！是否续约？ هذا العقد ساري؟ نعم۔ The end."
    got = sentences(text, backend=backend)
    assert got == ["本合同自签署之日起生效。", "双方应遵守！", "是否续约？ ", "هذا العقد ساري؟ ", "نعم۔ ", "The end."]


def test_japanese_closing_quote_stays_with_its_sentence():
    assert sentences("彼は「終わりだ。」と言った。次の文。") == ["彼は「終わりだ。」", "と言った。", "次の文。"]


def test_empty_blank_and_leading_whitespace():
    assert sentence_spans("") == []
    assert sentence_spans("   \n") == [(0, 4)]
    text = "\n\n  First one here. Second one."
    assert sentences(text) == ["\n\n  First one here. ", "Second one."]


def test_unknown_backend_is_an_error():
    with pytest.raises(ValueError, match="unknown sentence backend"):
        sentence_spans("A b.", backend="spacy")  # type: ignore[arg-type]


def test_missing_backend_raises_instead_of_falling_back(monkeypatch):
    """Case 17: an absent sentence tokenizer must not silently switch segmentation."""
    sentences_module._nupunkt_spans.cache_clear()
    monkeypatch.setitem(sys.modules, "nupunkt", None)
    try:
        with pytest.raises(ImportError):
            sentence_spans("Dr. Roe met the agent. He signed.")
    finally:
        sentences_module._nupunkt_spans.cache_clear()


def test_text_segmented_consistently():
    text = load_case("17")["input"]["text"]
    first = sentence_spans(text)
    assert_tiles(text, first)
    assert first == sentence_spans(text)
    assert "Dr. Roe" in text[first[0][0] : first[0][1]]


def test_punctuation_runs_are_exact_slices():
    text = load_case("05")["input"]["text"]
    assert_tiles(text, sentence_spans(text))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["Sec. ", "4.2 ", "word ", "Inc. ", ". ", "! ", "? ", "\n", "\n\n", "。", "؟", "۔",
                                 "  ", "U.S.C. ", "No. ", "x"]), max_size=40).map("".join),
       st.sampled_from(["nupunkt", "nltk"]))
def test_spans_always_tile_the_text(text, backend):
    spans = sentence_spans(text, backend=backend)
    assert_tiles(text, spans)
    assert all(text[s:e].strip() for s, e in spans) or len(spans) == 1
