"""The text of a PDF for chunking (``apps/ingest/pdf_text.py``): wrapped lines joined, hyphenation repaired where the
word is known, ligatures normalised, exact page starts."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from llama_index_sac.apps.ingest.pages import pages_of
from llama_index_sac.apps.ingest.pdf_text import pdf_text


def test_wraps_hyphens_ligatures_and_pages_by_hand() -> None:
    # Line lengths: 31, 47, 44, 29, 7 | 47, 23, 20; the 90th percentile of 8 lines is the 8th shortest (47): a break
    # is a wrap when the line plus a space plus the next line's first word exceeds 0.9 * 47 = 42.3 characters.
    first = ("MUTUAL NON-DISCLOSURE AGREEMENT\n"  # 31 + 1 + 3 ("The") = 35: the heading's break is kept
             "The parties agree to keep the \ufb01le and all cop-\n"  # "copies" occurs below: "cop-" + "ies" -> copies
             "ies of it confidential, and each party shall \n"  # 44 + 1 + 6 = 51 > 42.3: a wrap (trailing space gone)
             "return the copies on request.\n"  # 29 + 1 + 2 = 32, "1." is not lower case: kept
             "1. Term\n")  # 7 + 1 + 4: kept; the page ends: a blank line
    second = ("This Agreement lasts two years from the date of\n"  # 47: a wrap
              "signing, and its state-\n"  # "stateowned" occurs nowhere: the hyphen stays, no space
              "owned parts survive.")
    text, starts = pdf_text([first, second])
    page_one = ("MUTUAL NON-DISCLOSURE AGREEMENT\nThe parties agree to keep the file and all copies of it "
                "confidential, and each party shall return the copies on request.\n1. Term")
    page_two = "This Agreement lasts two years from the date of signing, and its state-owned parts survive."
    assert text == page_one + "\n\n" + page_two
    assert starts == [0, len(page_one) + 2]
    assert text[starts[1]:].startswith("This Agreement")


def test_a_word_cut_by_a_page_break_and_an_empty_page() -> None:
    # Lengths 16, 25, 9: full line 25. "copies" occurs ("Copies", any case): the hyphen goes, the halves join; page 3
    # begins inside the word, and the empty page 2 begins where the next text does.
    text, starts = pdf_text(["Copies are kept.\n\nEach party keeps its cop-\n", "", "ies safe.\n"])
    assert text == "Copies are kept.\n\nEach party keeps its copies safe."
    assert starts == [0, 42, 42] and text[42:] == "ies safe."
    assert pages_of(starts, text.index("copies"), text.index("copies") + 6) == (1, 3)
    assert pdf_text(["", "Only text.", ""]) == ("Only text.", [0, 0, 10])


def test_a_short_line_continued_in_lower_case_is_joined_but_not_after_a_sentence_end() -> None:
    # Lengths 46, 6, 9, 16: full line 46, threshold 41.4. "secret" + "and": 10 characters, but "and" is lower case
    # and "secret" ends no sentence: joined. "safe." ends a sentence: its break is kept though "then" is lower case.
    text, _ = pdf_text(["The Receiving Party shall keep the information\nsecret\nand safe.\nthen it may use"])
    assert text == "The Receiving Party shall keep the information secret and safe.\nthen it may use"


def test_dashes_at_a_line_end_join_without_a_space() -> None:
    # Chromium breaks after a hyphen or a dash: the halves join as they were; a dash after a space is a wrap.
    text, _ = pdf_text(["protected by the Attorney-\nClient Privilege. No license\u2014\nexpress or implied -\nis "
                        "given for 2019-\n2020."])
    assert text == ("protected by the Attorney-Client Privilege. No license\u2014express or implied - is given for "
                    "2019-2020.")


def _without_some_hyphens(source: str, result: str) -> bool:
    """``result`` is ``source`` with some ``-`` left out (and nothing else)."""
    at = 0
    for char in source:
        if at < len(result) and result[at] == char:
            at += 1
        elif char != "-":
            return False
    return at == len(result)


_LINE = st.text(alphabet="ab- .\ufb01", max_size=30)


@given(st.lists(st.lists(_LINE, max_size=5).map("\n".join), min_size=1, max_size=5))
def test_nothing_but_whitespace_and_end_of_line_hyphens_changes_and_pages_hold_their_text(pages: list[str]) -> None:
    text, starts = pdf_text(pages)
    assert len(starts) == len(pages) and starts[0] == 0 and starts == sorted(starts) and starts[-1] <= len(text)
    assert "\ufb01" not in text and "\n\n\n" not in text and text == text.strip()
    bounds = [*starts, len(text)]
    for number, page in enumerate(pages):  # each page's characters, whitespace aside, from its start to the next
        own = "".join(page.replace("\ufb01", "fi").split())
        assert _without_some_hyphens(own, "".join(text[bounds[number]: bounds[number + 1]].split()))
