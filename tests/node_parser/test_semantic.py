"""SemanticNodeParser: properties (hypothesis, fake embedding), hand-computed breakpoints, call counts, shared cases
08 and 11, sentence ends of other scripts, the ingestion cache, and the real all-MiniLM-L6-v2 model."""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys
import warnings
from pathlib import Path
from typing import cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llama_index.core.ingestion import IngestionCache, IngestionPipeline
from llama_index.core.ingestion.pipeline import get_transformation_hash
from llama_index.core.schema import Document, MetadataMode, NodeRelationship
from pydantic import ValidationError

from llama_index_sac import EmbedLimitWarning, RecursiveCharacterNodeParser, SemanticNodeParser
from llama_index_sac.node_parser.semantic import BreakpointMethod
from llama_index_sac.sentences import sentence_spans
from tests._nodes import located_nodes, related_id, text_nodes
from tests.conftest import FakeEmbedding, load_case
from tests.semantic_helpers import (
    GOVERNING_LAW,
    LIABILITY,
    TERMINATION,
    BrokenEmbedding,
    KeywordEmbedding,
    TokenLimitedEmbedding,
    check_spans,
    legal_texts,
)

METHODS = ["threshold", "percentile", "standard_deviation", "interquartile", "gradient"]
PROPERTY_SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def make(embed=None, **kwargs) -> SemanticNodeParser:
    kwargs.setdefault("min_chunk_size", 0)
    return SemanticNodeParser(embed_model=embed if embed is not None else FakeEmbedding(), **kwargs)


# -- properties ----------------------------------------------------------------------------------------------------
@PROPERTY_SETTINGS
@given(
    text=legal_texts(),
    method=st.sampled_from(METHODS),
    buffer_size=st.integers(0, 3),
    min_size=st.integers(0, 120),
    max_size=st.one_of(st.none(), st.integers(120, 600)),
)
def test_properties(text: str, method: str, buffer_size: int, min_size: int, max_size: int | None) -> None:
    parser = make(breakpoint_method=method, buffer_size=buffer_size, min_chunk_size=min_size, max_chunk_size=max_size)
    spans = parser.chunk_indices(text)
    check_spans(text, spans, max_size)  # P-OFFSET, P-ORDER, P-NONEMPTY, P-SIZE, P-COVER
    if not text.strip():
        assert spans == [] and parser.embed_model.calls == []  # type: ignore[attr-defined]
        return
    sentences = sentence_spans(text)
    if max_size is None or all(e - s <= max_size for s, e in sentences):
        # no recursive fallback: the chunks are whole sentences and tile the text (P-LOSSLESS)
        assert "".join(text[s:e] for s, e in spans) == text
        starts = {s for s, _ in sentences}
        assert all(s in starts for s, _ in spans)
    # P-DETERMINISTIC: a fresh parser (fresh model) gives the same spans and node ids
    again = make(breakpoint_method=method, buffer_size=buffer_size, min_chunk_size=min_size, max_chunk_size=max_size)
    assert again.chunk_indices(text) == spans
    doc = Document(text=text, id_="doc")
    ids = [(n.node_id, n.text) for n in text_nodes(parser.get_nodes_from_documents([doc]))]
    assert ids == [(n.node_id, n.text) for n in text_nodes(again.get_nodes_from_documents([doc]))]


@PROPERTY_SETTINGS
@given(text=st.text(st.characters(codec="utf-8"), max_size=400), max_size=st.integers(1, 80))
def test_arbitrary_text_never_breaks(text: str, max_size: int) -> None:
    parser = make(max_chunk_size=max_size, min_chunk_size=min(10, max_size))
    check_spans(text, parser.chunk_indices(text), max_size)


def test_nodes_offsets_source_and_links() -> None:
    text = LIABILITY + TERMINATION
    doc = Document(text=text, id_="contract", metadata={"title": "MSA"})
    nodes = located_nodes(
        make(KeywordEmbedding(keywords=["liab", "terminat"]), buffer_size=0).get_nodes_from_documents([doc])
    )
    assert len(nodes) >= 2
    for node in nodes:
        assert text[node.start_char_idx : node.end_char_idx] == node.get_content(MetadataMode.NONE)
        assert node.source_node is not None and node.source_node.node_id == "contract"
        assert node.metadata == {"title": "MSA"}
    assert related_id(nodes[0], NodeRelationship.NEXT) == nodes[1].node_id
    assert related_id(nodes[1], NodeRelationship.PREVIOUS) == nodes[0].node_id


