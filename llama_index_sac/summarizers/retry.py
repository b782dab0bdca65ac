"""The polite LLM client behind :class:`~llama_index_sac.summarizers.llm.LLMSummarizer`: error classification,
``Retry-After``, a circuit breaker, sibling cancellation and the per-request retry loop.

Errors are classified by TYPE and HTTP STATUS, never by message text. Each exception is read together with its
``__cause__`` / ``__context__`` chain (as Python prints it), because clients wrap transport errors (OpenAI's
``APIConnectionError`` wraps ``httpx.ConnectError`` which wraps ``ConnectionRefusedError``):

* **HTTP status** (``status_code``/``status`` on the error or on its ``response``): 408, 425, 429 and 5xx are
  transient, any other status is not. A status means the server answered: never a connection failure.
* **Connection failure** (:func:`is_connection_error`): ``ConnectionError`` (refused, reset, aborted, broken pipe),
  httpx ``ConnectError``/``ConnectTimeout``/``ReadError``/``WriteError``/``RemoteProtocolError`` (the server closed
  the connection without an answer), aiohttp's connection errors. Transient, and counted by the circuit breaker.
* **Timeout**: ``TimeoutError`` (also the summarizer's own per-request ``timeout``), httpx ``TimeoutException``.
  Transient; a read timeout is not a connection failure (the server is there, only slow).
* **Malformed answer** (:func:`is_malformed_response`): ``json.JSONDecodeError``, the client's response-validation
  error (OpenAI ``APIResponseValidationError``, pydantic ``ValidationError``), or an answer cut off by the token
  limit (``finish_reason="length"``). Retried once per request, whatever ``max_retries`` says.

``Retry-After`` (RFC 9110, section 10.2.3: delay-seconds or an HTTP-date) is read from the error's ``headers`` or
its ``response.headers`` (OpenAI ``APIStatusError``, httpx, aiohttp). The wait before a retry is
``max(backoff, min(retry_after, retry_after_max))``.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import re
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

from llama_index.core.llms import LLM
from llama_index.core.prompts import BasePromptTemplate

from llama_index_sac.summarizers.base import SummarizationError

__all__ = [
    "CircuitBreaker", "LLMUnavailableError", "RequestRun", "gather_or_cancel", "is_connection_error",
    "is_malformed_response", "is_transient_error", "parse_retry_after", "request_with_retries",
    "retry_after_seconds", "send_once",
]

logger = logging.getLogger("llama_index_sac.summarizers.llm")
T = TypeVar("T")

#: Class names (anywhere in the MRO) of transient errors of clients this module does not import (OpenAI, aiohttp,
#: Google, Anthropic...). A type test without the import, not a message test.
_TRANSIENT_NAMES = frozenset({
    "APITimeoutError", "APIConnectionError", "RateLimitError", "InternalServerError", "ServiceUnavailableError",
    "TimeoutException", "TransportError", "NetworkError", "ConnectError", "ReadError", "ReadTimeout",
    "WriteTimeout", "PoolTimeout", "RemoteProtocolError", "ServerDisconnectedError", "ClientConnectionError",
    "ClientOSError", "ConnectionClosedError",
})
_CONNECTION_NAMES = frozenset({"ClientConnectorError", "ServerDisconnectedError", "ClientOSError",
                               "ConnectionTimeoutError", "ConnectionClosedError"})  # aiohttp, websockets


def _httpx(*names: str) -> tuple[type[BaseException], ...]:
    """The httpx exception classes ``names`` when httpx is imported; none when it is not (then no error can be one of
    them), so importing this module does not import httpx."""
    httpx = sys.modules.get("httpx")
    return () if httpx is None else tuple(getattr(httpx, name) for name in names)


_TRUNCATED_REASONS = frozenset({"length", "max_tokens", "MAX_TOKENS"})  # OpenAI, Anthropic, Gemini
_DELAY_SECONDS = re.compile(r"\d{1,10}(?:\.\d{1,6})?")


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


class _TruncatedAnswer(Exception):
    """An answer the LLM stopped at its token limit (``finish_reason="length"``)."""


class _SiblingFailed(SummarizationError):
    """Raised instead of sending a request once another request of the same document has failed (never seen by
    callers: :func:`gather_or_cancel` raises the sibling's own error)."""


# -- classification ------------------------------------------------------------------------------------------
def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and the exceptions it was raised from (``__cause__``, else an unsuppressed ``__context__``)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < 16:
        seen.add(id(current))
        yield current
        nxt = current.__cause__
        if nxt is None and not current.__suppress_context__:
            nxt = current.__context__
        current = nxt


def _status(exc: BaseException) -> int | None:
    for holder in (exc, getattr(exc, "response", None)):
        for attr in ("status_code", "status"):
            value = getattr(holder, attr, None)
            if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
                return value
    return None


def _names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def is_transient_error(exc: BaseException) -> bool:
    """True for errors worth retrying: timeouts, connection errors, rate limits, HTTP 408/425/429 and 5xx.

    Decided by type and status only (see the module docstring); the first exception of the chain that has an HTTP
    status or a known type decides. Malformed answers are not transient (:func:`is_malformed_response`)."""
    for err in _chain(exc):
        status = _status(err)
        if status is not None:
            return status in (408, 425, 429) or 500 <= status <= 599
        if isinstance(err, (TimeoutError, asyncio.TimeoutError, ConnectionError,
                            *_httpx("TimeoutException", "NetworkError", "RemoteProtocolError"))):
            return True
        if _names(err) & _TRANSIENT_NAMES:
            return True
    return False


def is_connection_error(exc: BaseException) -> bool:
    """True when the request did not reach a live server: connection refused/reset/aborted, a connect timeout,
    the server closing the connection without an answer. False for HTTP statuses and read timeouts."""
    for err in _chain(exc):
        if _status(err) is not None:
            return False
        if isinstance(err, (ConnectionError, *_httpx("ConnectError", "ConnectTimeout", "ReadError", "WriteError",
                                                     "RemoteProtocolError"))):
            return True
        if _names(err) & _CONNECTION_NAMES:
            return True
    return False


def is_malformed_response(exc: BaseException) -> bool:
    """True for an answer that arrived but cannot be used: invalid JSON, a response that fails the client's
    validation, or an answer cut off at the token limit."""
    pydantic_core = sys.modules.get("pydantic_core")
    validation = getattr(pydantic_core, "ValidationError", None)
    for err in _chain(exc):
        if isinstance(err, (json.JSONDecodeError, _TruncatedAnswer)):
            return True
        if validation is not None and isinstance(err, validation):
            return True
        if "APIResponseValidationError" in _names(err):
            return True
    return False


def _header(headers: Any, name: str) -> str | None:
    getter = getattr(headers, "get", None)
    if not callable(getter):
        return None
    for key in (name, name.title(), name.upper()):
        value = getter(key)
        if value is not None:
            return str(value)
    if isinstance(headers, Mapping):  # a plain dict with another spelling
        for key, value in headers.items():
            if isinstance(key, str) and key.lower() == name:
                return str(value)
    return None


def parse_retry_after(value: str, now: float) -> float | None:
    """Seconds to wait for a ``Retry-After`` value: delay-seconds (``"120"``; a decimal is accepted) or an
    HTTP-date (IMF-fixdate, RFC 850 or asctime; a date in the past gives 0). ``now`` is ``time.time()``. None for
    a value that is neither (it is then ignored)."""
    value = value.strip()
    if len(value) > 64:  # no valid value is longer; bounds the work on hostile input
        return None
    if _DELAY_SECONDS.fullmatch(value):
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # asctime has no zone: it is GMT
        from datetime import timezone

        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, when.timestamp() - now)


