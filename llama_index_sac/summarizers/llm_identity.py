"""What names a LlamaIndex LLM: its identity in the summary cache key (:func:`llm_identity`) and where its requests
go, for error messages (:func:`llm_endpoint`)."""

from __future__ import annotations

import contextlib
import os
import urllib.parse
from typing import Any

from llama_index.core.llms import LLM

from llama_index_sac.node_parser.base import callable_identity

__all__ = ["llm_endpoint", "llm_identity"]


def llm_identity(llm: LLM) -> dict[str, Any]:
    """The LLM's class and model (a ``.gguf`` path by its file name: the same file elsewhere gives the same
    summaries), the generation settings it has (``temperature``, ``max_tokens``, ``max_new_tokens``, ``top_p``,
    ``seed``, ``is_chat_model``), its prompt formatting functions and system prompt."""
    model: Any
    try:
        model = llm.metadata.model_name
    except Exception:  # pragma: no cover - an LLM whose metadata needs a loaded model
        model = getattr(llm, "model", None) or getattr(llm, "model_path", None)
    if isinstance(model, str) and model.endswith(".gguf"):
        model = os.path.basename(model)  # the same file elsewhere gives the same summaries
    ident: dict[str, Any] = {"class": llm.class_name(), "model": model}
    for attr in ("temperature", "max_tokens", "max_new_tokens", "top_p", "seed", "is_chat_model"):
        value = getattr(llm, attr, None)
        if value is not None and not callable(value):
            ident[attr] = value
    for attr in ("messages_to_prompt", "completion_to_prompt"):
        fn = getattr(llm, attr, None)
        if callable(fn):
            ident[attr] = callable_identity(fn)
    system_prompt = getattr(llm, "system_prompt", None)
    if system_prompt:
        ident["system_prompt"] = system_prompt
    return ident


def llm_endpoint(llm: LLM) -> str:
    """Where requests go, for error messages: the LLM's ``api_base``/``base_url``/``azure_endpoint`` (user info and
    query string removed), else its class and model (``"LlamaCPP (model qwen.gguf)"``)."""
    for attr in ("api_base", "base_url", "azure_endpoint"):
        url = getattr(llm, attr, None)
        if isinstance(url, str) and url.strip():
            parts = urllib.parse.urlsplit(url.strip())
            host = parts.hostname or ""
            host = f"[{host}]" if ":" in host else host  # IPv6
            with contextlib.suppress(ValueError):  # an invalid port is left out
                host = f"{host}:{parts.port}" if parts.port else host
            return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))
    ident = llm_identity(llm)
    return f"{ident['class']} (model {ident['model']})"