def test_chained_input_keeps_original_offsets() -> None:
    text = "Preamble of the contract. " * 30 + LIABILITY + TERMINATION
    doc = Document(text=text, id_="orig")
    parents = RecursiveCharacterNodeParser(chunk_size=400).get_nodes_from_documents([doc])
    # chunks in, chunks out: the parsers accept nodes where LlamaIndex's signature says Document
    children = located_nodes(make(max_chunk_size=150).get_nodes_from_documents(cast("list[Document]", parents)))
    assert children
    for node in children:
        assert text[node.start_char_idx : node.end_char_idx] == node.get_content(MetadataMode.NONE)
        assert node.source_node is not None and node.source_node.node_id == "orig"
        assert node.end_char_idx - node.start_char_idx <= 150


def test_count_metadata_reserves_room() -> None:
    text = " ".join(f"Clause {i} binds the party number {i}." for i in range(40))
    doc = Document(text=text, metadata={"contract": "Master Services Agreement between Alder and Birch"})
    parser = make(max_chunk_size=200, count_metadata=True)
    nodes = parser.get_nodes_from_documents([doc])
    reserve = len(doc.text_template.format(metadata_str=doc.get_metadata_str(MetadataMode.EMBED), content=""))
    assert reserve > 0
    for node in nodes:
        assert len(node.get_content(MetadataMode.NONE)) <= 200 - reserve
    assert "".join(n.get_content(MetadataMode.NONE) for n in nodes) == text


# -- hand-built documents with exactly known vectors -----------------------------------------------------------------
RENT = [
    "The tenant pays rent on the first day of each quarter. ",
    "Late rent bears interest at five percent a year. ",
    "The rent rises by two percent every January. ",
]
TERM = [
    "Either party may terminate this lease in writing. ",
    "A terminated lease ends at the close of that day. ",
    "Termination does not release accrued debts.",
]


@pytest.mark.parametrize(
    ("method", "amount"),
    [("percentile", None), ("standard_deviation", 1.0), ("interquartile", None), ("gradient", None),
     ("threshold", None)],
)
def test_breakpoint_at_topic_shift(method: str, amount: float | None) -> None:
    # buffer 0: distances [0, 0, 1, 0, 0]. percentile 95 -> 0.8; std 1 -> 0.2 + 0.4 = 0.6; iqr 1.5 -> 0.2 + 0;
    # gradient: rises [0, 0, 1, -1, 0], 95th percentile 0.8; threshold 0.5: cos(rent, termination) = 0.
    text = "".join(RENT + TERM)
    parser = make(KeywordEmbedding(), breakpoint_method=method, breakpoint_threshold_amount=amount, buffer_size=0)
    cut = len("".join(RENT))
    assert parser.chunk_indices(text) == [(0, cut), (cut, len(text))]


def test_standard_deviation_three_sigma_keeps_one_chunk() -> None:
    # mean 0.2 + 3 * std 0.4 = 1.4 > every distance: no breakpoint
    text = "".join(RENT + TERM)
    parser = make(KeywordEmbedding(), breakpoint_method="standard_deviation", buffer_size=0)
    assert parser.chunk_indices(text) == [(0, len(text))]


def test_gradient_cuts_at_the_shift_not_before() -> None:
    # LangChain's np.gradient would give [0, .5, 0, -.5, 0] and cut after RENT[1]; the rise cuts after RENT[2]
    text = "".join(RENT + TERM)
    parser = make(KeywordEmbedding(), breakpoint_method="gradient", buffer_size=0)
    assert parser.chunk_indices(text)[0] == (0, len("".join(RENT)))


def test_threshold_compares_against_running_chunk_with_forward_window() -> None:
    # buffer 1: unit 2's forward window is rent+termination (cos 0.7 with the rent centroid: no cut), unit 3's is
    # termination only (cos 0: cut)
    text = "".join(RENT + TERM)
    parser = make(KeywordEmbedding(), breakpoint_method="threshold", buffer_size=1)
    cut = len("".join(RENT))
    assert parser.chunk_indices(text) == [(0, cut), (cut, len(text))]


