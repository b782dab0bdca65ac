"""HybridNodeParser: sections first, then recursive splitting; offsets into the ORIGINAL document."""

from __future__ import annotations

import asyncio
import warnings
from typing import cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llama_index.core.ingestion.pipeline import get_transformation_hash
from llama_index.core.schema import Document, MetadataMode, NodeRelationship
from pydantic import ValidationError

from llama_index_sac import EmbedLimitWarning, HybridNodeParser, RecursiveCharacterNodeParser, SemanticNodeParser
from llama_index_sac.node_parser.hybrid import SECTION_METADATA_KEYS
from tests._nodes import located_nodes, related_id
from tests.conftest import FakeEmbedding, load_case
from tests.semantic_helpers import (
    GOVERNING_LAW,
    LIABILITY,
    TERMINATION,
    KeywordEmbedding,
    TokenLimitedEmbedding,
    check_spans,
    legal_texts,
    rebuild_with_overlap,
)


def make(embed=None, chunk_size: int = 300, chunk_overlap: int = 0, **section_kwargs) -> HybridNodeParser:
    section_kwargs.setdefault("max_chunk_size", None)
    section_kwargs.setdefault("min_chunk_size", 0)
    section = SemanticNodeParser(embed_model=embed if embed is not None else FakeEmbedding(), **section_kwargs)
    return HybridNodeParser(section_parser=section, chunk_size=chunk_size, chunk_overlap=chunk_overlap)


def check_inside_sections(spans, sections) -> None:
    """Each chunk lies inside exactly one section; sections tile the text."""
    for start, end in spans:
        owners = [k for k, (s, e) in enumerate(sections) if s <= start and end <= e]
        assert len(owners) == 1, f"chunk {(start, end)} is not inside exactly one section of {sections}"


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=legal_texts(),
    chunk_size=st.integers(20, 400),
    overlap_share=st.floats(0, 0.5),
    method=st.sampled_from(["threshold", "percentile", "standard_deviation", "interquartile", "gradient"]),
    min_section=st.integers(0, 200),
)
def test_properties(text: str, chunk_size: int, overlap_share: float, method: str, min_section: int) -> None:
    overlap = int(chunk_size * overlap_share)
    parser = make(chunk_size=chunk_size, chunk_overlap=overlap, breakpoint_method=method, min_chunk_size=min_section)
    spans = parser.chunk_indices(text)
    check_spans(text, spans, chunk_size)  # P-OFFSET, P-ORDER, P-NONEMPTY, P-SIZE, P-COVER
    if not text.strip():
        assert spans == []
        return
    sections = parser.section_indices(text)
    assert "".join(text[s:e] for s, e in sections) == text
    check_inside_sections(spans, sections)
    # overlap only inside a section, never more than chunk_overlap
    owner = {span: next(k for k, (s, e) in enumerate(sections) if s <= span[0] and span[1] <= e) for span in spans}
    for prev, cur in zip(spans, spans[1:]):
        if cur[0] < prev[1]:
            assert owner[prev] == owner[cur]
            assert prev[1] - cur[0] <= overlap
    # P-DETERMINISTIC
    assert make(chunk_size=chunk_size, chunk_overlap=overlap, breakpoint_method=method,
                min_chunk_size=min_section).chunk_indices(text) == spans


