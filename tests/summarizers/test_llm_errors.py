"""is_transient_error (summarizers/llm_errors.py): by type and HTTP status."""

from __future__ import annotations

import pytest

from llama_index_sac.summarizers import (
    is_transient_error,
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