def retry_after_seconds(exc: BaseException, now: float | None = None) -> float | None:
    """The server's ``Retry-After`` for ``exc`` in seconds (``retry-after-ms`` is read too), from the headers of
    the error or of its ``response``, along the exception chain. None when absent or unparsable."""
    now = time.time() if now is None else now
    for err in _chain(exc):
        for holder in (err, getattr(err, "response", None)):
            headers = getattr(holder, "headers", None)
            if headers is None:
                continue
            millis = _header(headers, "retry-after-ms")
            if millis is not None and _DELAY_SECONDS.fullmatch(millis.strip()):
                return float(millis) / 1000.0
            value = _header(headers, "retry-after")
            if value is not None:
                return parse_retry_after(value, now)
    return None


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


async def request_with_retries(send: Callable[[], Awaitable[tuple[str, str | None]]], *, settings: Any,
                               circuit: CircuitBreaker, endpoint: str, run: RequestRun,
                               limiter: asyncio.Semaphore | None) -> str:
    """Run ``send`` (one LLM request returning ``(text, finish_reason)``) until it gives a usable answer.

    ``settings`` is the ``LLMSummarizer`` (read: ``max_retries``, ``retry_initial_delay``, ``retry_max_delay``,
    ``retry_after_max``, ``timeout``, ``max_consecutive_failures``).

    Each attempt holds ``limiter``, checks that no sibling request failed and that the circuit is closed, and is
    bounded by ``settings.timeout``. Retries: transient errors up to ``max_retries`` times after
    ``max(backoff, min(Retry-After, retry_after_max))`` seconds (backoff: ``retry_initial_delay`` doubled per
    retry, at most ``retry_max_delay``); a malformed or truncated answer once, at once (an answer truncated again
    is never used: :class:`SummarizationError`).

    Raises:
        LLMUnavailableError: the circuit is open, or this attempt's connection failure opened it.
        SummarizationError: a non-transient error, retries exhausted, a malformed answer twice, or an answer cut at
            the token limit twice (naming ``endpoint``; ``__cause__`` is the last error).
    """
    attempts = transient = 0
    second_chance = True  # the one retry of a malformed/truncated answer
    while True:
        async with limiter if limiter is not None else contextlib.nullcontext():
            if run.failed:
                raise _SiblingFailed("another request of this document failed")
            circuit.check(endpoint)
            attempts += 1
            run.calls += 1
            try:
                coro = send()
                if settings.timeout is not None:
                    text, reason = await asyncio.wait_for(coro, timeout=settings.timeout)
                else:
                    text, reason = await coro
                circuit.reached()
                if reason in _TRUNCATED_REASONS:  # never kept cut: asked again once, then the document fails
                    raise _TruncatedAnswer(f"the answer stopped at the token limit (finish_reason={reason!r})")
                return text
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                error: Exception = exc
        try:
            _feed_circuit(error, attempts, settings, circuit, endpoint)
            if is_malformed_response(error):
                if not second_chance and isinstance(error, _TruncatedAnswer):
                    raise SummarizationError(
                        f"LLM request to {endpoint} failed after {attempts} attempt(s): the answer stopped at the "
                        "token limit twice (raise the LLM's max_tokens, or lower max_chars)",
                        attempts=attempts) from error
                if not second_chance:
                    raise SummarizationError(
                        f"LLM request to {endpoint} failed after {attempts} attempt(s) (malformed answer twice): "
                        f"{type(error).__name__}: {error}", attempts=attempts) from error
                second_chance = False
                logger.warning("malformed answer from %s (%s: %s); asking again", endpoint, type(error).__name__,
                               error)
                continue
            transient += 1
            if not is_transient_error(error) or transient > settings.max_retries:
                what = "transient error, retries exhausted" if is_transient_error(error) else "non-transient error"
                raise SummarizationError(
                    f"LLM request to {endpoint} failed after {attempts} attempt(s) ({what}): "
                    f"{type(error).__name__}: {error}", attempts=attempts) from error
        except SummarizationError:
            run.failed = True  # set before any sibling runs: none sends another request
            raise
        delay = min(settings.retry_max_delay, settings.retry_initial_delay * 2 ** (transient - 1))
        hint = retry_after_seconds(error)
        if hint is not None:
            delay = max(delay, min(hint, settings.retry_after_max))
        logger.warning("LLM request to %s failed (%s: %s); retry %d/%d in %.2fs", endpoint, type(error).__name__,
                       error, transient, settings.max_retries, delay)
        await asyncio.sleep(delay)


def _is_timeout(exc: BaseException) -> bool:
    return any(isinstance(err, (TimeoutError, asyncio.TimeoutError, *_httpx("TimeoutException")))
               or "APITimeoutError" in _names(err) for err in _chain(exc))


def _feed_circuit(exc: BaseException, attempts: int, settings: Any, circuit: CircuitBreaker,
                  endpoint: str) -> None:
    """Tell the circuit breaker about one failed attempt; raises :class:`LLMUnavailableError` when it opens."""
    if is_connection_error(exc):
        opened = circuit.failed(exc, settings.max_consecutive_failures, endpoint, attempts)
        if opened is not None:
            raise opened
    elif not _is_timeout(exc):  # the server answered (a status, a malformed body): the run of failures ends
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
