"""``LLMSummarizer``: document summaries written by any LlamaIndex LLM (SAC paper, arXiv 2510.06999, section 3).

One document, one summary: a document that fits the input window (``max_input_chars``) costs one LLM request (plus
at most ``length_retries`` short "shorten this" requests when the answer is too long). Longer documents follow
``long_document`` (the rules are in :mod:`~llama_index_sac.summarizers.long_documents`):

* ``"map_reduce"`` (default): every window is summarized with ``map_prompt``, the partial summaries (in order) with
  ``reduce_prompt``, in several rounds if they do not fit one window. ``strategy="map_reduce"``, not truncated.
* ``"head_tail"``: one request on the start and the end of the document. ``strategy="head_tail"``,
  ``truncated=True``.

Length control: the prompt asks for at most ``max_chars`` characters; an answer longer than
``max_chars * (1 + length_tolerance)`` is sent back with ``shorten_prompt`` (up to ``length_retries`` times), and
if it is still too long it is cut at a word boundary and the result says ``cut=True``. An empty answer is retried
once, then raises.

Errors (decided by exception type and HTTP status, never by message text; the rules are in
:mod:`llama_index_sac.summarizers.retry`): transient errors (:func:`is_transient_error`) are retried up to
``max_retries`` times, waiting the exponential backoff (``retry_initial_delay`` doubled per retry, at most
``retry_max_delay`` s) or, when longer, the server's ``Retry-After`` (seconds or HTTP-date) capped at
``retry_after_max`` s; then :class:`SummarizationError` naming :attr:`LLMSummarizer.endpoint` (``__cause__``: the
last error). Other errors raise at once. A malformed answer (invalid JSON, response-validation error) or one cut at
the token limit (``finish_reason="length"``) is asked again once; cut again, the document fails
(:class:`SummarizationError`: a cut answer is never kept). After ``max_consecutive_failures`` connection
failures in a row (refused, reset, connect timeout; across all requests of the instance), :class:`LLMUnavailableError`
names the endpoint and every later request fails fast without a request until :meth:`LLMSummarizer.reset_circuit`.
In map_reduce, when one window (or reduce group) fails, the document's other requests are cancelled: none is sent
after the call returned.

Prompt injection: the document goes between ``<document>`` tags, neutralised inside it (:mod:`.prompts`); answers
are cleaned (:func:`~llama_index_sac.summarizers.base.normalize_summary`) and capped; :data:`PROMPT_FORMAT` versions
these rules in :meth:`LLMSummarizer.identity`.

``timeout`` bounds each request and ``document_timeout`` one document (``asyncio.wait_for``): a hung endpoint costs a
document at most ``min(document_timeout, (max_retries + 1) * timeout + backoff)``. Neither can interrupt an LLM whose
async method blocks the event loop (LlamaIndex's in-process ``LlamaCPP``), and clients with their own retries
(OpenAI's ``max_retries``) multiply the attempts: the constructors here set theirs to 0.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Literal

from llama_index.core.bridge.pydantic import Field, PrivateAttr, SerializeAsAny, field_serializer, model_validator
from llama_index.core.llms import LLM
from llama_index.core.prompts import BasePromptTemplate

from llama_index_sac.summarizers.base import (
    BaseSummarizer,
    SummarizationError,
    SummaryResult,
    cut_at_word_boundary,
    normalize_summary,
)
from llama_index_sac.summarizers.llm_clients import gguf_llm, openai_like_llm, openai_llm
from llama_index_sac.summarizers.llm_identity import llm_endpoint, llm_identity
from llama_index_sac.summarizers.long_documents import head_tail_excerpt, map_reduce_input
from llama_index_sac.summarizers.prompts import (
    COMMERCIAL_CONTRACT_SUMMARY_PROMPT,
    GENERIC_SUMMARY_PROMPT,
    MAP_SUMMARY_PROMPT,
    MERGER_AGREEMENT_SUMMARY_PROMPT,
    NDA_SUMMARY_PROMPT,
    PRIVACY_POLICY_SUMMARY_PROMPT,
    REDUCE_SUMMARY_PROMPT,
    SHORTEN_PROMPT,
    chatml_completion_to_prompt,
    chatml_messages_to_prompt,
    delimit_document,
    template_text,
)
from llama_index_sac.summarizers.retry import (
    CircuitBreaker,
    LLMUnavailableError,
    RequestRun,
    is_transient_error,
    request_with_retries,
    send_once,
)

__all__ = ["LLMSummarizer", "LLMUnavailableError", "chatml_completion_to_prompt", "chatml_messages_to_prompt",
           "is_transient_error"]

#: How a prompt is filled and an answer cleaned, in :meth:`LLMSummarizer.identity` (earlier summaries miss the cache):
#: 2 = document tags neutralised (:func:`~.prompts.delimit_document`), control characters removed from answers.
PROMPT_FORMAT = 2


class LLMSummarizer(BaseSummarizer):
    """Summaries from an LLM, with prompts, length control, long-document handling and retries (see the module
    docstring for the exact rules).

    Example::

        from llama_index.llms.openai import OpenAI
        summarizer = LLMSummarizer(llm=OpenAI(model="gpt-4o-mini", temperature=0, max_retries=0))
        summarizer = LLMSummarizer.from_openai("gpt-4o-mini")                     # the same
        summarizer = LLMSummarizer.from_gguf("~/models/qwen.gguf", max_input_chars=4000)
        summarizer = LLMSummarizer.expert_nda(llm)   # 300 characters, NDA prompt

    Raises (construction): ``ValueError`` when a prompt lacks ``{document}``/``{max_chars}`` (``{summary}`` and
    ``{max_chars}`` for ``shorten_prompt``), or when ``metadata_keys`` is given and ``prompt`` lacks ``{metadata}`` (a
    prompt without ``{metadata}`` and no ``metadata_keys`` given: content-only, ``metadata_keys=[]``).
    Raises (``summarize``/``asummarize``): :class:`SummarizationError` naming :attr:`endpoint`;
    :class:`LLMUnavailableError` (a ``SummarizationError``) once the circuit breaker is open.
    """

    uses_llm = True

    llm: SerializeAsAny[LLM] = Field(description="The LlamaIndex LLM that writes the summaries.")
    prompt: SerializeAsAny[BasePromptTemplate] = Field(
        default=GENERIC_SUMMARY_PROMPT,
        description="Summary prompt (variables {document}, {max_chars}, {metadata}); the generic SAC prompt by "
        "default.",
    )
    map_prompt: SerializeAsAny[BasePromptTemplate] = Field(
        default=MAP_SUMMARY_PROMPT, description="Prompt for one window of an overlong document (map_reduce)."
    )
    reduce_prompt: SerializeAsAny[BasePromptTemplate] = Field(
        default=REDUCE_SUMMARY_PROMPT, description="Prompt combining the windows' partial summaries (map_reduce)."
    )
    shorten_prompt: SerializeAsAny[BasePromptTemplate] = Field(
        default=SHORTEN_PROMPT, description="Prompt shortening an over-long summary (variables {summary}, "
        "{max_chars})."
    )
    length_tolerance: float = Field(
        default=0.2, ge=0.0, le=1.0,
        description="Accepted overshoot as a fraction of max_chars: summaries up to max_chars * (1 + tolerance) "
        "characters are kept as they are.",
    )
    length_retries: int = Field(
        default=1, ge=0, description="How many times an over-long summary is sent back with shorten_prompt before "
        "it is cut at a word boundary (and flagged cut=True)."
    )
    max_input_chars: int | None = Field(
        default=None, gt=0,
        description="Input window in characters (prompt text excluded). None: derived from the LLM's context "
        "window as (context_window - num_output - 300) * 3 characters (3 characters per token is conservative "
        "for English legal text), at least 1000.",
    )
    long_document: Literal["map_reduce", "head_tail"] = Field(
        default="map_reduce",
        description="Documents longer than max_input_chars: 'map_reduce' reads every window then combines the "
        "partial summaries; 'head_tail' reads only the start and the end (metadata summary_truncated=True).",
    )
    map_max_chars: int | None = Field(
        default=None, gt=0, description="Length target of each partial (map) summary; None: 2 * max_chars."
    )
    max_retries: int = Field(default=3, ge=0, description="Retries per request on transient errors.")
    retry_initial_delay: float = Field(default=1.0, ge=0.0, description="First backoff delay in seconds (doubles).")
    retry_max_delay: float = Field(default=30.0, ge=0.0, description="Largest backoff delay in seconds.")
    timeout: float | None = Field(
        default=120.0, gt=0, description="Seconds allowed per request (None: no limit); a timeout is transient."
    )
    document_timeout: float | None = Field(
        default=600.0, gt=0,
        description="Seconds allowed for one document, all its requests, retries and waits included (None: no "
        "limit); then SummarizationError for that document.",
    )
    retry_after_max: float = Field(
        default=60.0, ge=0.0,
        description="Largest wait in seconds taken from a server's Retry-After header (429/503); the wait before a "
        "retry is max(backoff, min(Retry-After, retry_after_max)).",
    )
    max_consecutive_failures: int = Field(
        default=5, ge=1,
        description="Consecutive connection failures (refused, reset, connect timeout; across all requests of this "
        "summarizer) after which it raises LLMUnavailableError and sends nothing more until reset_circuit().",
    )

    _circuit: CircuitBreaker = PrivateAttr(default_factory=CircuitBreaker)

    @field_serializer("prompt", "map_prompt", "reduce_prompt", "shorten_prompt")
    def _serialize_prompt(self, prompt: BasePromptTemplate) -> str:
        return template_text(prompt)

    @model_validator(mode="after")
    def _check_prompts(self) -> LLMSummarizer:
        for name in ("prompt", "map_prompt", "reduce_prompt"):
            variables = set(getattr(self, name).template_vars)
            missing = {"document", "max_chars"} - variables
            if missing:
                raise ValueError(f"{name} must use the variables {{document}} and {{max_chars}}; missing {missing}")
        if self.metadata_keys and "metadata" not in set(self.prompt.template_vars):
            if "metadata_keys" in self.model_fields_set:  # the default identity keys: dropped for such a prompt
                raise ValueError(f"metadata_keys={self.metadata_keys!r} asks to fold metadata into the summary, but "
                                 "the prompt has no {metadata} variable")
            self.metadata_keys = []
        missing = {"summary", "max_chars"} - set(self.shorten_prompt.template_vars)
        if missing:
            raise ValueError(f"shorten_prompt must use the variables {{summary}} and {{max_chars}}; missing {missing}")
        return self

    @classmethod
    def class_name(cls) -> str:
        return "LLMSummarizer"

    # -- constructors ---------------------------------------------------------------------------------------
    @classmethod
    def from_openai(cls, model: str = "gpt-4o-mini", *, temperature: float = 0.0, max_tokens: int = 256,
                    api_key: str | None = None, api_base: str | None = None, **kwargs: Any) -> LLMSummarizer:
        """Summarizer on OpenAI's API (``llama-index-llms-openai``; ``api_key`` default ``OPENAI_API_KEY``,
        ``api_base`` another endpoint). The client's own retries are off (``max_retries=0``): this class retries.
        Raises ``ValueError`` at once without key or endpoint (every request would fail), ``ImportError`` without
        the extra."""
        return cls(llm=openai_llm(model, temperature, max_tokens, api_key, api_base), **kwargs)

    @classmethod
    def from_openai_like(cls, api_base: str, model: str, *, api_key: str = "not-needed",
                         context_window: int = 2048, temperature: float = 0.0, max_tokens: int = 128,
                         request_timeout: float = 120.0, **kwargs: Any) -> LLMSummarizer:
        """Summarizer on any OpenAI-compatible server (``llama_cpp.server``, vLLM...) at ``api_base`` (e.g.
        ``http://127.0.0.1:8000/v1``), through ``llama-index-llms-openai-like`` as a chat model."""
        return cls(llm=openai_like_llm(api_base, model, api_key, context_window, temperature, max_tokens,
                                       request_timeout), **kwargs)

    @classmethod
    def from_gguf(cls, model_path: str | os.PathLike[str], *, n_ctx: int = 2048, max_new_tokens: int = 128,
                  n_threads: int | None = None, temperature: float = 0.0, chat_format: Literal["chatml"] = "chatml",
                  **kwargs: Any) -> LLMSummarizer:
        """Summarizer on a local GGUF model run in-process by ``llama-cpp-python`` (``llama-index-llms-llama-cpp``).

        ``max_input_chars`` defaults to what fits ``n_ctx``. Raises ``FileNotFoundError`` for a missing file and
        ``ImportError`` (naming the package) when llama.cpp support is not installed."""
        return cls(llm=gguf_llm(model_path, n_ctx, max_new_tokens, n_threads, temperature), **kwargs)

    @classmethod
    def expert_nda(cls, llm: LLM, *, max_chars: int = 300, **kwargs: Any) -> LLMSummarizer:
        """The paper's expert-guided setting for NDAs (300 characters, :data:`NDA_SUMMARY_PROMPT`)."""
        return cls(llm=llm, prompt=NDA_SUMMARY_PROMPT, max_chars=max_chars, **kwargs)

    @classmethod
    def expert_privacy_policy(cls, llm: LLM, *, max_chars: int = 300, **kwargs: Any) -> LLMSummarizer:
        """The paper's expert-guided setting for privacy policies (300 characters)."""
        return cls(llm=llm, prompt=PRIVACY_POLICY_SUMMARY_PROMPT, max_chars=max_chars, **kwargs)

    @classmethod
    def expert_merger_agreement(cls, llm: LLM, *, max_chars: int = 300, **kwargs: Any) -> LLMSummarizer:
        """Expert-guided setting for merger agreements (MAUD; 300 characters,
        :data:`MERGER_AGREEMENT_SUMMARY_PROMPT`)."""
        return cls(llm=llm, prompt=MERGER_AGREEMENT_SUMMARY_PROMPT, max_chars=max_chars, **kwargs)

    @classmethod
    def expert_commercial_contract(cls, llm: LLM, *, max_chars: int = 300, **kwargs: Any) -> LLMSummarizer:
        """Expert-guided setting for commercial contracts (CUAD; 300 characters,
        :data:`COMMERCIAL_CONTRACT_SUMMARY_PROMPT`)."""
        return cls(llm=llm, prompt=COMMERCIAL_CONTRACT_SUMMARY_PROMPT, max_chars=max_chars, **kwargs)

    def identity(self) -> dict[str, Any]:
        """Model and its generation settings, all prompts, ``max_chars``, tolerance, window and long-document
        strategy, ``metadata_keys``. Not: retries, timeouts, concurrency (they do not change a summary)."""
        ident = super().identity()
        ident.update(
            prompt_format=PROMPT_FORMAT,
            llm=llm_identity(self.llm),
            prompt=template_text(self.prompt),
            map_prompt=template_text(self.map_prompt),
            reduce_prompt=template_text(self.reduce_prompt),
            shorten_prompt=template_text(self.shorten_prompt),
            length_tolerance=self.length_tolerance,
            length_retries=self.length_retries,
            max_input_chars=self.input_window(),
            long_document=self.long_document,
            map_max_chars=self._map_chars(),
        )
        return ident

    def input_window(self) -> int:
        """The input window in characters (``max_input_chars`` or the value derived from the LLM)."""
        if self.max_input_chars is not None:
            return self.max_input_chars
        try:
            meta = self.llm.metadata
            tokens = meta.context_window - (meta.num_output if meta.num_output > 0 else 256) - 300
        except Exception:  # pragma: no cover
            tokens = 1000
        return max(1000, tokens * 3)

    def max_output_chars(self) -> int:
        """The hard bound on a final summary's length: ``floor(max_chars * (1 + length_tolerance))``."""
        return int(self.max_chars * (1 + self.length_tolerance))

    def max_summary_chars(self) -> int:
        """:meth:`max_output_chars`."""
        return self.max_output_chars()

    def _map_chars(self) -> int:
        return self.map_max_chars if self.map_max_chars is not None else 2 * self.max_chars

    @property
    def endpoint(self) -> str:
        """Where requests go, for error messages: the LLM's ``api_base``/``base_url``/``azure_endpoint`` (user
        info and query string removed), else its class and model (``"LlamaCPP (model qwen.gguf)"``); see
        :func:`~llama_index_sac.summarizers.llm_identity.llm_endpoint`."""
        return llm_endpoint(self.llm)

    @property
    def circuit_open(self) -> bool:
        """True after ``max_consecutive_failures`` connection failures: requests fail fast until
        :meth:`reset_circuit`."""
        return self._circuit.is_open

    def reset_circuit(self) -> None:
        """Close the circuit breaker (and forget the count of connection failures): requests go out again."""
        self._circuit.reset()

    async def _request(self, prompt: BasePromptTemplate, limiter: asyncio.Semaphore | None, run: RequestRun,
                       **variables: Any) -> str:
        """One LLM request with retries, ``Retry-After``, the circuit breaker (see the module docstring)."""
        return await request_with_retries(lambda: send_once(self.llm, prompt, variables), settings=self,
                                          circuit=self._circuit, endpoint=self.endpoint, run=run, limiter=limiter)

    async def _generate(self, prompt: BasePromptTemplate, document: str, max_chars: int, metadata: str,
                        limiter: asyncio.Semaphore | None, run: RequestRun) -> str:
        """A non-empty, normalized answer to ``prompt`` (an empty answer is asked again once, then raises)."""
        document = delimit_document(document)
        for _ in range(2):
            answer = normalize_summary(
                await self._request(prompt, limiter, run, document=document, max_chars=max_chars, metadata=metadata)
            )
            if answer:
                return answer
        raise SummarizationError(f"the LLM at {self.endpoint} returned an empty summary twice", attempts=2)

    async def _final(self, prompt: BasePromptTemplate, document: str, metadata: str,
                     limiter: asyncio.Semaphore | None, run: RequestRun) -> tuple[str, bool]:
        """The final summary with length control; returns ``(summary, cut)``."""
        summary = await self._generate(prompt, document, self.max_chars, metadata, limiter, run)
        limit = self.max_output_chars()
        for _ in range(self.length_retries):
            if len(summary) <= limit:
                break
            shorter = normalize_summary(
                await self._request(self.shorten_prompt, limiter, run, summary=summary, max_chars=self.max_chars)
            )
            if shorter:
                summary = shorter
        if len(summary) <= limit:
            return summary, False
        return cut_at_word_boundary(summary, limit), True

    def _metadata_section(self, metadata: dict[str, str]) -> str:
        if not metadata:
            return ""
        return delimit_document("Document metadata: " + "; ".join(f"{k}: {v}" for k, v in metadata.items())
                                + "\n\n")

    async def _asummarize(self, text: str, metadata: dict[str, str],
                          limiter: asyncio.Semaphore | None) -> SummaryResult:
        if self.document_timeout is None:
            return await self._summarize_document(text, metadata, limiter)
        try:
            return await asyncio.wait_for(self._summarize_document(text, metadata, limiter), self.document_timeout)
        except asyncio.TimeoutError:
            raise SummarizationError(f"no summary from the LLM at {self.endpoint} within document_timeout="
                                     f"{self.document_timeout:g} s") from None

    async def _summarize_document(self, text: str, metadata: dict[str, str],
                                  limiter: asyncio.Semaphore | None) -> SummaryResult:
        run = RequestRun()
        meta = self._metadata_section(metadata)
        window = self.input_window()
        if len(text) <= window:
            summary, cut = await self._final(self.prompt, text, meta, limiter, run)
            return SummaryResult(summary=summary, strategy="single", cut=cut, llm_calls=run.calls)
        if self.long_document == "head_tail":
            summary, cut = await self._final(self.prompt, head_tail_excerpt(text, window), meta, limiter, run)
            return SummaryResult(summary=summary, strategy="head_tail", truncated=True, cut=cut, llm_calls=run.calls)
        joined = await map_reduce_input(
            text, window, self._map_chars(),
            lambda part: self._generate(self.map_prompt, part, self._map_chars(), meta, limiter, run),
            lambda parts: self._generate(self.reduce_prompt, parts, self._map_chars(), meta, limiter, run),
            run,
        )
        summary, cut = await self._final(self.reduce_prompt, joined, meta, limiter, run)
        return SummaryResult(summary=summary, strategy="map_reduce", cut=cut, llm_calls=run.calls)