def test_max_chunk_size_cuts_at_weakest_link() -> None:
    # percentile 100: no breakpoint at all; the 300-character group must be cut to <= 200 characters, and the
    # largest distance within reach is the rent -> termination shift
    text = "".join(RENT + TERM)
    parser = make(KeywordEmbedding(), breakpoint_threshold_amount=100, buffer_size=0, max_chunk_size=200)
    cut = len("".join(RENT))
    assert parser.chunk_indices(text) == [(0, cut), (cut, len(text))]
    # the same text with no shift (all one topic) is cut as late as the size allows
    same = make(FakeEmbedding(dim=4), breakpoint_threshold_amount=100, buffer_size=0, max_chunk_size=200)
    spans = same.chunk_indices("".join(RENT * 2))
    check_spans("".join(RENT * 2), spans, 200)


def test_min_chunk_size_merges_fragment_into_more_similar_neighbour() -> None:
    rent = "".join(RENT[:2])  # 104 characters
    heading = "Terminate; notice; see the schedule below. "  # 43: cos 0.71 with termination, 0 with rent
    term = "".join(TERM)  # 143
    text = rent + heading + term
    kw = dict(breakpoint_method="threshold", breakpoint_threshold_amount=0.8, buffer_size=0)
    a, b = len(rent), len(rent) + len(heading)
    assert make(KeywordEmbedding(), **kw).chunk_indices(text) == [(0, a), (a, b), (b, len(text))]
    assert make(KeywordEmbedding(), min_chunk_size=50, **kw).chunk_indices(text) == [(0, a), (a, len(text))]
    # max 150: heading + termination (186) does not fit, rent + heading (147) does: the fragment joins the rent
    assert make(KeywordEmbedding(), min_chunk_size=50, max_chunk_size=150, **kw).chunk_indices(text) == [
        (0, b),
        (b, len(text)),
    ]
    # max 120: it fits with neither neighbour and stays a chunk of its own
    spans = make(KeywordEmbedding(), min_chunk_size=50, max_chunk_size=120, **kw).chunk_indices(text)
    assert (a, b) in spans


NOTICE = ["Every notice goes to the registered address. ", "A notice by email counts from the next day. "]


@pytest.mark.parametrize("method", ["percentile", "standard_deviation", "interquartile", "gradient"])
def test_number_of_chunks_cuts_at_the_largest_scores(method: str) -> None:
    # buffer 0: distances [0, 0, 1, 0, 0, 1, 0] (rent | termination | notice); rises [0, 0, 1, -1, 0, 1, -1].
    # Two scores of 1 (a tie): n=2 takes the earlier; n=3 both; n=10 only the two real shifts; n=1 none.
    text = "".join(RENT + TERM) + " " + "".join(NOTICE)  # TERM ends without a space
    a, b = len("".join(RENT)), len("".join(RENT + TERM)) + 1

    def spans(n: int) -> list[tuple[int, int]]:
        return make(KeywordEmbedding(), breakpoint_method=method, buffer_size=0, number_of_chunks=n).chunk_indices(text)

    assert spans(1) == [(0, len(text))]
    assert spans(2) == [(0, a), (a, len(text))]
    assert spans(3) == spans(10) == [(0, a), (a, b), (b, len(text))]


def test_number_of_chunks_never_cuts_identical_sentences_and_sizes_still_apply() -> None:
    same = "The rent is due monthly. " * 8  # 200 characters, every distance 0: no real shift to cut at
    assert make(number_of_chunks=4).chunk_indices(same) == [(0, len(same))]
    capped = make(number_of_chunks=1, max_chunk_size=100).chunk_indices(same)  # the size limit adds cuts
    check_spans(same, capped, 100)
    assert len(capped) == 2


def test_number_of_chunks_is_validated() -> None:
    with pytest.raises(ValueError, match="number_of_chunks"):
        make(number_of_chunks=0)
    with pytest.raises(ValueError, match="number_of_chunks needs a distance-based breakpoint_method"):
        make(number_of_chunks=3, breakpoint_method="threshold")
    with pytest.raises(ValueError, match="number_of_chunks and breakpoint_threshold_amount both set"):
        make(number_of_chunks=3, breakpoint_threshold_amount=90)
    first = make(number_of_chunks=3).to_dict()
    assert first["number_of_chunks"] == 3 and first != make(number_of_chunks=2).to_dict()  # in the cache key