def test_size_cap_and_offsets() -> None:
    case = load_case("13")
    text = case["input"]["text"]
    assert len(text) == case["input"]["text_len"]
    params = case["params"]
    parser = make(
        chunk_size=params["recursive"]["chunk_size"],
        chunk_overlap=params["recursive"]["chunk_overlap"],
        breakpoint_method="percentile",
        breakpoint_threshold_amount=params["semantic"]["breakpoint_percentile_threshold"],
        buffer_size=params["semantic"]["buffer_size"],
    )
    doc = Document(text=text, id_="exhibits")
    nodes = located_nodes(parser.get_nodes_from_documents([doc]))
    spans = [(n.start_char_idx, n.end_char_idx) for n in nodes]
    check_spans(text, spans, 300)
    assert "".join(n.get_content(MetadataMode.NONE) for n in nodes) == text  # P-LOSSLESS
    sections = parser.section_indices(text)
    assert len(sections) >= 2  # the fake embedding does find shifts here; the recursive stage must respect them
    check_inside_sections(spans, sections)
    for node in nodes:
        sec = sections[node.metadata["section_id"]]
        assert (node.metadata["section_start_char_idx"], node.metadata["section_end_char_idx"]) == sec
        assert sec[0] <= node.start_char_idx < node.end_char_idx <= sec[1]
        assert text[node.start_char_idx : node.end_char_idx] == node.get_content(MetadataMode.NONE)
        assert node.source_node is not None and node.source_node.node_id == "exhibits"
    # the later sections' chunks have offsets beyond the first section: relative to the document, not the section
    assert any(n.start_char_idx > sections[0][1] for n in nodes)
    assert related_id(nodes[0], NodeRelationship.NEXT) == nodes[1].node_id


def test_one_huge_section_is_still_capped() -> None:
    # no breakpoint at all (percentile 100): one section of 2121 characters, split recursively to <= 300
    text = load_case("13")["input"]["text"]
    parser = make(chunk_size=300, breakpoint_threshold_amount=100)
    assert parser.section_indices(text) == [(0, len(text))]
    spans = parser.chunk_indices(text)
    check_spans(text, spans, 300)
    assert spans == RecursiveCharacterNodeParser(chunk_size=300).chunk_indices(text)


def test_no_chunk_crosses_a_section_boundary() -> None:
    rent = "The tenant pays rent on the first day of each quarter. " * 3
    term = "Either party may terminate this lease in writing. " * 3
    text = rent + term
    # recursive splitting alone would put a chunk across the shift at len(rent)
    assert any(s < len(rent) < e for s, e in RecursiveCharacterNodeParser(chunk_size=130).chunk_indices(text))
    parser = make(KeywordEmbedding(), chunk_size=130, buffer_size=0)
    assert parser.section_indices(text) == [(0, len(rent)), (len(rent), len(text))]
    spans = parser.chunk_indices(text)
    assert not any(s < len(rent) < e for s, e in spans)
    check_spans(text, spans, 130)


@pytest.mark.parametrize("overlap", [0, 40])
def test_overlap_stays_inside_sections(overlap: int) -> None:
    text = LIABILITY + TERMINATION + GOVERNING_LAW
    embed = KeywordEmbedding(keywords=["liab", "terminat", "court"])
    parser = make(embed, chunk_size=120, chunk_overlap=overlap, buffer_size=0)
    spans = parser.chunk_indices(text)
    check_spans(text, spans, 120)
    assert rebuild_with_overlap(text, spans) == text
    check_inside_sections(spans, parser.section_indices(text))


@pytest.mark.parametrize("text", ["", "   ", "\n\n\t\n"])
def test_blank_documents_cost_no_embedding(text: str) -> None:
    parser = make()
    assert parser.get_nodes_from_documents([Document(text=text)]) == []
    assert parser.section_parser.embed_model.calls == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("section_kwargs", [{}, {"number_of_chunks": 2}, {"number_of_chunks": 5}])
def test_tiny_inputs(section_kwargs: dict) -> None:
    empty, blank, one, two = load_case("11")["input"]["texts"]
    assert make(**section_kwargs).chunk_indices(empty) == make(**section_kwargs).chunk_indices(blank) == []
    assert make(**section_kwargs).chunks(one) == [one]
    spans = make(**section_kwargs).chunk_indices(two)
    assert len(spans) in (1, 2) and "".join(two[s:e] for s, e in spans) == two


