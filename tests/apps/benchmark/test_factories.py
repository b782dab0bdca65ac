"""Building a run's parts (``llama_index_sac.apps.benchmark.factories``): the expert prompts routed by dataset."""

from __future__ import annotations

from llama_index_sac.apps.benchmark import factories
from llama_index_sac.apps.benchmark.config import parse_config
from llama_index_sac.summarizers import LLMSummarizer


def test_expert_prompts_are_routed_by_dataset(monkeypatch):
    from llama_index_sac.summarizers import (
        COMMERCIAL_CONTRACT_SUMMARY_PROMPT,
        MERGER_AGREEMENT_SUMMARY_PROMPT,
        NDA_SUMMARY_PROMPT,
        PRIVACY_POLICY_SUMMARY_PROMPT,
    )
    from tests._summary_fakes import RecordingLLM

    def fake_build(settings):  # the LLM, not its client: the routing is what is tested
        return LLMSummarizer(llm=RecordingLLM(), **settings.component_kwargs())

    monkeypatch.setattr(factories, "build_llm_summarizer", fake_build)
    config = parse_config("sac-expert:summarizer.model=m.gguf,summarizer.max_input_chars=2000,name=sac-expert")
    assert config.summarizer.model_dump()["max_chars"] == 300
    said: list[str] = []
    out = factories.build_summarizers(config, ["contractnli", "privacy_qa", "maud", "cuad", "other"], said.append)
    assert all(isinstance(s, LLMSummarizer) for s in out.values())
    llms = {name: s for name, s in out.items() if isinstance(s, LLMSummarizer)}
    prompts = {name: s.prompt for name, s in llms.items()}
    assert prompts["contractnli"] is NDA_SUMMARY_PROMPT and prompts["privacy_qa"] is PRIVACY_POLICY_SUMMARY_PROMPT
    assert prompts["maud"] is MERGER_AGREEMENT_SUMMARY_PROMPT and prompts["cuad"] is COMMERCIAL_CONTRACT_SUMMARY_PROMPT
    assert {s.max_chars for s in out.values()} == {300}
    assert {s.input_window() for s in llms.values()} == {2000}
    assert said == ["[sac-expert] no expert prompt for dataset 'other': its documents get the generic prompt"]