@PROPERTY_SETTINGS
@given(text=legal_texts(), n=st.integers(1, 6), method=st.sampled_from(METHODS[1:]))
def test_number_of_chunks_is_an_upper_bound_without_size_limits(text: str, n: int, method: str) -> None:
    spans = make(breakpoint_method=method, number_of_chunks=n, max_chunk_size=None).chunk_indices(text)
    check_spans(text, spans, None)
    assert len(spans) <= n
    assert "".join(text[s:e] for s, e in spans) == (text if text.strip() else "")


# -- edge cases: shared cases 11 and 08 --------------------------------------------------------------------------
CASE11_PARAMS = [
    {"buffer_size": 1, "breakpoint_method": "percentile", "breakpoint_threshold_amount": 95},
    {"buffer_size": 3, "breakpoint_method": "percentile", "breakpoint_threshold_amount": 50},
    {"breakpoint_method": "gradient"},
    {"breakpoint_method": "standard_deviation"},
    {"breakpoint_method": "interquartile"},
    {"breakpoint_method": "threshold", "breakpoint_threshold_amount": 0.99},
    {"number_of_chunks": 2},
    {"number_of_chunks": 5},
    {"number_of_chunks": 2, "breakpoint_method": "gradient"},
]


@pytest.mark.parametrize("params", CASE11_PARAMS)
def test_tiny_inputs(params: dict) -> None:
    case = load_case("11")
    empty, blank, one, two = case["input"]["texts"]
    for text in (empty, blank):
        parser = make(**params)
        assert parser.chunk_indices(text) == []
        assert parser.get_nodes_from_documents([Document(text=text)]) == []
        assert parser.embed_model.calls == []  # type: ignore[attr-defined]
    assert make(**params).chunks(one) == [one]
    spans = make(**params).chunk_indices(two)
    assert len(spans) in (1, 2)
    check_spans(two, spans, None)
    assert "".join(two[s:e] for s, e in spans) == two


def test_two_sentences_split_when_unrelated() -> None:
    two = load_case("11")["input"]["texts"][3]
    spans = make(breakpoint_method="threshold", breakpoint_threshold_amount=0.99, buffer_size=0).chunk_indices(two)
    assert spans == [(0, 46), (46, len(two))]


def test_blank_documents_and_blank_runs() -> None:
    case = load_case("08")
    for blank in case["input"]["blank_docs"]:
        parser = make()
        assert parser.get_nodes_from_documents([Document(text=blank)]) == []
        assert parser.embed_model.calls == []  # type: ignore[attr-defined]
    text = case["input"]["text"]
    limit = case["params"]["chunk_size"]
    for method in METHODS:
        # limit 30: "\n\n\nSECTION 1. Definitions apply." is 32 characters, so the leading blank lines fit in no
        # chunk and are left out (documented); every visible character is covered (P-COVER)
        spans = make(breakpoint_method=method, max_chunk_size=limit).chunk_indices(text)
        check_spans(text, spans, limit)
        assert text[: spans[0][0]] == "\n\n\n" and spans[-1][1] == len(text)
        # with room for them, nothing is left out
        spans = make(breakpoint_method=method, max_chunk_size=100).chunk_indices(text)
        check_spans(text, spans, 100)
        assert "".join(text[s:e] for s, e in spans) == text


def test_identical_sentences_zero_variance() -> None:
    text = "The rent is due monthly. " * 40
    for method in METHODS:
        parser = make(breakpoint_method=method, max_chunk_size=None)
        assert parser.chunk_indices(text) == [(0, len(text))]
        assert parser.embed_model.texts_embedded == ["The rent is due monthly."]  # type: ignore[attr-defined]
    capped = make(max_chunk_size=200).chunk_indices(text)
    check_spans(text, capped, 200)
    assert "".join(text[s:e] for s, e in capped) == text
    assert all(e - s == 200 for s, e in capped)  # 8 sentences of 25 characters per chunk


