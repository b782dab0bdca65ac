"""Fixtures shared by the ingest tool's tests."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture
def alarm() -> Iterator[None]:
    """Fail instead of hanging: SIGALRM after 20 s."""
    def fail(*_: Any) -> None:
        raise AssertionError("blocked for 20 s")

    previous = signal.signal(signal.SIGALRM, fail)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)
