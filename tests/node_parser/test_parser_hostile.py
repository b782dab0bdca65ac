"""Hostile input for every node parser: exact outputs on adversarial text, and one clear error for bad
input before any work.

No test here is timed (speed and memory series are in ``bench/bench_linear.py``). Linearity is checked by size: each
adversarial input is large enough that a quadratic path would run for minutes (the estimate is
next to each size, from the issue's measurements), while the linear code takes well under a second, so a regression
shows as a hang. Memory is checked with ``tracemalloc`` (deterministic, not a timing).
"""

from __future__ import annotations

import asyncio
import re
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llama_index.core import Document
from llama_index.core.bridge.pydantic import ValidationError

from llama_index_sac import LEGAL_SEPARATORS
from llama_index_sac.node_parser import (
    HybridNodeParser,
    RecursiveCharacterNodeParser,
    SemanticNodeParser,
    SpanNodeParser,
    recursive_chunk_spans,
)
from llama_index_sac.node_parser._inputs import numeric_annotation
from llama_index_sac.node_parser._semantic_steps import DocumentGeometry, merge_small
from llama_index_sac.node_parser._splitter import _match_ends, regex_literal_char
from llama_index_sac.node_parser.recursive import _LINEAR_FORMS
from llama_index_sac.sentences import MAX_GLUED_ENDS, _hide_dense_ends, sentence_spans
from tests._nodes import located_nodes
from tests.conftest import FakeEmbedding
from tests.semantic_helpers import KeywordEmbedding, check_spans

PROSE = "The Supplier shall pay the fees within thirty days of the invoice date. "