def test_one_very_long_sentence() -> None:
    text = " ".join(f"word{i}" for i in range(2000)) + "."
    parser = make(max_chunk_size=500, min_chunk_size=100)
    spans = parser.chunk_indices(text)
    check_spans(text, spans, 500)
    assert "".join(text[s:e] for s, e in spans) == text
    pieces = parser.embed_model.texts_embedded  # type: ignore[attr-defined]
    assert len(pieces) == len(set(pieces)) and all(len(p) <= 500 for p in pieces)
    # without a size limit the sentence is one chunk and nothing is embedded
    unlimited = make(max_chunk_size=None)
    assert unlimited.chunk_indices(text) == [(0, len(text))]
    assert unlimited.embed_model.calls == []  # type: ignore[attr-defined]


def test_sentence_ends_of_other_scripts() -> None:
    parts = [
        "本合同自签字之日起生效。",
        "双方应当遵守保密义务！",
        "违约方是否承担责任？",
        "هل يجوز إنهاء العقد؟ ",
        "یہ معاہدہ ختم ہو گیا۔ ",
        "The English clause ends here.",
    ]
    text = "".join(parts)
    # threshold 0.99: every pair of different sentences is cut, so the chunks are exactly the sentences
    parser = make(breakpoint_method="threshold", breakpoint_threshold_amount=0.99, buffer_size=0)
    assert parser.chunks(text) == parts
    assert sorted(parser.embed_model.texts_embedded) == sorted(p.strip() for p in parts)  # type: ignore[attr-defined]
    nodes = make().get_nodes_from_documents([Document(text=text)])
    assert "".join(n.get_content(MetadataMode.NONE) for n in nodes) == text


# -- embedding calls -----------------------------------------------------------------------------------------------
def _doc(i: int, n: int = 10) -> str:
    return " ".join(f"Clause {i}.{j} obliges party {'A' * (j + 1)} to act." for j in range(n))


@pytest.mark.parametrize("buffer_size", [0, 1, 3])
def test_each_sentence_embedded_once_batched_across_documents(buffer_size: int) -> None:
    embed = FakeEmbedding(embed_batch_size=1000)
    parser = make(embed, embed_batch_size=8, buffer_size=buffer_size)
    docs = [Document(text=_doc(i), id_=f"d{i}") for i in range(3)]
    parser.get_nodes_from_documents(docs)
    expected = sorted(s.strip() for d in docs for s in parser_sentences(d.text))
    assert sorted(embed.texts_embedded) == expected  # every sentence exactly once
    assert [len(c) for c in embed.calls] == [8, 8, 8, 6]  # 30 sentences in batches of 8, across documents
    lengths = [len(t) for t in embed.texts_embedded]
    assert lengths == sorted(lengths)  # sorted by length


def parser_sentences(text: str) -> list[str]:
    return [text[s:e] for s, e in sentence_spans(text)]


def test_repeated_sentences_embedded_once_across_documents() -> None:
    boiler = "This Agreement is confidential. "
    docs = [Document(text=boiler + f"Party {i} pays the fee. " + boiler) for i in range(4)]
    embed = FakeEmbedding(embed_batch_size=1000)
    make(embed).get_nodes_from_documents(docs)
    assert sorted(embed.texts_embedded) == sorted(["This Agreement is confidential."] + [
        f"Party {i} pays the fee." for i in range(4)
    ])


def test_embedding_cost_is_linear_in_document_length() -> None:
    for n in (10, 40):
        embed = FakeEmbedding(embed_batch_size=1000)
        make(embed, buffer_size=3).chunk_indices(_doc(0, n))
        assert len(embed.texts_embedded) == n


def test_async_path_matches_sync() -> None:
    docs = [Document(text=_doc(i) + " " + LIABILITY + TERMINATION, id_=f"d{i}") for i in range(3)]
    sync_embed, async_embed = FakeEmbedding(embed_batch_size=1000), FakeEmbedding(embed_batch_size=1000)
    sync_nodes = located_nodes(make(sync_embed, max_chunk_size=300).get_nodes_from_documents(docs))
    async_nodes = located_nodes(asyncio.run(make(async_embed, max_chunk_size=300).aget_nodes_from_documents(docs)))
    assert [(n.node_id, n.start_char_idx, n.end_char_idx) for n in sync_nodes] == [
        (n.node_id, n.start_char_idx, n.end_char_idx) for n in async_nodes
    ]
    assert sorted(sync_embed.texts_embedded) == sorted(async_embed.texts_embedded)


