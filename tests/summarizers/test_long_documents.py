"""Documents longer than the LLM's window (summarizers/long_documents.py), through LLMSummarizer: map_reduce reads
every window, head_tail is flagged truncated."""

from __future__ import annotations

from llama_index_sac.summarizers import (
    LLMSummarizer,
)
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
