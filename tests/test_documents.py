"""group_by_document / reconstruct_text: each node's document and that document's full text."""

from __future__ import annotations

import pytest
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import Document, NodeRelationship, RelatedNodeInfo, TextNode

from llama_index_sac import RecursiveCharacterNodeParser
from llama_index_sac.documents import group_by_document, reconstruct_text

TEXT = "First clause.   Second clause here.\n\nThird clause, longer than the others by a bit."


def chunk(text: str, start: int, end: int, doc: str = "d") -> TextNode:
    node = TextNode(text=text[start:end], start_char_idx=start, end_char_idx=end)
    node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=doc)
    return node


def test_exact_rebuild_from_tiling_and_overlapping_chunks() -> None:
    nodes = [chunk(TEXT, 30, len(TEXT)), chunk(TEXT, 0, 20), chunk(TEXT, 10, 40)]  # any order, overlaps agree
    assert reconstruct_text("d", nodes) == (TEXT, 0)
    groups = group_by_document(nodes)
    assert [(g.doc_id, g.text, g.source, len(g.members)) for g in groups] == [("d", TEXT, "chunks", 3)]


def test_gaps_are_counted_and_filled_with_spaces() -> None:
    text, gaps = reconstruct_text("d", [chunk(TEXT, 3, 10), chunk(TEXT, 16, 24)])
    assert gaps == 3 + 6 and text == "   " + TEXT[3:10] + " " * 6 + TEXT[16:24]
    assert group_by_document([chunk(TEXT, 3, 10)])[0].source == "chunks_with_gaps"


def test_parsers_with_exact_offsets_rebuild_the_document() -> None:
    doc = Document(text="".join(f"Clause {i} binds party {i % 7}.  Term {i}.\n\n" for i in range(60)), id_="d")
    for parser in (RecursiveCharacterNodeParser(chunk_size=60), SentenceSplitter(chunk_size=40, chunk_overlap=10)):
        group = group_by_document(parser([doc]))[0]
        assert group.text is not None
        if group.source == "chunks":  # up to the last chunk's end (trailing whitespace no chunk holds is unknown)
            assert group.text == doc.text[: len(group.text)] and not doc.text[len(group.text):].strip()
        else:  # only the characters no chunk covers differ (spaces)
            assert group.source == "chunks_with_gaps" and len(group.text) <= len(doc.text)
            assert all(a == b or a == " " for a, b in zip(group.text, doc.text))
    assert group_by_document(RecursiveCharacterNodeParser(chunk_size=60)([doc]))[0].source == "chunks"


def test_documents_given_win_and_errors_name_the_document() -> None:
    nodes = [chunk(TEXT, 3, 10)]
    assert group_by_document(nodes, {"d": TEXT})[0].text == TEXT
    assert group_by_document(nodes, [Document(text=TEXT, id_="d")])[0].source == "document"
    with pytest.raises(ValueError, match="cannot reconstruct document 'd'.*no exact offsets"):
        reconstruct_text("d", [TextNode(text="abc")])
    bad = chunk(TEXT, 0, 10)
    bad.text = "X" + bad.text[1:]
    with pytest.raises(ValueError, match="disagrees with an overlapping node"):
        reconstruct_text("d", [chunk(TEXT, 0, 10), bad])
    with pytest.raises(TypeError, match="LlamaIndex nodes"):
        group_by_document(["text"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="documents\\['d'\\]"):
        group_by_document(nodes, {"d": 3})


@pytest.mark.slow  # many processes or a large input: minutes in the whole suite
def test_many_overlapping_chunks_stay_linear() -> None:
    """100,000 overlapping one-step chunks of a 100,010-character text: a quadratic rebuild would not finish."""
    text = "abcdefghij" * 10_001
    nodes = [chunk(text, i, i + 10) for i in range(len(text) - 9)]
    assert reconstruct_text("d", nodes) == (text, 0)