def test_show_progress_does_not_change_output() -> None:
    text = _doc(1)
    assert make(show_progress=True).chunk_indices(text) == make().chunk_indices(text)
    assert "show_progress" not in make(show_progress=True).to_dict()


def test_broken_embedding_is_reported() -> None:
    text = _doc(0)
    with pytest.raises(ValueError, match="returned 9 embeddings for 10 texts"):
        make(BrokenEmbedding(mode="short", embed_batch_size=100)).chunk_indices(text)
    with pytest.raises(ValueError, match="non-finite"):
        make(BrokenEmbedding(mode="nan", embed_batch_size=100)).chunk_indices(text)


# -- settings, validation and the ingestion cache ------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs",
    [
        {"buffer_size": -1},
        {"breakpoint_method": "percentile", "breakpoint_threshold_amount": 120},
        {"breakpoint_method": "gradient", "breakpoint_threshold_amount": -1},
        {"breakpoint_method": "standard_deviation", "breakpoint_threshold_amount": -0.5},
        {"breakpoint_method": "threshold", "breakpoint_threshold_amount": 1.5},
        {"breakpoint_method": "threshold", "breakpoint_threshold_amount": math.nan},
        {"breakpoint_method": "nonsense"},
        {"min_chunk_size": 500, "max_chunk_size": 100},
        {"max_chunk_size": 0},
        {"max_chunk_size": None, "count_metadata": True},
        {"embed_batch_size": 0},
    ],
)
def test_invalid_settings_are_refused(kwargs: dict) -> None:
    with pytest.raises(ValidationError):
        make(**kwargs)


def test_serialization_names_the_embedding_model() -> None:
    data = make(FakeEmbedding(model_name="fake-a")).to_dict()
    assert data["embed_model"] == {"class_name": "FakeEmbedding", "model_name": "fake-a"}
    assert data["class_name"] == "SemanticNodeParser"
    json.dumps(data)  # serializable


def test_ingestion_cache_separates_settings_and_models() -> None:
    text = _doc(0) + " " + LIABILITY + TERMINATION
    docs = [Document(text=text, id_="doc")]
    cache = IngestionCache()
    embed = FakeEmbedding(embed_batch_size=1000)

    def run(parser: SemanticNodeParser) -> tuple[list[str], int]:
        before = len(embed.calls)
        nodes = IngestionPipeline(transformations=[parser], cache=cache).run(documents=docs)
        return [n.node_id for n in nodes], len(embed.calls) - before

    base_ids, calls = run(make(embed, max_chunk_size=300))
    assert calls > 0
    assert run(make(embed, max_chunk_size=300)) == (base_ids, 0)  # same settings: served from the cache
    for variant in (
        make(embed, max_chunk_size=300, buffer_size=2),
        make(embed, max_chunk_size=300, breakpoint_method="gradient"),
        make(embed, max_chunk_size=250),
        make(embed, max_chunk_size=300, min_chunk_size=50),
        make(embed, max_chunk_size=300, sentence_backend="nltk"),
    ):
        ids, calls = run(variant)
        assert calls > 0, f"{variant.to_dict()} was served another parser's cache entry"
        assert ids != base_ids  # node ids depend on the settings
    # same settings, another embedding model: a different key too
    other = FakeEmbedding(model_name="other-model", embed_batch_size=1000)
    hashes = {
        get_transformation_hash(docs, make(e, max_chunk_size=300))
        for e in (FakeEmbedding(), other, KeywordEmbedding())
    }
    assert len(hashes) == 3


