"""The summarizers' shared helpers (summarizers/base.py)."""

from __future__ import annotations

import pytest

from llama_index_sac.summarizers.base import cut_at_word_boundary, normalize_summary


def test_cut_at_word_boundary_and_normalize() -> None:
    assert cut_at_word_boundary("alpha beta gamma", 11) == "alpha beta"
    assert cut_at_word_boundary("alpha beta gamma", 100) == "alpha beta gamma"
    assert cut_at_word_boundary("abcdefghij", 4) == "abcd"  # one long word: the limit wins
    assert normalize_summary('  Summary:  "An NDA\nbetween A and B."  ') == "An NDA between A and B."
    with pytest.raises(ValueError):
        cut_at_word_boundary("x", 0)