def test_from_defaults_number_of_sections_reaches_the_section_parser() -> None:
    parser = HybridNodeParser.from_defaults(embed_model=FakeEmbedding(), number_of_sections=3)
    assert parser.section_parser.number_of_chunks == 3 and parser.section_parser.max_chunk_size is None
    assert HybridNodeParser.from_defaults(embed_model=FakeEmbedding()).section_parser.number_of_chunks is None


def test_section_metadata_is_not_embedded_and_chaining_keeps_offsets() -> None:
    text = "Preamble of the contract. " * 20 + LIABILITY + TERMINATION
    doc = Document(text=text, id_="orig", metadata={"title": "MSA"})
    parents = located_nodes(RecursiveCharacterNodeParser(chunk_size=600).get_nodes_from_documents([doc]))
    # chunks in, chunks out: the parsers accept nodes where LlamaIndex's signature says Document
    nodes = located_nodes(make(chunk_size=150).get_nodes_from_documents(cast("list[Document]", parents)))
    assert nodes
    for node in nodes:
        assert text[node.start_char_idx : node.end_char_idx] == node.get_content(MetadataMode.NONE)
        assert node.source_node is not None and node.source_node.node_id == "orig"
        s, e = node.metadata["section_start_char_idx"], node.metadata["section_end_char_idx"]
        assert s <= node.start_char_idx < node.end_char_idx <= e
        embedded = node.get_content(MetadataMode.EMBED)
        assert "title: MSA" in embedded and not any(key in embedded for key in SECTION_METADATA_KEYS)
        assert not any(key in node.get_content(MetadataMode.LLM) for key in SECTION_METADATA_KEYS)
    # sections are found inside each parent: a section never extends past its parent chunk
    for node in nodes:
        parent = next(p for p in parents if p.start_char_idx <= node.start_char_idx < p.end_char_idx)
        assert parent.start_char_idx <= node.metadata["section_start_char_idx"]
        assert node.metadata["section_end_char_idx"] <= parent.end_char_idx


def test_count_metadata_reserves_room_in_chunk_size() -> None:
    text = " ".join(f"Clause {i} binds the party number {i}." for i in range(40))
    doc = Document(text=text, metadata={"contract": "Master Services Agreement between Alder and Birch"})
    parser = make(chunk_size=200)
    parser.count_metadata = True
    reserve = len(doc.text_template.format(metadata_str=doc.get_metadata_str(MetadataMode.EMBED), content=""))
    for node in parser.get_nodes_from_documents([doc]):
        assert len(node.get_content(MetadataMode.NONE)) <= 200 - reserve


def test_async_matches_sync_and_batches_across_documents() -> None:
    docs = [Document(text=f"Party {i} pays. " + LIABILITY + TERMINATION, id_=f"d{i}") for i in range(3)]
    embed = FakeEmbedding(embed_batch_size=1000)
    sync_nodes = located_nodes(make(embed, chunk_size=150).get_nodes_from_documents(docs))
    assert len(embed.calls) == 1  # one batch for the three documents
    assert len(embed.texts_embedded) == len(set(embed.texts_embedded))  # shared sentences embedded once
    async_nodes = located_nodes(asyncio.run(make(chunk_size=150).aget_nodes_from_documents(docs)))
    key = [(n.node_id, n.start_char_idx, n.end_char_idx, n.metadata["section_id"]) for n in sync_nodes]
    assert key == [(n.node_id, n.start_char_idx, n.end_char_idx, n.metadata["section_id"]) for n in async_nodes]


def test_settings_and_cache_key() -> None:
    with pytest.raises(ValidationError):
        make(chunk_size=100, chunk_overlap=100)
    with pytest.raises(ValidationError):
        make(chunk_size=0)
    docs = [Document(text=LIABILITY)]
    hashes = {
        get_transformation_hash(docs, parser)
        for parser in (make(), make(buffer_size=2), make(chunk_size=250), make(FakeEmbedding(model_name="b")))
    }
    assert len(hashes) == 4
    data = make().to_dict()
    assert data["class_name"] == "HybridNodeParser"
    assert data["section_parser"]["embed_model"] == {"class_name": "FakeEmbedding", "model_name": "unknown"}