@pytest.mark.slow  # many processes or a large input: minutes in the whole suite
def test_node_ids_stable_across_processes() -> None:
    text = LIABILITY + TERMINATION + GOVERNING_LAW
    repo = Path(__file__).resolve().parents[2]
    script = (
        f"import sys, json; sys.path.insert(0, {str(repo)!r})\n"
        "from tests.conftest import FakeEmbedding\n"
        "from llama_index.core.schema import Document\n"
        "from llama_index_sac import SemanticNodeParser\n"
        "p = SemanticNodeParser(embed_model=FakeEmbedding(), min_chunk_size=0, max_chunk_size=300)\n"
        f"nodes = p.get_nodes_from_documents([Document(text={text!r}, id_='doc')])\n"
        "print(json.dumps([[n.node_id, n.start_char_idx, n.end_char_idx] for n in nodes]))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    here = located_nodes(make(max_chunk_size=300).get_nodes_from_documents([Document(text=text, id_="doc")]))
    assert json.loads(out.strip().splitlines()[-1]) == [[n.node_id, n.start_char_idx, n.end_char_idx] for n in here]


def test_default_embed_model_comes_from_the_one_resolver(monkeypatch: pytest.MonkeyPatch) -> None:
    import llama_index_sac.node_parser.semantic as semantic

    made: list[FakeEmbedding] = []

    def fake_default(model_name: str | None = None, **kwargs: object) -> FakeEmbedding:
        made.append(FakeEmbedding(model_name="resolved"))
        return made[-1]

    monkeypatch.setattr(semantic, "default_embedding_model", fake_default)
    assert SemanticNodeParser().embed_model is made[0]
    assert SemanticNodeParser.from_defaults().embed_model is made[1]


# -- the real all-MiniLM-L6-v2 model -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def minilm():
    from llama_index_sac.embeddings.default import default_embedding_model

    return default_embedding_model()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("method", "amount"),
    [("percentile", None), ("threshold", None), ("standard_deviation", 1.0), ("interquartile", 0.5)],
)
def test_minilm_breaks_between_liability_and_termination(
    minilm, method: BreakpointMethod, amount: float | None
) -> None:
    text = LIABILITY + TERMINATION
    parser = SemanticNodeParser(embed_model=minilm, breakpoint_method=method, breakpoint_threshold_amount=amount)
    assert parser.chunk_indices(text) == [(0, len(LIABILITY)), (len(LIABILITY), len(text))]


@pytest.mark.slow
def test_minilm_three_topics_threshold(minilm) -> None:
    text = LIABILITY + TERMINATION + GOVERNING_LAW
    a, b = len(LIABILITY), len(LIABILITY) + len(TERMINATION)
    parser = SemanticNodeParser(embed_model=minilm, breakpoint_method="threshold", max_chunk_size=None)
    assert parser.chunk_indices(text) == [(0, a), (a, b), (b, len(text))]


@pytest.mark.slow
def test_minilm_single_topic_stays_together(minilm) -> None:
    parser = SemanticNodeParser(embed_model=minilm, breakpoint_method="threshold", max_chunk_size=None)
    assert parser.chunk_indices(TERMINATION) == [(0, len(TERMINATION))]


@pytest.mark.slow
def test_minilm_warns_on_a_chunk_over_256_tokens(minilm) -> None:
    text = (LIABILITY + TERMINATION) * 2  # 1,412 characters, one chunk: more than MiniLM's 256 tokens
    parser = SemanticNodeParser(embed_model=minilm, number_of_chunks=1, max_chunk_size=None, min_chunk_size=0)
    pattern = r"1 of 1 .* input limit of 256 tokens of .*\(largest: (2[6-9]\d|3\d\d) tok"
    with pytest.warns(EmbedLimitWarning, match=pattern):
        parser.get_nodes_from_documents([Document(text=text)])


# -- the embedding model's input limit -------------------------------------------------------------------------
LONG = "One two three four five six seven eight nine ten. Eleven twelve thirteen."  # 13 words: 15 tokens, limit 12


def test_nodes_over_the_embedding_limit_warn_once_with_counts() -> None:
    parser = make(TokenLimitedEmbedding(), number_of_chunks=1, max_chunk_size=None)
    short = Document(text="Rent is due.", id_="short")  # 3 words: 5 tokens
    with pytest.warns(EmbedLimitWarning) as record:
        nodes = parser.get_nodes_from_documents([Document(text=LONG, id_="long"), short])
    assert len(record) == 1
    assert "1 of 2 SemanticNodeParser nodes" in str(record[0].message)
    assert "input limit of 12 tokens of unknown (largest: 15 tokens" in str(record[0].message)
    assert [n.get_content(MetadataMode.NONE) for n in nodes] == [LONG, "Rent is due."]  # nothing is cut
    with pytest.warns(EmbedLimitWarning, match="1 of 1 SemanticNodeParser nodes"):  # the async path checks too
        asyncio.run(parser.aget_nodes_from_documents([Document(text=LONG)]))