#: Adversarial inputs of about n characters (the same kinds as bench/bench_linear.py).
KINDS = {
    "prose": lambda n: PROSE * (n // len(PROSE)),
    "blank_lines": lambda n: "Clause.\n" + "\n" * n + "ARTICLE 2 Terms.",
    "blank_ws_lines": lambda n: "Clause.\n" + " \t\n" * (n // 3) + "End.",
    "separator_run": lambda n: ". " * (n // 2),
    "alternating": lambda n: "\n. " * (n // 3),
    "giant_word": lambda n: "x" * n,
    "spaces": lambda n: "a" + " " * n + "b",
    "tabs": lambda n: "a" + "\t" * n + "b",
    "headings": lambda n: "\nARTICLE 1\n" * (n // 11),
    "glued_ends": lambda n: '."' * (n // 2),
    "combining": lambda n: "e" + "\u0301" * n,
}


def _parsers() -> dict[str, tuple[SpanNodeParser, int]]:
    """name -> (parser, its size limit in characters)."""
    return {
        "recursive": (RecursiveCharacterNodeParser(), 500),
        "legal": (RecursiveCharacterNodeParser.legal(), 500),
        "semantic": (SemanticNodeParser(embed_model=FakeEmbedding(), on_embed_overflow="ignore"), 1000),
        "hybrid": (HybridNodeParser(section_parser=SemanticNodeParser(embed_model=FakeEmbedding(),
                                                                      max_chunk_size=None)), 500),
    }


PARSERS = _parsers()


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("name", list(PARSERS))
def test_adversarial_inputs_give_exact_chunks(name, kind):
    """200,000 characters of each kind: offsets exact, order strict, no blank chunk, size cap, only whitespace left
    out. Sizes that hang the old code: the legal preset on 200,000 newlines (8,000 took 4.5 s, quadratic: ~45 min);
    nupunkt on 200,000 characters of '."' (40,000 took 3 s: ~75 s)."""
    parser, limit = PARSERS[name]
    text = KINDS[kind](200_000)
    nodes = located_nodes(parser.get_nodes_from_documents([Document(text=text, id_="doc")]))
    spans = [(node.start_char_idx, node.end_char_idx) for node in nodes]
    assert all(node.text == text[s:e] for node, (s, e) in zip(nodes, spans))
    check_spans(text, spans, limit)
    assert nodes, "every kind has non-whitespace text"


def test_legal_blank_run_of_a_million_newlines_cuts_before_the_heading():
    """The blank run ends the first chunk (as much of it as fits) and the heading starts the next: the result the
    old code gives for 2,000 newlines, [(0, 30), (2012, 2034)], at a size it could not reach (~3 hours)."""
    text = "Clause one.\n" + "\n" * 1_000_000 + "ARTICLE 2 Terms apply."
    spans = RecursiveCharacterNodeParser.legal(chunk_size=30).chunk_indices(text)
    assert spans == [(0, 30), (len(text) - 22, len(text))]
    assert text[spans[1][0] : spans[1][1]] == "ARTICLE 2 Terms apply."


def test_token_length_greedy_merge_measures_chunks_not_the_rest():
    """4,000,000 characters cut to 100 words: the old merge measured the whole rest of the text at every chunk
    (400,000 characters took 1.4 s, growing 5.7x per doubling: minutes here)."""
    text = PROSE * (4_000_000 // len(PROSE))

    def words(s: str) -> int:
        return len(s.split())

    spans = recursive_chunk_spans(text, chunk_size=100, length_function=words)
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))  # ordinary prose: lossless, no gap
    # 13 words per sentence: a chunk is 7 whole sentences (91 words; 8 would be 104), the last one what is left
    assert all(words(text[s:e]) == 91 for s, e in spans[:-1]) and words(text[spans[-1][0] :]) <= 91
    assert len(spans) == -(-(len(text) // len(PROSE)) // 7)


@pytest.mark.parametrize("legal", [False, True])
@pytest.mark.parametrize("text", ["x" * 1_000_000, "a" + " " * 1_000_000 + "b", "e" + "\u0301" * 300_000],
                         ids=["giant_word", "spaces", "combining"])
@pytest.mark.slow  # many processes or a large input: minutes in the whole suite
def test_splitting_memory_stays_near_the_output(text, legal):
    """Peak traced memory of chunk_indices per input character: the old code listed one int per character of a
    word to cut (about 40 bytes per character) and a set of regex match ends (about 70 with the legal preset on a
    run of spaces); the spans themselves are about 0.2 bytes per character here."""
    parser = RecursiveCharacterNodeParser.legal() if legal else RecursiveCharacterNodeParser()
    tracemalloc.start()
    try:
        spans = parser.chunk_indices(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert spans and peak / len(text) < 2.0


# -- the linear forms of the legal separators and the literal fast path ---------------------------------------------

HEADING_TEXT = st.lists(st.sampled_from(["\n", "\n\n", " ", "\t", "ARTICLE 1", "Article IV", "Section 2", "§3",
                                         "EXHIBIT", "Annex", "1.1 ", "12.3.4\t", "2. ", "(a) ", "(iv) ", "x", "."]),
                        max_size=40).map("".join)


def test_every_heading_separator_has_a_linear_form():
    headings = [sep for sep in LEGAL_SEPARATORS if sep.startswith(r"\n+(?=")]
    assert len(headings) == 6 and set(_LINEAR_FORMS) == set(headings)
    assert all(_LINEAR_FORMS[sep] == r"\n" + sep[3:] for sep in headings)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=HEADING_TEXT, data=st.data())
def test_linear_forms_have_the_same_match_ends(text, data):
    """Only match ends are cut points; ``\\n(?=H)`` ends where ``\\n+(?=H)`` does in every window."""
    s = data.draw(st.integers(0, len(text)))
    e = data.draw(st.integers(s, len(text)))
    for published, linear in _LINEAR_FORMS.items():
        assert list(_match_ends(re.compile(linear), text, s, e)) == list(_match_ends(re.compile(published), text, s, e))


def test_regex_literal_char():
    assert [regex_literal_char(p) for p in [" ", r"\n", r"\t", r"\.", ";", "\n"]] == [" ", "\n", "\t", ".", ";", "\n"]
    assert [regex_literal_char(p) for p in [".", r"\s", "ab", r"\n+", "[;]", r"\d", "(", ""]] == [None] * 8


@settings(max_examples=300, deadline=None)
@given(text=st.lists(st.sampled_from(["a", "bb", " ", "\n", "\n\n", ". ", ".", "e\u0301\u0301"]), max_size=60).map(
    "".join), size=st.integers(1, 30), data=st.data())
def test_literal_regex_separators_cut_as_plain_ones(text, size, data):
    overlap = data.draw(st.integers(0, size - 1))
    as_regex = recursive_chunk_spans(text, chunk_size=size, chunk_overlap=overlap,
                                     separators=[r"\n", r"\.", " ", ""], is_separator_regex=True)
    assert as_regex == recursive_chunk_spans(text, chunk_size=size, chunk_overlap=overlap,
                                             separators=["\n", ".", " ", ""])


@settings(max_examples=300, deadline=None)
@given(text=st.lists(st.sampled_from(["x", "e" + "\u0301" * 7, "\u200d", "😀", "\r\n", " "]), max_size=50).map(
    "".join), size=st.integers(1, 12), data=st.data())
def test_character_level_on_demand_equals_listed_boundaries(text, size, data):
    """Grapheme boundaries probed on demand (character length) cut as the listed ones (length_function=len)."""
    overlap = data.draw(st.integers(0, size - 1))
    assert recursive_chunk_spans(text, chunk_size=size, chunk_overlap=overlap) == recursive_chunk_spans(
        text, chunk_size=size, chunk_overlap=overlap, length_function=len)


# -- sentences: nupunkt's dense glued ends ---------------------------------------------------------------------------


def test_dense_glued_ends_are_hidden_only_above_the_threshold():
    sparse = "He said " + '."' * MAX_GLUED_ENDS + " Then left."
    assert _hide_dense_ends(sparse) is sparse  # ordinary text is never copied or changed
    dense = "He said " + '."' * (MAX_GLUED_ENDS + 1) + " Then left."
    hidden = _hide_dense_ends(dense)
    assert len(hidden) == len(dense)
    assert hidden == "He said " + ',"' * (MAX_GLUED_ENDS + 1) + " Then left."


@pytest.mark.parametrize("unit", ['."', "!", ".)", "?!"])
def test_sentence_spans_tile_dense_glued_ends(unit):
    """400,000 characters (the old path: 40,000 took 3 s and doubling quadrupled it: ~5 min)."""
    text = "Intro. " + unit * (400_000 // len(unit)) + " Next sentence here."
    spans = sentence_spans(text)
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))


# -- semantic: merging many small chunks -------------------------------------------------------------------------


def _reference_merge(geo, chunks, min_size, limit):
    """The rule, implemented directly (re-sorting after every merge): the smallest fragment that fits with a
    neighbour merges into the more similar one, ties to the earlier fragment and to the previous neighbour."""
    from llama_index_sac.node_parser._semantic_steps import _cos

    chunks = list(chunks)
    while len(chunks) > 1:
        for i in sorted(range(len(chunks)), key=lambda i: (geo.length(*chunks[i]), i)):
            if geo.length(*chunks[i]) >= min_size:
                return chunks
            options = [j for j in (i - 1, i + 1) if 0 <= j < len(chunks) and (
                limit is None or geo.length(min(chunks[i][0], chunks[j][0]), max(chunks[i][1], chunks[j][1])) <= limit)]
            if options:
                own = geo.centroid(*chunks[i])
                j = max(options, key=lambda j: (round(_cos(own, geo.centroid(*chunks[j])), 9), -j))
                chunks[min(i, j) : max(i, j) + 1] = [(chunks[min(i, j)][0], chunks[max(i, j)][1])]
                break
        else:
            return chunks
    return chunks


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_merge_small_follows_the_rule(data):
    import numpy as np

    n = data.draw(st.integers(1, 20))
    lengths = data.draw(st.lists(st.integers(1, 40), min_size=n, max_size=n))
    bounds = np.cumsum([0, *lengths])
    units = [(int(a), int(b)) for a, b in zip(bounds, bounds[1:])]
    vectors = np.array(data.draw(st.lists(st.sampled_from([[1, 0], [0, 1], [1, 1], [2, 1]]), min_size=n, max_size=n)),
                       dtype=float)
    geo = DocumentGeometry(units, vectors, np.array(lengths, dtype=float), data.draw(st.integers(0, 2)))
    cuts = sorted(data.draw(st.sets(st.integers(0, n - 2))) if n > 1 else set())
    edges = [-1, *cuts, n - 1]
    chunks = [(a + 1, b) for a, b in zip(edges, edges[1:])]
    limit = max(geo.length(lo, hi) for lo, hi in chunks) + data.draw(st.sampled_from([0, 30, 10_000]))
    min_size = data.draw(st.integers(0, 120))
    assert merge_small(geo, chunks, min_size, limit) == _reference_merge(geo, chunks, min_size, limit)


def test_twenty_thousand_fragments_merge():
    """Cut at every sentence (two orthogonal sentences alternating), then every fragment merges: the old merge
    re-sorted all chunks after each of ~20,000 merges (hours); the heap makes it O(k log k)."""
    text = "Rent is due. Notice is given. " * 10_000
    parser = SemanticNodeParser(embed_model=KeywordEmbedding(), breakpoint_method="threshold", buffer_size=0)
    spans = parser.chunk_indices(text)
    check_spans(text, spans, 1000)
    assert "".join(text[s:e] for s, e in spans) == text and len(spans) < 400
    for i, (s, e) in enumerate(spans):  # the end state of the rule: a fragment left fits with no neighbour
        if e - s < 100:
            assert all(max(e, spans[j][1]) - min(s, spans[j][0]) > 1000 for j in (i - 1, i + 1) if 0 <= j < len(spans))


# -- identity: duplicate ids, surrogates ---------------------------------------------------------------------------


def _recording_parsers():
    semantic = SemanticNodeParser(embed_model=FakeEmbedding(), min_chunk_size=0)
    hybrid = HybridNodeParser(section_parser=SemanticNodeParser(embed_model=FakeEmbedding(), max_chunk_size=None))
    return [RecursiveCharacterNodeParser(chunk_size=40), semantic, hybrid]


def _embed_calls(parser):
    if isinstance(parser, HybridNodeParser):
        parser = parser.section_parser
    model = getattr(parser, "embed_model", None)
    return [] if model is None else model.calls


TWO = "Rent is due monthly. Notice must be written. The lease ends in May. Keys are returned."


@pytest.mark.parametrize("parser", _recording_parsers(), ids=lambda p: type(p).__name__)
@pytest.mark.parametrize("use_async", [False, True])
def test_different_documents_with_one_id_are_refused_before_any_work(parser, use_async):
    docs = [Document(text=TWO, id_="d1"), Document(text="Another contract. " * 5, id_="d2"),
            Document(text=TWO + " Extra.", id_="d1")]
    with pytest.raises(ValueError, match=r"inputs 0 and 2 share the id 'd1' but differ"):
        if use_async:
            asyncio.run(parser.aget_nodes_from_documents(docs))
        else:
            parser.get_nodes_from_documents(docs)
    assert _embed_calls(parser) == []


@pytest.mark.parametrize("parser", _recording_parsers(), ids=lambda p: type(p).__name__)
def test_identical_repeated_document_is_parsed_once(parser):
    doc = Document(text=TWO, id_="d1", metadata={"file": "a.txt"})
    once = parser.get_nodes_from_documents([doc])
    twice = parser.get_nodes_from_documents([doc, Document(text=TWO, id_="d1", metadata={"file": "a.txt"}), doc])
    assert [(n.node_id, n.text, n.start_char_idx) for n in twice] == [(n.node_id, n.text, n.start_char_idx)
                                                                      for n in once]
    assert len({n.node_id for n in twice}) == len(twice)


@pytest.mark.parametrize("parser", _recording_parsers(), ids=lambda p: type(p).__name__)
def test_surrogate_is_refused_naming_the_document(parser):
    docs = [Document(text="Fine text. 😀 Emoji is fine.", id_="ok"), Document(text="Bad \udc80 byte.", id_="bad.txt")]
    with pytest.raises(ValueError, match=r"input 'bad.txt' has a surrogate code point U\+DC80 at character 4"):
        parser.get_nodes_from_documents(docs)
    assert _embed_calls(parser) == []
    assert parser.get_nodes_from_documents(docs[:1])  # an astral character (one code point) is fine


@pytest.mark.parametrize("bad, message", [
    (["plain text"], "input 0 is of type str"),
    (Document(text="x"), "must be a list of LlamaIndex nodes, got an object of type Document"),
    ("plain text", "must be a list of LlamaIndex nodes, got an object of type str"),
])
def test_inputs_that_are_not_nodes(bad, message):
    with pytest.raises(TypeError, match=message):
        RecursiveCharacterNodeParser().get_nodes_from_documents(bad)


# -- options: booleans are not numbers ---------------------------------------------------------------------------


def _instances():
    section = SemanticNodeParser(embed_model=FakeEmbedding(), max_chunk_size=None)
    return [
        (RecursiveCharacterNodeParser, {}),
        (SemanticNodeParser, {"embed_model": FakeEmbedding()}),
        (HybridNodeParser, {"section_parser": section}),
    ]


@pytest.mark.parametrize("cls, base", _instances(), ids=lambda v: getattr(v, "__name__", ""))
def test_every_numeric_option_refuses_booleans(cls, base):
    numeric = [name for name, field in cls.model_fields.items() if numeric_annotation(field.annotation)]
    expected = {"RecursiveCharacterNodeParser": {"chunk_size", "chunk_overlap"},
                "HybridNodeParser": {"chunk_size", "chunk_overlap"},
                "SemanticNodeParser": {"buffer_size", "breakpoint_threshold_amount", "number_of_chunks",
                                       "min_chunk_size", "max_chunk_size", "embed_batch_size"}}[cls.__name__]
    assert set(numeric) == expected
    for name in numeric:
        with pytest.raises(ValidationError, match=f"{name}\n.*must be a number, got the bool True"):
            cls(**base, **{name: True})
    assert cls(**base, count_metadata=False, include_metadata=True).include_metadata is True  # bools stay bools


@pytest.mark.parametrize("kwargs, error", [
    ({"chunk_size": True}, "chunk_size must be an int, got bool True"),
    ({"chunk_size": 10, "chunk_overlap": False}, "chunk_overlap must be an int, got bool False"),
    ({"chunk_size": 10.0}, "chunk_size must be an int, got float 10.0"),
    ({"chunk_size": 10, "separators": "\n\n"}, "separators must be a list of strings"),
])
def test_recursive_chunk_spans_refuses_wrong_types(kwargs, error):
    with pytest.raises(TypeError, match=re.escape(error)):
        recursive_chunk_spans("some text to split", **kwargs)
