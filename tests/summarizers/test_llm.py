"""LLMSummarizer (summarizers/llm.py) with a recording fake LLM: the prompt and one call, expert prompts and identity,
metadata folding, length control, retries and timeouts."""

from __future__ import annotations

import asyncio
from typing import TypedDict

import pytest
from llama_index.core import PromptTemplate

from llama_index_sac.summarizers import (
    GENERIC_SUMMARY_PROMPT,
    NDA_SUMMARY_PROMPT,
    LLMSummarizer,
    SummarizationError,
    SummaryResult,
)
from tests._summary_fakes import HTTPStatusError, RecordingLLM, document_of
from tests.summarizers.test_extractive import NDA


class _Fast(TypedDict):
    """LLMSummarizer keyword arguments: retries without waiting (seconds)."""

    retry_initial_delay: float
    retry_max_delay: float


FAST: _Fast = {"retry_initial_delay": 0.0, "retry_max_delay": 0.0}


def test_llm_summarizer_prompt_and_single_call() -> None:
    llm = RecordingLLM(script=["Summary: Mutual NDA between Kestrel and Marlow on genomics data."])
    summarizer = LLMSummarizer(llm=llm)
    result = summarizer.summarize(NDA)
    assert result == SummaryResult("Mutual NDA between Kestrel and Marlow on genomics data.", "single", llm_calls=1)
    assert len(llm.prompts) == 1
    assert "at most 150 characters" in llm.prompts[0] and document_of(llm.prompts[0]) == NDA
    assert summarizer.summarize("") == SummaryResult("", "empty") and len(llm.prompts) == 1  # no call


def test_llm_summarizer_expert_prompts_and_identity() -> None:
    llm = RecordingLLM()
    generic = LLMSummarizer(llm=llm)
    nda = LLMSummarizer.expert_nda(llm)
    privacy = LLMSummarizer.expert_privacy_policy(llm)
    merger = LLMSummarizer.expert_merger_agreement(llm)
    commercial = LLMSummarizer.expert_commercial_contract(llm, max_chars=250)
    assert nda.max_chars == 300 and nda.prompt is NDA_SUMMARY_PROMPT
    assert "privacy policy" in privacy.prompt.get_template()
    assert merger.max_chars == 300 and "merger agreement" in merger.prompt.get_template()
    assert commercial.max_chars == 250 and "commercial contracts" in commercial.prompt.get_template()
    hashes = {generic.identity_hash(), nda.identity_hash(), privacy.identity_hash(), merger.identity_hash(),
              commercial.identity_hash(), LLMSummarizer(llm=llm, max_chars=100).identity_hash(),
              LLMSummarizer(llm=RecordingLLM(model_name="other")).identity_hash()}
    assert len(hashes) == 7
    assert generic.identity()["prompt"] == GENERIC_SUMMARY_PROMPT.get_template()
    assert LLMSummarizer(llm=llm, max_retries=9, timeout=1).identity() == generic.identity()  # not output-relevant
    with pytest.raises(ValueError, match="metadata"):
        LLMSummarizer(llm=llm, metadata_keys=["title"], prompt=GENERIC_SUMMARY_PROMPT.__class__(
            "Summarize {document} in {max_chars} characters."))
    with pytest.raises(ValueError, match="document"):
        LLMSummarizer(llm=llm, prompt=GENERIC_SUMMARY_PROMPT.__class__("Summarize in {max_chars} characters."))


def test_llm_summarizer_folds_the_identity_metadata_unless_told_otherwise() -> None:
    llm = RecordingLLM()
    LLMSummarizer(llm=llm, metadata_keys=[]).summarize(NDA, {"title": "Kestrel NDA"})
    LLMSummarizer(llm=llm).summarize(NDA, {"title": "Kestrel NDA", "file_name": "a/nda_kestrel.txt", "x": "y"})
    assert "Kestrel NDA" not in llm.prompts[0]
    assert "Document metadata: file_name: nda kestrel; title: Kestrel NDA\n\n" in llm.prompts[1]
    no_slot = LLMSummarizer(llm=llm, prompt=PromptTemplate("{document} in {max_chars}"))  # cannot show metadata
    assert no_slot.metadata_keys == [] and no_slot.identity()["metadata_keys"] == []
    with pytest.raises(ValueError, match="no {metadata} variable"):
        LLMSummarizer(llm=llm, metadata_keys=["title"], prompt=PromptTemplate("{document} in {max_chars}"))


def test_llm_length_control_retry_then_cut() -> None:
    long = "Mutual NDA between Kestrel Analytics and Marlow Biotech " + "covering data " * 20
    llm = RecordingLLM(script=[long, "Mutual NDA, Kestrel and Marlow."])
    result = LLMSummarizer(llm=llm, max_chars=50).summarize(NDA)
    assert result.summary == "Mutual NDA, Kestrel and Marlow." and not result.cut and result.llm_calls == 2
    assert "Shorten the following summary to at most 50 characters" in llm.prompts[1]
    llm = RecordingLLM(script=[long, long])
    result = LLMSummarizer(llm=llm, max_chars=50, length_tolerance=0.2).summarize(NDA)
    assert result.cut and len(result.summary) <= 60 and long.startswith(result.summary)
    llm = RecordingLLM(script=["", "  "])
    with pytest.raises(SummarizationError, match="empty"):
        LLMSummarizer(llm=llm).summarize(NDA)


def test_llm_retries_transient_errors_with_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    sleeps: list[float] = []
    real_sleep = asyncio.sleep

    async def fake_sleep(delay: float) -> None:
        sleeps.append(delay)
        await real_sleep(0)

    monkeypatch.setattr("llama_index_sac.summarizers.llm.asyncio.sleep", fake_sleep)
    llm = RecordingLLM(script=[HTTPStatusError(429), TimeoutError("slow"), ConnectionError("reset"), "An NDA."])
    result = LLMSummarizer(llm=llm, max_retries=3, retry_initial_delay=0.5, retry_max_delay=1.5).summarize(NDA)
    assert result.summary == "An NDA." and result.llm_calls == 4
    assert sleeps == [0.5, 1.0, 1.5]  # exponential, capped
    llm = RecordingLLM(script=[HTTPStatusError(500)] * 3)
    with pytest.raises(SummarizationError, match="after 3 attempt") as info:
        LLMSummarizer(llm=llm, max_retries=2, **FAST).summarize(NDA)
    assert isinstance(info.value.__cause__, HTTPStatusError) and info.value.attempts == 3
    llm = RecordingLLM(script=[HTTPStatusError(400), "never"])
    with pytest.raises(SummarizationError, match="non-transient"):
        LLMSummarizer(llm=llm, max_retries=5, **FAST).summarize(NDA)
    assert len(llm.prompts) == 1  # a client error is not retried


def test_llm_timeout_is_transient() -> None:
    llm = RecordingLLM(delay=0.5)
    with pytest.raises(SummarizationError, match="TimeoutError"):
        LLMSummarizer(llm=llm, timeout=0.05, max_retries=1, **FAST).summarize(NDA)
    assert len(llm.prompts) == 0  # both attempts were cut before the fake answered
