"""What an LLM request's error is (summarizers/llm_errors.py): transient or not by type and HTTP status, a connection
failure, a malformed answer; and the server's Retry-After in its forms."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from llama_index_sac.summarizers import (
    is_transient_error,
)
from llama_index_sac.summarizers.llm_errors import (
    is_connection_error,
    is_malformed_response,
    parse_retry_after,
    retry_after_seconds,
)
from tests._summary_fakes import HTTPStatusError


@pytest.mark.parametrize(
    ("exc", "transient"),
    [(TimeoutError(), True), (ConnectionResetError(), True), (HTTPStatusError(429), True),
     (HTTPStatusError(503), True), (HTTPStatusError(404), False), (ValueError("bad"), False),
     (type("APIConnectionError", (Exception,), {})(), True), (type("RateLimitError", (Exception,), {})(), True)],
)
def test_is_transient_error(exc: BaseException, transient: bool) -> None:
    assert is_transient_error(exc) is transient


def _status_error(code: int, headers: dict[str, str]) -> openai.APIStatusError:
    """The error the OpenAI client raises for ``code`` (a real httpx response with ``headers``)."""
    response = httpx.Response(code, headers=headers, request=httpx.Request("POST", "http://127.0.0.1:9/v1/x"))
    cls = openai.RateLimitError if code == 429 else openai.InternalServerError
    return cls(f"status {code}", response=response, body=None)


# -- Retry-After ------------------------------------------------------------------------------------------------
def test_parse_retry_after_forms() -> None:
    now = 784111777.0  # Sun, 06 Nov 1994 08:49:37 GMT
    assert parse_retry_after("120", now) == 120.0
    assert parse_retry_after(" 1.5 ", now) == 1.5
    assert parse_retry_after("Sun, 06 Nov 1994 08:49:47 GMT", now) == 10.0  # IMF-fixdate
    assert parse_retry_after("Sunday, 06-Nov-94 08:49:40 GMT", now) == 3.0  # RFC 850
    assert parse_retry_after("Sun Nov  6 08:49:39 1994", now) == 2.0  # asctime (GMT)
    assert parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now) == 0.0  # in the past
    assert parse_retry_after("-5", now) is None and parse_retry_after("soon", now) is None
    assert parse_retry_after("9" * 1000, now) is None and parse_retry_after("1" * 100 + " GMT", now) is None
    error = _status_error(429, {"retry-after-ms": "250"})
    assert retry_after_seconds(error) == 0.25
    assert retry_after_seconds(_status_error(429, {})) is None


# -- classification by type and status --------------------------------------------------------------------------
def _wrapped(cause: BaseException, outer: BaseException) -> BaseException:
    try:
        try:
            raise cause
        except BaseException as exc:
            raise outer from exc
    except BaseException as final:
        return final


def test_errors_are_classified_by_type_and_status() -> None:
    request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    refused = _wrapped(_wrapped(ConnectionRefusedError(111, "refused"), httpx.ConnectError("x", request=request)),
                       openai.APIConnectionError(request=request))
    read_timeout = _wrapped(httpx.ReadTimeout("x", request=request), openai.APITimeoutError(request=request))
    connect_timeout = _wrapped(httpx.ConnectTimeout("x", request=request), openai.APITimeoutError(request=request))
    assert is_connection_error(refused) and is_transient_error(refused)
    assert is_connection_error(connect_timeout) and is_transient_error(connect_timeout)
    assert not is_connection_error(read_timeout) and is_transient_error(read_timeout)
    assert not is_connection_error(_status_error(503, {})) and is_transient_error(_status_error(503, {}))
    assert not is_connection_error(TimeoutError()) and is_transient_error(TimeoutError())
    bad_json = _wrapped(ValueError("inner"), json.JSONDecodeError("Expecting value", "{", 1))
    assert is_malformed_response(bad_json) and not is_transient_error(bad_json)
    # the message says "connection refused" but the type is a plain error: not retried
    assert not is_transient_error(RuntimeError("connection refused")) and not is_connection_error(
        RuntimeError("connection refused"))
