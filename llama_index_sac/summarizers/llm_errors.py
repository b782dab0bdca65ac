"""What an error of an LLM request is: transient, a connection failure, a malformed answer; and the server's
``Retry-After``. Used by the retry policies of :mod:`~llama_index_sac.summarizers.retry`.

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
its ``response.headers`` (OpenAI ``APIStatusError``, httpx, aiohttp).
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
from collections.abc import Iterator, Mapping
from email.utils import parsedate_to_datetime
from typing import Any

__all__ = ["TruncatedAnswer", "is_connection_error", "is_malformed_response", "is_timeout", "is_transient_error",
           "parse_retry_after", "retry_after_seconds"]

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


_DELAY_SECONDS = re.compile(r"\d{1,10}(?:\.\d{1,6})?")


class TruncatedAnswer(Exception):
    """An answer the LLM stopped at its token limit (``finish_reason="length"``)."""


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
        if isinstance(err, (json.JSONDecodeError, TruncatedAnswer)):
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


def is_timeout(exc: BaseException) -> bool:
    """True for a timeout anywhere in the chain: ``TimeoutError``, httpx ``TimeoutException``, OpenAI
    ``APITimeoutError`` (a timeout is neither a connection failure nor an answer)."""
    return any(isinstance(err, (TimeoutError, asyncio.TimeoutError, *_httpx("TimeoutException")))
               or "APITimeoutError" in _names(err) for err in _chain(exc))
