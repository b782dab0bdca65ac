"""The built-in synthetic contracts: determinism, exact gold spans, and the look-alike property that causes DRM."""

from __future__ import annotations

import re

import numpy as np
import pytest

from llama_index_sac.apps.benchmark.datasets.synthetic import synthetic_contracts
from llama_index_sac.node_parser.recursive import RecursiveCharacterNodeParser
from tests.conftest import FakeEmbedding


def test_deterministic_and_seeded():
    one, two = synthetic_contracts(), synthetic_contracts()
    assert one.documents == two.documents and one.queries == two.queries
    other = synthetic_contracts(seed=1)
    assert other.documents != one.documents


def test_shape_of_the_default_benchmark():
    bench = synthetic_contracts()
    assert len(bench.documents) == 24
    assert bench.datasets == ["nda", "services"]
    assert sum(q.dataset == "nda" for q in bench.queries) == 12 * 4
    assert sum(q.dataset == "services" for q in bench.queries) == 12 * 5
    assert len({q.query_id for q in bench.queries}) == len(bench.queries)
    assert 50_000 < bench.n_characters < 120_000  # small enough for the one-minute default run
    assert all(doc_id.split("/")[0] == bench.doc_datasets[doc_id] for doc_id in bench.documents)


@pytest.mark.parametrize("n", [2, 7, 40])
def test_gold_spans_are_exact_clause_sentences(n):
    bench = synthetic_contracts(n_documents=n)
    assert len(bench.documents) == n
    for query in bench.queries:
        (span,) = query.gold
        text = bench.documents[span.doc_id]
        answer = text[span.start : span.end]
        assert answer == answer.strip() and answer.endswith(".")
        # the sentence starts after a clause heading or after the previous sentence, never mid-word
        assert text[span.start - 1] == " "
        assert re.match(r"[A-Z]", answer)


def test_answers_carry_the_document_specific_value():
    bench = synthetic_contracts()
    laws = {}
    for query in bench.queries:
        if query.query_id.endswith("-law"):
            (span,) = query.gold
            laws[span.doc_id] = bench.documents[span.doc_id][span.start : span.end]
            assert "laws of" in laws[span.doc_id]
    assert len(laws) == 24 and len(set(laws.values())) > 4


def test_queries_name_the_parties_and_the_clauses_do_not():
    bench = synthetic_contracts()
    for query in bench.queries:
        parties = re.match(r"Consider the (.+?) between (.+?) and (.+?); ", query.query)
        assert parties, query.query
        (span,) = query.gold
        text = bench.documents[span.doc_id]
        for party in parties.group(2, 3):
            assert party in text[:600]  # preamble
            assert party not in text[span.start : span.end]
            # the party appears only in the preamble and the signature block
            body = text[600 : text.index("IN WITNESS WHEREOF")]
            assert party not in body


def test_flat_chunks_of_look_alike_contracts_are_near_identical():
    """The DRM trap: the chunk holding a clause looks almost the same in every contract of a template."""
    bench = synthetic_contracts()
    parser = RecursiveCharacterNodeParser(chunk_size=500, chunk_overlap=0)
    embed = FakeEmbedding()
    gold_chunks: dict[str, str] = {}
    for query in bench.queries:
        if not query.query_id.endswith("-law") or query.dataset != "nda":
            continue
        (span,) = query.gold
        text = bench.documents[span.doc_id]
        for start, end in parser.chunk_indices(text):
            if start <= span.start < end:
                gold_chunks[span.doc_id] = text[start:end]
    vectors = np.array([embed.get_text_embedding(chunk) for chunk in gold_chunks.values()])
    sims = vectors @ vectors.T
    off_diagonal = sims[~np.eye(len(sims), dtype=bool)]
    # every governing-law chunk of an NDA is closer than 0.8 (trigram cosine) to some other NDA's
    assert np.all(np.sort(sims, axis=1)[:, -2] > 0.8)
    assert off_diagonal.mean() > 0.6


def test_bad_size_raises():
    with pytest.raises(ValueError, match="n_documents"):
        synthetic_contracts(n_documents=1)


def test_document_count_limits_are_the_ones_the_generator_can_fill() -> None:
    assert len(synthetic_contracts(150).to_documents()) == 150  # two distinct party names each, 30 x 10 names
    for bad in (1, 151):
        with pytest.raises(ValueError, match="between 2 and 150"):
            synthetic_contracts(bad)
