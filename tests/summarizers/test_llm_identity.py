"""llm_identity and llm_endpoint (summarizers/llm_identity.py): what names an LLM in the cache key and in errors."""

from __future__ import annotations

import pytest

from llama_index_sac.summarizers.llm_identity import llm_endpoint, llm_identity
from tests._summary_fakes import RecordingLLM


def test_a_gguf_model_is_named_by_its_file_with_its_system_prompt() -> None:
    llm = RecordingLLM(model_name="/models/q/qwen-0.5b.gguf", system_prompt="Be brief.")
    ident = llm_identity(llm)
    assert (ident["class"], ident["model"], ident["system_prompt"]) == ("RecordingLLM", "qwen-0.5b.gguf", "Be brief.")
    assert llm_identity(RecordingLLM(model_name="/elsewhere/qwen-0.5b.gguf", system_prompt="Be brief.")) == ident
    assert llm_endpoint(llm) == "RecordingLLM (model qwen-0.5b.gguf)"  # no URL: class and model


def test_the_endpoint_drops_user_info_query_and_an_invalid_port() -> None:
    openai_like = pytest.importorskip("llama_index.llms.openai_like", reason="the openai extra is not installed")

    def endpoint(api_base: str) -> str:
        return llm_endpoint(openai_like.OpenAILike(model="m", api_base=api_base, api_key="x"))

    assert endpoint("https://user:s3cret@llm.example.com:8443/v1?key=k") == "https://llm.example.com:8443/v1"
    assert endpoint("http://[::1]:8000/v1") == "http://[::1]:8000/v1"  # IPv6 keeps its brackets
    assert endpoint("http://llm.example.com:99999/v1") == "http://llm.example.com/v1"
