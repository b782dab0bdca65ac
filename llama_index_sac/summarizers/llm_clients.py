"""The LlamaIndex LLM clients behind :class:`~llama_index_sac.LLMSummarizer`'s constructors: OpenAI, any
OpenAI-compatible server, a local GGUF model. Each client's own retries are off: the summarizer retries."""

from __future__ import annotations

import os
from typing import Any

from llama_index.core.llms import LLM

from llama_index_sac._util import require_extra
from llama_index_sac.summarizers.prompts import chatml_completion_to_prompt, chatml_messages_to_prompt

__all__ = ["gguf_llm", "openai_like_llm", "openai_llm"]


def openai_llm(model: str, temperature: float, max_tokens: int, api_key: str | None, api_base: str | None) -> LLM:
    """``llama_index.llms.openai.OpenAI`` for ``model``.

    Raises:
        ValueError: neither ``api_key``, ``OPENAI_API_KEY`` nor ``api_base`` (every request would fail).
        ImportError: the ``openai`` extra is not installed.
    """
    OpenAI = require_extra("llama_index.llms.openai", "openai", "LLMSummarizer.from_openai").OpenAI  # noqa: N806
    if not (api_key or os.environ.get("OPENAI_API_KEY") or api_base):
        raise ValueError(f"LLMSummarizer.from_openai({model!r}) needs an OpenAI API key: set OPENAI_API_KEY or "
                         "pass api_key=...; for a local OpenAI-compatible server use "
                         "from_openai_like(api_base, model)")
    options = {k: v for k, v in {"api_key": api_key, "api_base": api_base}.items() if v is not None}
    llm: LLM = OpenAI(model=model, temperature=temperature, max_tokens=max_tokens, max_retries=0, **options)
    return llm


def openai_like_llm(api_base: str, model: str, api_key: str, context_window: int, temperature: float,
                    max_tokens: int, request_timeout: float) -> LLM:
    """``llama_index.llms.openai_like.OpenAILike`` as a chat model at ``api_base`` (timeout in seconds).

    Raises:
        ImportError: the ``openai`` extra is not installed.
    """
    OpenAILike = require_extra(  # noqa: N806 (a class)
        "llama_index.llms.openai_like", "openai", "LLMSummarizer.from_openai_like").OpenAILike
    llm: LLM = OpenAILike(model=model, api_base=api_base, api_key=api_key, is_chat_model=True,
                          context_window=context_window, temperature=temperature, max_tokens=max_tokens,
                          max_retries=0, timeout=request_timeout)
    return llm


def gguf_llm(model_path: str | os.PathLike[str], n_ctx: int, max_new_tokens: int, n_threads: int | None,
             temperature: float) -> LLM:
    """``llama_index.llms.llama_cpp.LlamaCPP`` on the GGUF file ``model_path`` (ChatML prompts; ``n_ctx`` tokens).

    Raises:
        FileNotFoundError: no such file.
        ImportError: the ``llamacpp`` extra is not installed.
    """
    path = os.path.expanduser(os.fspath(model_path))
    if not os.path.isfile(path):
        raise FileNotFoundError(f"GGUF model not found: {path}")
    LlamaCPP = require_extra(  # noqa: N806 (a class)
        "llama_index.llms.llama_cpp", "llamacpp", "LLMSummarizer.from_gguf").LlamaCPP
    model_kwargs: dict[str, Any] = {"n_threads": n_threads} if n_threads else {}
    llm: LLM = LlamaCPP(model_path=path, temperature=temperature, max_new_tokens=max_new_tokens,
                        context_window=n_ctx, generate_kwargs={}, model_kwargs=model_kwargs, verbose=False,
                        messages_to_prompt=chatml_messages_to_prompt, completion_to_prompt=chatml_completion_to_prompt)
    return llm
