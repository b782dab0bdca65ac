"""Documents longer than the LLM's window (summarizers/long_documents.py), through LLMSummarizer: map_reduce reads
every window, head_tail is flagged truncated."""

from __future__ import annotations

from llama_index_sac.summarizers import (
    LLMSummarizer,
)
from llama_index_sac.summarizers.long_documents import HEAD_TAIL_MARK, group_by_length, head_tail_excerpt
from tests._summary_fakes import RecordingLLM, document_of
from tests.conftest import load_case


def test_llm_map_reduce_reads_every_window() -> None:
    case = load_case("18")
    text = case["input"]["text"]
    llm = RecordingLLM(responder=lambda p: f"{document_of(p)[:60]} .. {document_of(p)[-60:]}")
    window = case["params"]["summarizer_max_input_chars"]
    result = LLMSummarizer(llm=llm, max_input_chars=window, max_chars=150).summarize(text)
    assert result.strategy == "map_reduce" and not result.truncated
    maps = [document_of(p) for p in llm.prompts if p.startswith("You are an expert legal summarizer. Below is one")]
    assert "".join(maps) == text  # the windows tile the document: every character was read
    assert all(len(m) <= window for m in maps)
    assert len(llm.prompts) == len(maps) + 1 + (result.llm_calls - len(maps) - 1)
    assert result.llm_calls == len(llm.prompts) and len(maps) == 3
    assert case["input"]["late_fact"][:50] in "".join(maps)


def test_llm_head_tail_is_flagged_truncated() -> None:
    text = load_case("18")["input"]["text"]
    llm = RecordingLLM()
    result = LLMSummarizer(llm=llm, max_input_chars=2000, long_document="head_tail").summarize(text)
    assert result.strategy == "head_tail" and result.truncated and result.llm_calls == 1
    doc = document_of(llm.prompts[0])
    assert len(doc) <= 2000 and doc.startswith(text[:100]) and doc.endswith(text[-100:]) and "[...]" in doc


def test_head_tail_excerpt_worked_by_hand() -> None:
    text = "alpha beta gamma delta epsilon zeta"  # 35 characters
    # window 27: 20 characters around the 7-character mark; the head gets 2 * 20 // 3 = 13, cut at a word to
    # "alpha beta" (10), the tail the other 10: "silon zeta" (its first space is past a quarter of it: kept whole)
    assert head_tail_excerpt(text, 27) == "alpha beta" + HEAD_TAIL_MARK + "silon zeta"
    assert len(HEAD_TAIL_MARK) == 7


def test_group_by_length_worked_by_hand() -> None:
    # costs are length + 10: 14, 12, 16, 11 against a limit of 20; a group closes only once it holds two items
    assert group_by_length(["aaaa", "bb", "cccccc", "d"], 20) == [["aaaa", "bb"], ["cccccc", "d"]]
    # a lone last item joins the group before it, so every round shrinks the list
    assert group_by_length(["aaaa", "bb", "c"], 20) == [["aaaa", "bb", "c"]]
    assert group_by_length([], 20) == []
