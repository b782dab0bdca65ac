"""Test doubles for the summarizer tests: a recording, scriptable fake LLM."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from typing import Any

from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen, LLMMetadata
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.llms.custom import CustomLLM


class HTTPStatusError(Exception):
    """Looks like a client's HTTP error: carries status_code."""

    def __init__(self, status_code: int) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code


class RecordingLLM(CustomLLM):
    """Records every prompt; answers with ``responder(prompt)``; ``script`` items (exceptions or strings) are
    consumed first, one per request; ``delay`` seconds per async request; tracks the peak concurrency."""

    model_name: str = "recording-fake"
    context_window: int = 4096
    delay: float = 0.0
    _prompts: list[str] = PrivateAttr(default_factory=list)
    _script: list[Any] = PrivateAttr(default_factory=list)
    _responder: Callable[[str], str] | None = PrivateAttr(default=None)
    _active: int = PrivateAttr(default=0)
    _peak: int = PrivateAttr(default=0)

    def __init__(self, responder: Callable[[str], str] | None = None, script: list[Any] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._responder = responder
        self._script = list(script or [])

    @classmethod
    def class_name(cls) -> str:
        return "RecordingLLM"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(context_window=self.context_window, num_output=128, model_name=self.model_name)

    @property
    def prompts(self) -> list[str]:
        return self._prompts

    @property
    def peak_concurrency(self) -> int:
        return self._peak

    def _answer(self, prompt: str) -> str:
        self._prompts.append(prompt)
        if self._script:
            item = self._script.pop(0)
            if isinstance(item, BaseException):
                raise item
            return str(item)
        if self._responder is not None:
            return self._responder(prompt)
        return "Summary " + hashlib.sha1(prompt.encode()).hexdigest()[:10]

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self._answer(prompt))

    async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self._active += 1
        self._peak = max(self._peak, self._active)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            return CompletionResponse(text=self._answer(prompt))
        finally:
            self._active -= 1

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        raise NotImplementedError


def document_of(prompt: str) -> str:
    """The document part of a summary prompt (between the ``<document>`` tags of the shipped templates)."""
    if "<document>\n" in prompt and "\n</document>" in prompt:
        return prompt.split("<document>\n", 1)[1].rsplit("\n</document>", 1)[0]
    for marker in ("Document:\n", "Part of the document:\n", "Summaries of the parts:\n"):
        if marker in prompt:
            return prompt.split(marker, 1)[1].rsplit("\n\n", 1)[0]
    return prompt