def test_embedding_limit_warning_points_at_the_users_line() -> None:
    """However deep LlamaIndex calls the parser (directly, an IngestionPipeline, an event loop), the warning's
    location is the line of this file that started the parse, not a line of the library."""
    parser = make(TokenLimitedEmbedding(), number_of_chunks=1)
    docs = [Document(text=LONG)]
    calls = {
        "get_nodes_from_documents": lambda: parser.get_nodes_from_documents(docs),
        "__call__": lambda: parser(docs),
        "pipeline": lambda: IngestionPipeline(transformations=[parser]).run(documents=docs),
        "async": lambda: asyncio.run(parser.aget_nodes_from_documents(docs)),
    }
    for name, call in calls.items():
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            call()
        hits = [w for w in record if issubclass(w.category, EmbedLimitWarning)]
        assert len(hits) == 1, name
        assert (hits[0].filename, hits[0].lineno) == (__file__, call.__code__.co_firstlineno), name


def test_embedding_limit_raise_ignore_and_unknown_tokenizer() -> None:
    with pytest.raises(ValueError, match="exceed the input limit of 12 tokens"):
        make(TokenLimitedEmbedding(), number_of_chunks=1, on_embed_overflow="raise").get_nodes_from_documents(
            [Document(text=LONG)]
        )
    quiet = [
        make(TokenLimitedEmbedding(), number_of_chunks=1, on_embed_overflow="ignore"),
        make(FakeEmbedding(), number_of_chunks=1),  # no tokenizer: nothing measured, nothing claimed
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmbedLimitWarning)
        for parser in quiet:
            assert len(parser.get_nodes_from_documents([Document(text=LONG)])) == 1
        make(TokenLimitedEmbedding(), number_of_chunks=1).chunk_indices(LONG)  # spans only: no node, no check
    with pytest.raises(ValueError):
        make(on_embed_overflow="sometimes")


def test_embedding_limit_looks_through_the_runner_cache_and_stays_out_of_ids(tmp_path: Path) -> None:
    from llama_index_sac.apps.benchmark.cache import CachedEmbedding, EmbeddingCache

    cache = EmbeddingCache(tmp_path)
    wrapped = CachedEmbedding(TokenLimitedEmbedding(), cache, {"m": "t"})
    with pytest.raises(ValueError, match="input limit of 12 tokens"):
        make(wrapped, number_of_chunks=1, on_embed_overflow="raise").get_nodes_from_documents([Document(text=LONG)])
    cache.close()
    # a policy for the warning changes neither the nodes nor the ingestion cache key
    warn, ignore = make(number_of_chunks=1), make(number_of_chunks=1, on_embed_overflow="ignore")
    doc = Document(text=LONG, id_="d")
    assert [n.node_id for n in warn.get_nodes_from_documents([doc])] == [
        n.node_id for n in ignore.get_nodes_from_documents([doc])
    ]
    assert get_transformation_hash([doc], warn) == get_transformation_hash([doc], ignore)


def test_embedding_limit_advice_names_the_size_option() -> None:
    with pytest.warns(EmbedLimitWarning, match="set max_chunk_size"):
        make(TokenLimitedEmbedding(), number_of_chunks=1, max_chunk_size=None).get_nodes_from_documents(
            [Document(text=LONG)]
        )
    with pytest.warns(EmbedLimitWarning, match="lower max_chunk_size"):
        make(TokenLimitedEmbedding(), number_of_chunks=1, max_chunk_size=500).get_nodes_from_documents(
            [Document(text=LONG)]
        )


def test_embedding_limit_counts_embedded_metadata() -> None:
    meta = {"title": "a b c d e f g h i j"}  # "title: a b ... j" = 11 words; with 3 words of text + 2: 16 > 12
    parser = make(TokenLimitedEmbedding())
    with pytest.warns(EmbedLimitWarning, match="largest: 16 tokens"):
        parser.get_nodes_from_documents([Document(text="Rent is due.", metadata=meta)])
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmbedLimitWarning)
        doc = Document(text="Rent is due.", metadata=meta, excluded_embed_metadata_keys=["title"])
        parser.get_nodes_from_documents([doc])