def test_from_defaults_uses_unlimited_sections(monkeypatch: pytest.MonkeyPatch) -> None:
    import llama_index_sac.node_parser.semantic as semantic

    monkeypatch.setattr(semantic, "default_embedding_model", lambda *a, **k: FakeEmbedding())
    parser = HybridNodeParser.from_defaults(chunk_size=400, chunk_overlap=50, min_section_size=80)
    assert parser.section_parser.max_chunk_size is None and parser.section_parser.min_chunk_size == 80
    assert isinstance(parser.section_parser.embed_model, FakeEmbedding)
    assert (parser.chunk_size, parser.chunk_overlap) == (400, 50)


@pytest.mark.slow
def test_minilm_sections_follow_the_topics() -> None:
    from llama_index_sac.embeddings.default import default_embedding_model

    text = LIABILITY + TERMINATION
    parser = HybridNodeParser.from_defaults(embed_model=default_embedding_model(), chunk_size=200)
    assert parser.section_indices(text) == [(0, len(LIABILITY)), (len(LIABILITY), len(text))]
    nodes = located_nodes(parser.get_nodes_from_documents([Document(text=text)]))
    spans = [(n.start_char_idx, n.end_char_idx) for n in nodes]
    check_spans(text, spans, 200)
    assert not any(s < len(LIABILITY) < e for s, e in spans)
    assert {n.metadata["section_id"] for n in nodes} == {0, 1}


def test_nodes_over_the_embedding_limit_warn_or_raise() -> None:
    text = "Rent is due on the first day of every month in advance. " * 3  # 36 words, one 168-character chunk
    doc = Document(text=text)
    sections = SemanticNodeParser(embed_model=TokenLimitedEmbedding(), number_of_chunks=1)
    parser = HybridNodeParser(section_parser=sections)
    with pytest.warns(EmbedLimitWarning, match=r"1 of 1 HybridNodeParser nodes .* \(largest: 38 tokens,"):
        assert len(parser.get_nodes_from_documents([doc])) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmbedLimitWarning)  # 40-character chunks: at most 9 words + 2 tokens
        assert len(HybridNodeParser(section_parser=sections, chunk_size=40).get_nodes_from_documents([doc])) > 4
    strict = HybridNodeParser(section_parser=parser.section_parser, on_embed_overflow="raise")
    with pytest.raises(ValueError, match="lower chunk_size"):
        strict.get_nodes_from_documents([doc])


def test_from_defaults_restates_no_default_and_passes_section_options_through() -> None:
    """``from_defaults`` declares no default of its own: what is not given is the fields' default (this parser's and
    the section parser's), the section options reach the section parser under its field names."""
    from llama_index_sac.node_parser.hybrid import SECTION_OPTIONS

    embed = FakeEmbedding()
    plain = HybridNodeParser.from_defaults(embed_model=embed)
    assert plain.to_dict() == HybridNodeParser(section_parser=SemanticNodeParser(embed_model=embed,
                                                                                 max_chunk_size=None)).to_dict()
    given = {"breakpoint_method": "gradient", "breakpoint_threshold_amount": 90.0, "buffer_size": 2,
             "sentence_backend": "nltk", "embed_batch_size": 8, "min_section_size": 50}
    assert set(given) | {"number_of_sections"} == set(SECTION_OPTIONS)
    parser = HybridNodeParser.from_defaults(embed_model=embed, chunk_size=300, separators=("\n", ""), **given)
    section = parser.section_parser
    assert {SECTION_OPTIONS[k]: getattr(section, SECTION_OPTIONS[k]) for k in given} == {
        SECTION_OPTIONS[k]: v for k, v in given.items()}
    assert (parser.chunk_size, parser.separators, section.max_chunk_size) == (300, ["\n", ""], None)
    assert HybridNodeParser.from_defaults(embed_model=embed, number_of_sections=3).section_parser.number_of_chunks == 3
