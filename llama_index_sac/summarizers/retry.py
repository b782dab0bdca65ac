"""The polite LLM client behind :class:`~llama_index_sac.summarizers.llm.LLMSummarizer`: error classification,
``Retry-After``, a circuit breaker, sibling cancellation and the per-request retries (tenacity, with our policies:
what is retried, when to stop, how long to wait).

Errors are classified by type and HTTP status (:mod:`~llama_index_sac.summarizers.llm_errors`); the wait before a
retry is ``max(backoff, min(retry_after, retry_after_max))``.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from llama_index.core.llms import LLM
from llama_index.core.prompts import BasePromptTemplate
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception

from llama_index_sac.summarizers.base import SummarizationError
from llama_index_sac.summarizers.llm_errors import (
    TruncatedAnswer,
    is_connection_error,
    is_malformed_response,
    is_timeout,
    is_transient_error,
    parse_retry_after,
    retry_after_seconds,
)

__all__ = [
    "CircuitBreaker", "LLMUnavailableError", "RequestRun", "gather_or_cancel", "is_connection_error",
    "is_malformed_response", "is_transient_error", "parse_retry_after", "request_with_retries",
    "retry_after_seconds", "send_once",
]

logger = logging.getLogger("llama_index_sac.summarizers.llm")
T = TypeVar("T")

_TRUNCATED_REASONS = frozenset({"length", "max_tokens", "MAX_TOKENS"})  # OpenAI, Anthropic, Gemini


class LLMUnavailableError(SummarizationError):
    """The LLM endpoint is treated as down: ``max_consecutive_failures`` requests in a row failed to connect.

    Every later request of the same summarizer fails fast with this error, without a request, until
    ``LLMSummarizer.reset_circuit()``. ``__cause__`` is the last connection error.

    Attributes:
        endpoint: the endpoint (``api_base``/``base_url``, else the LLM class and model).
        failures: the consecutive connection failures that opened the circuit.
    """

    def __init__(self, message: str, *, endpoint: str, failures: int, attempts: int = 0) -> None:
        super().__init__(message, attempts=attempts)
        self.endpoint = endpoint
        self.failures = failures


class _SiblingFailed(SummarizationError):
    """Raised instead of sending a request once another request of the same document has failed (never seen by
    callers: :func:`gather_or_cancel` raises the sibling's own error)."""


def _finish_reason(raw: Any) -> str | None:
    """``finish_reason`` of the first choice of a raw OpenAI-style response (object or dict; llama.cpp too), or
    Anthropic's ``stop_reason``; None when the response does not say."""
    def get(obj: Any, key: str) -> Any:
        return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)

    choices = get(raw, "choices")
    reason = get(choices[0], "finish_reason") if isinstance(choices, (list, tuple)) and choices else None
    reason = reason if reason is not None else get(raw, "stop_reason")
    return reason if isinstance(reason, str) else None


async def send_once(llm: LLM, prompt: BasePromptTemplate, variables: dict[str, Any]) -> tuple[str, str | None]:
    """One LLM call: ``(answer, finish_reason or None)``. The steps of ``LLM.apredict`` (chat or completion route,
    output parser) with the raw response kept; an LLM that overrides ``apredict`` is called through it."""
    if inspect.unwrap(type(llm).apredict) is not inspect.unwrap(LLM.apredict):  # (the dispatcher wraps per class)
        return str(await llm.apredict(prompt, **variables)), None
    if llm.metadata.is_chat_model:
        chat = await llm.achat(llm._get_messages(prompt, **variables))
        text, raw = chat.message.content or "", chat.raw
    else:
        completion = await llm.acomplete(llm._get_prompt(prompt, **variables), formatted=True)
        text, raw = completion.text, completion.raw
    return str(llm._parse_output(text)), _finish_reason(raw)


