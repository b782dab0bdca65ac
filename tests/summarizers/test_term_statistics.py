"""TermStatistics: the explicit, versioned corpus statistics of the extractive summary."""

from __future__ import annotations

import gzip
import json
import math
import pickle
from pathlib import Path
from typing import cast

import numpy as np
import pytest

from llama_index_sac import ExtractiveSummarizer, TermStatistics
from llama_index_sac.summarizers.terms import MIN_DOCUMENTS, term_sample

DOCS = [f"Alpha beta contract {i}. Gamma delta clause{i % 3} epsilon." for i in range(MIN_DOCUMENTS)]


def test_document_frequencies_by_hand() -> None:
    with pytest.warns(UserWarning, match="only 3 document"):
        stats = TermStatistics.from_texts(["Alpha beta beta", "beta gamma", "the and of"])  # the last: stop words
    assert stats.n_documents == 3
    assert [stats.df(t) for t in ("alpha", "beta", "gamma", "the", "zeta")] == [1, 2, 1, 0, 0]


def test_weights_match_the_formula() -> None:
    """w = (1 + ln tf) * (ln((1 + n) / (1 + df)) + 1), L2-normalised; terms in more than half of n >= 4 ignored."""
    stats = TermStatistics({"apple": 1, "pear": 3, "plum": 2}, 4)
    sample = "apple apple pear plum plum plum kiwi"
    weight = {t: (1 + math.log(tf)) * (math.log(5 / (1 + df)) + 1)
              for t, tf, df in [("apple", 2, 1), ("plum", 3, 2), ("kiwi", 1, 0)]}  # pear: 3 > 4 / 2, ignored
    expected = sorted(weight, key=lambda t: (-weight[t], t))
    assert stats.top_terms(sample, 10) == expected
    assert stats.top_terms(sample, 1) == expected[:1]
    assert stats.top_terms("", 5) == [] and stats.top_terms(sample, 0) == []


def test_content_not_order_or_repetition_defines_the_table(tmp_path: Path) -> None:
    a = TermStatistics.from_texts(DOCS)
    b = TermStatistics.from_texts(list(reversed(DOCS)) + DOCS[:3] + ["  "], name="other name")
    assert a == b and a.fingerprint == b.fingerprint  # the name is a label, not content
    saved = a.save(tmp_path / "t.json.gz")
    assert saved.read_bytes()[:2] == b"\x1f\x8b"
    assert TermStatistics.load(saved) == a
    assert pickle.loads(pickle.dumps(a)) == a
    a.save(tmp_path / "t.json")
    assert TermStatistics.load(tmp_path / "t.json") == a
    assert TermStatistics.from_texts(DOCS[1:] + ["Zeta"]) != a


def test_few_documents_warn_and_bad_input_is_named(tmp_path: Path) -> None:
    with pytest.warns(UserWarning, match="only 2 document"):
        TermStatistics.from_texts(["a contract", "another contract"])
    with pytest.raises(ValueError, match="non-blank"):
        TermStatistics.from_texts(["", " "])
    with pytest.raises(TypeError, match="str"):
        TermStatistics.from_texts([b"bytes"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="df\\['x'\\]"):
        TermStatistics({"x": 5}, 3)
    with pytest.raises(ValueError, match="n_documents"):
        TermStatistics({}, True)  # type: ignore[arg-type]
    damaged = json.loads(json.dumps(TermStatistics.from_texts(DOCS).to_json()))
    damaged["df"]["alpha"] = 1
    (tmp_path / "d.json").write_text(json.dumps(damaged))
    with pytest.raises(ValueError, match="fingerprint does not match"):
        TermStatistics.load(tmp_path / "d.json")
    (tmp_path / "x.json").write_text("[]")
    with pytest.raises(ValueError, match="not a llama-index-sac/term-statistics"):
        TermStatistics.load(tmp_path / "x.json")
    (tmp_path / "z.json.gz").write_bytes(gzip.compress(b"{")[:5])
    with pytest.raises(ValueError, match="not a term-statistics file"):
        TermStatistics.load(tmp_path / "z.json.gz")


def test_the_shipped_table() -> None:
    stats = TermStatistics.default()
    assert stats.name == "legal-terms-v1" and stats.n_documents == 712 and len(stats) > 10_000
    assert "LegalBench-RAG" in stats.provenance and "at least 2 documents" in stats.provenance
    assert min(stats.df(t) for t in ("agreement", "confidential", "merger")) >= 2
    assert stats is TermStatistics.default()  # loaded once


def test_summarizer_identity_to_dict_and_paths(tmp_path: Path) -> None:
    shipped = ExtractiveSummarizer()
    assert shipped.identity()["term_statistics"] == TermStatistics.default().identity()
    assert ExtractiveSummarizer.from_dict(shipped.to_dict()).identity() == shipped.identity()
    custom = TermStatistics.from_texts(DOCS, name="ours")
    path = custom.save(tmp_path / "ours.json.gz")
    # a path on purpose: the validator loads it; the field's type is the TermStatistics it stores
    by_path = ExtractiveSummarizer(term_statistics=cast(TermStatistics, str(path)))
    assert by_path.term_statistics == custom and by_path.identity() != shipped.identity()
    assert by_path.to_dict()["term_statistics"] == {"name": "ours", "n_documents": MIN_DOCUMENTS,
                                                     "fingerprint": custom.fingerprint}
    with pytest.raises(ValueError, match="cannot be turned back"):
        ExtractiveSummarizer.from_dict(by_path.to_dict())
    restored = pickle.loads(pickle.dumps(by_path))
    assert restored.term_statistics == custom and restored.summarize(DOCS[0]) == by_path.summarize(DOCS[0])


def test_term_sample_reads_the_start_and_four_windows() -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(1000))
    assert term_sample(text, 2000) == text
    sample = term_sample(text, 300)
    parts = sample.split("\n")
    assert len(parts) == 5 and parts[0] == text[:100] and all(len(p) == 50 for p in parts[1:])
    assert np.all([p in text for p in parts])


def test_the_shipped_stop_words_are_scikit_learns() -> None:
    sklearn_text = pytest.importorskip("sklearn.feature_extraction.text")
    from llama_index_sac.summarizers.terms import stop_words

    assert stop_words() == frozenset(sklearn_text.ENGLISH_STOP_WORDS)