# -- the circuit breaker -------------------------------------------------------------------------------------
class CircuitBreaker:
    """Counts consecutive connection failures across all requests of one summarizer; opens at a threshold.

    Thread-safe. Copies and pickles are fresh (closed) breakers: the state belongs to one live instance."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failures = 0
        self._open: tuple[str, int, BaseException] | None = None

    def __reduce__(self) -> tuple[type[CircuitBreaker], tuple[()]]:
        return (CircuitBreaker, ())

    @property
    def is_open(self) -> bool:
        return self._open is not None

    def _error(self, endpoint: str, attempts: int) -> LLMUnavailableError:
        assert self._open is not None
        message, failures, cause = self._open
        error = LLMUnavailableError(message, endpoint=endpoint, failures=failures, attempts=attempts)
        error.__cause__ = cause
        return error

    def check(self, endpoint: str) -> None:
        """Raise :class:`LLMUnavailableError` when open (no request must be made)."""
        with self._lock:
            if self._open is not None:
                raise self._error(endpoint, 0)

    def reached(self) -> None:
        """A request reached the server (an answer, an HTTP error status, a malformed body): the count restarts."""
        with self._lock:
            if self._open is None:
                self._failures = 0

    def failed(self, exc: BaseException, threshold: int, endpoint: str, attempts: int) -> LLMUnavailableError | None:
        """Record one connection failure; the error to raise when the circuit is (now) open, else None."""
        with self._lock:
            if self._open is None:
                self._failures += 1
                if self._failures < threshold:
                    return None
                self._open = (
                    f"LLM endpoint {endpoint} is unavailable: {self._failures} consecutive attempts failed to "
                    f"connect (last: {type(exc).__name__}: {exc}); this summarizer sends no further requests "
                    "until reset_circuit() is called",
                    self._failures, exc,
                )
            return self._error(endpoint, attempts)

    def reset(self) -> None:
        with self._lock:
            self._failures = 0
            self._open = None


# -- one request, retried ------------------------------------------------------------------------------------
@dataclass
class RequestRun:
    """The requests of one document: ``calls`` made so far, and ``failed`` once one of them failed for good (the
    others then send nothing more)."""

    calls: int = 0
    failed: bool = False


class _Tally:
    """What the failed attempts of one request were so far: the state behind its tenacity policies. ``after`` runs
    once per failed attempt that is retried, before ``wait`` and ``stop`` read the counts."""

    def __init__(self) -> None:
        self.transient = 0  # transient failures so far (a malformed answer is not one)
        self.malformed = 0  # malformed or truncated answers so far
        self.last_malformed = False

    def after(self, state: RetryCallState) -> None:
        error = _failure(state)
        self.last_malformed = is_malformed_response(error)
        if self.last_malformed:
            self.malformed += 1
        else:
            self.transient += 1


def _failure(state: RetryCallState) -> BaseException:
    assert state.outcome is not None and state.outcome.failed  # the policies only see failed attempts
    error = state.outcome.exception()
    assert error is not None
    return error


def _retryable(error: BaseException) -> bool:
    """Worth another attempt: a malformed or truncated answer, or a transient error. Never one of ours (an open
    circuit, a failed sibling): their ``__cause__`` may be transient, they are not."""
    return not isinstance(error, SummarizationError) and (is_malformed_response(error) or is_transient_error(error))


class _Policies:
    """The tenacity policies of one request (``settings``: the ``LLMSummarizer``): ``stop`` after a second
    malformed answer or more than ``max_retries`` transient failures, ``wait`` nothing before asking again after a
    malformed answer, else ``max(backoff, min(Retry-After, retry_after_max))``, and ``give_up`` with the
    :class:`SummarizationError` naming the endpoint."""

    def __init__(self, settings: Any, endpoint: str) -> None:
        self.settings = settings
        self.endpoint = endpoint
        self.tally = _Tally()

    def stop(self, state: RetryCallState) -> bool:
        tally = self.tally
        return tally.malformed > 1 or tally.transient > self.settings.max_retries

    def wait(self, state: RetryCallState) -> float:
        if self.tally.last_malformed:
            return 0.0
        settings = self.settings
        delay = min(settings.retry_max_delay, settings.retry_initial_delay * 2 ** (self.tally.transient - 1))
        hint = retry_after_seconds(_failure(state))
        return delay if hint is None else max(delay, min(hint, settings.retry_after_max))

    def before_sleep(self, state: RetryCallState) -> None:
        error = _failure(state)
        if self.tally.last_malformed:
            logger.warning("malformed answer from %s (%s: %s); asking again", self.endpoint, type(error).__name__,
                           error)
            return
        sleep = state.next_action.sleep if state.next_action is not None else 0.0
        logger.warning("LLM request to %s failed (%s: %s); retry %d/%d in %.2fs", self.endpoint,
                       type(error).__name__, error, self.tally.transient, self.settings.max_retries, sleep)

    def give_up(self, state: RetryCallState) -> Any:
        raise self.error(_failure(state), state.attempt_number)

    def error(self, error: BaseException, attempts: int) -> SummarizationError:
        """The error that ends the request after ``attempts`` attempts, the last failing with ``error``."""
        where = f"LLM request to {self.endpoint} failed after {attempts} attempt(s)"
        if isinstance(error, TruncatedAnswer) and self.tally.malformed > 1:
            message = (f"{where}: the answer stopped at the token limit twice (raise the LLM's max_tokens, or lower "
                       "max_chars)")
        elif self.tally.malformed > 1 and is_malformed_response(error):
            message = f"{where} (malformed answer twice): {type(error).__name__}: {error}"
        else:
            what = "transient error, retries exhausted" if is_transient_error(error) else "non-transient error"
            message = f"{where} ({what}): {type(error).__name__}: {error}"
        failure = SummarizationError(message, attempts=attempts)
        failure.__cause__ = error
        return failure


async def _sleep(seconds: float) -> None:
    await asyncio.sleep(seconds)  # looked up at each call (tests replace asyncio.sleep)


async def request_with_retries(send: Callable[[], Awaitable[tuple[str, str | None]]], *, settings: Any,
                               circuit: CircuitBreaker, endpoint: str, run: RequestRun,
                               limiter: asyncio.Semaphore | None) -> str:
    """Run ``send`` (one LLM request returning ``(text, finish_reason)``) until it gives a usable answer.

    ``settings`` is the ``LLMSummarizer`` (read: ``max_retries``, ``retry_initial_delay``, ``retry_max_delay``,
    ``retry_after_max``, ``timeout``, ``max_consecutive_failures``).

    Each attempt holds ``limiter``, checks that no sibling request failed and that the circuit is closed, and is
    bounded by ``settings.timeout``. Retries (tenacity, with the policies of :class:`_Policies`): transient errors
    up to ``max_retries`` times after ``max(backoff, min(Retry-After, retry_after_max))`` seconds (backoff:
    ``retry_initial_delay`` doubled per retry, at most ``retry_max_delay``); a malformed or truncated answer once,
    at once (an answer truncated again is never used: :class:`SummarizationError`).

    Raises:
        LLMUnavailableError: the circuit is open, or this attempt's connection failure opened it.
        SummarizationError: a non-transient error, retries exhausted, a malformed answer twice, or an answer cut at
            the token limit twice (naming ``endpoint``; ``__cause__`` is the last error).
    """
    policies = _Policies(settings, endpoint)
    retrying = AsyncRetrying(
        retry=retry_if_exception(_retryable), stop=policies.stop, wait=policies.wait, after=policies.tally.after,
        before_sleep=policies.before_sleep, retry_error_callback=policies.give_up, sleep=_sleep, reraise=True,
    )
    attempts = 0
    try:
        async for attempt in retrying:
            with attempt:
                attempts = attempt.retry_state.attempt_number
                return await _attempt(send, settings, circuit, endpoint, run, limiter, attempts)
    except SummarizationError:  # ours: an open circuit, a failed sibling, or give_up's
        run.failed = True  # set before any sibling runs: none sends another request
        raise
    except Exception as error:  # not worth another attempt
        run.failed = True
        raise policies.error(error, attempts) from error
    raise AssertionError("tenacity ended without an outcome")  # pragma: no cover


async def _attempt(send: Callable[[], Awaitable[tuple[str, str | None]]], settings: Any, circuit: CircuitBreaker,
                   endpoint: str, run: RequestRun, limiter: asyncio.Semaphore | None, attempts: int) -> str:
    """One attempt of :func:`request_with_retries`: the answer, or the error its policies decide on (after telling
    the circuit breaker about it)."""
    async with limiter if limiter is not None else contextlib.nullcontext():
        if run.failed:
            raise _SiblingFailed("another request of this document failed")
        circuit.check(endpoint)
        run.calls += 1
        try:
            coro = send()
            if settings.timeout is not None:
                text, reason = await asyncio.wait_for(coro, timeout=settings.timeout)
            else:
                text, reason = await coro
            circuit.reached()
            if reason in _TRUNCATED_REASONS:  # never kept cut: asked again once, then the document fails
                raise TruncatedAnswer(f"the answer stopped at the token limit (finish_reason={reason!r})")
            return text
        except asyncio.CancelledError:
            raise
        except Exception as error:
            _feed_circuit(error, attempts, settings, circuit, endpoint)  # may raise LLMUnavailableError
            raise


def _feed_circuit(exc: BaseException, attempts: int, settings: Any, circuit: CircuitBreaker,
                  endpoint: str) -> None:
    """Tell the circuit breaker about one failed attempt; raises :class:`LLMUnavailableError` when it opens."""
    if is_connection_error(exc):
        opened = circuit.failed(exc, settings.max_consecutive_failures, endpoint, attempts)
        if opened is not None:
            raise opened
    elif not is_timeout(exc):  # the server answered (a status, a malformed body): the run of failures ends
        circuit.reached()


async def gather_or_cancel(aws: Iterable[Awaitable[T]], run: RequestRun) -> list[T]:
    """``asyncio.gather`` that fails fast: when one awaitable fails, ``run.failed`` is set, every other one is
    cancelled and awaited (so none sends a request after this returns), and the first real error is raised.
    Cancelling the caller cancels them all too. Results are in input order."""
    tasks = [asyncio.ensure_future(aw) for aw in aws]
    if not tasks:
        return []
    try:
        _, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    except BaseException:  # the caller was cancelled
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    if pending:
        run.failed = True
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
    errors: list[BaseException] = [e for t in tasks if t.done() and not t.cancelled()
                                   for e in (t.exception(),) if e is not None]
    if errors:
        run.failed = True
        real = [e for e in errors if not isinstance(e, _SiblingFailed)]
        raise (real or errors)[0]
    return [t.result() for t in tasks]
