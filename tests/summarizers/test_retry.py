"""The polite LLM client (summarizers/retry.py) against a REAL local OpenAI-compatible stand-in server on
127.0.0.1.

``Retry-After`` (seconds, HTTP-date, capped), the circuit breaker on a killed / refused server, cancellation of
a failed document's sibling window requests, the one retry of a malformed or truncated answer, and the endpoint in
every error. Timing assertions are on the times the SERVER recorded (a retry came at least N seconds after the
429), never on how fast the client was. Retry delays are set small, so the whole file takes a few seconds.
"""

from __future__ import annotations

import asyncio
import math
import pickle
import time
from typing import Any

import openai
import pytest
from llama_index.core.schema import Document
from llama_index.llms.openai_like import OpenAILike

from llama_index_sac import (
    LLMSummarizer,
    LLMUnavailableError,
    RecursiveCharacterNodeParser,
    SummarizationError,
    SummaryAugmentationTransformation,
)
from tests._openai_standin import OpenAIStandIn, Reply, answer, drop, http_date, malformed, status
from tests._summary_fakes import RecordingLLM
from tests.summarizers.test_llm_errors import _status_error

NDA = (
    "MUTUAL NON-DISCLOSURE AGREEMENT between Kestrel Analytics Inc. and Marlow Biotech Ltd. Each party may "
    "disclose genomics data to evaluate a research collaboration; the recipient keeps it confidential for three "
    "years. Delaware law governs."
)
OK = "Stand-in summary of the document."
FAST: dict[str, Any] = {"retry_initial_delay": 0.01, "retry_max_delay": 0.02}


def _summarizer(server: OpenAIStandIn, **kwargs: Any) -> LLMSummarizer:
    return LLMSummarizer.from_openai_like(api_base=server.base, model="stand-in", request_timeout=10,
                                          **{**FAST, **kwargs})


# -- Retry-After ------------------------------------------------------------------------------------------------
def test_retry_after_seconds_is_honoured() -> None:
    with OpenAIStandIn([status(429, retry_after="1"), answer()]) as server:
        result = _summarizer(server, max_retries=3).summarize(NDA)
    assert result.summary == OK and result.llm_calls == 2
    first, second = server.times
    assert second - first >= 1.0  # backoff alone would have retried after 0.01 s


def test_retry_after_http_date_is_honoured() -> None:
    not_before = math.ceil(time.time()) + 1  # 1 to 2 s ahead, whole seconds as HTTP-dates are
    with OpenAIStandIn([status(503, retry_after=http_date(not_before)), answer()]) as server:
        result = _summarizer(server, max_retries=3).summarize(NDA)
    assert result.summary == OK and len(server.received) == 2
    assert server.received[1].wall >= not_before - 0.02  # 20 ms: wall vs event-loop clock granularity


def test_retry_after_is_capped_by_retry_after_max() -> None:
    with OpenAIStandIn([status(429, retry_after="30"), answer()]) as server:
        result = _summarizer(server, max_retries=3, retry_after_max=0.3).summarize(NDA)
    assert result.summary == OK
    gap = server.times[1] - server.times[0]
    assert 0.3 <= gap < 10  # waited the cap, not the 30 s asked for


def test_wait_is_max_of_backoff_and_capped_retry_after(monkeypatch: pytest.MonkeyPatch) -> None:
    sleeps: list[float] = []
    real_sleep = asyncio.sleep

    async def fake_sleep(delay: float) -> None:
        sleeps.append(delay)
        await real_sleep(0)

    monkeypatch.setattr("llama_index_sac.summarizers.retry.asyncio.sleep", fake_sleep)
    script = [_status_error(429, {"Retry-After": "7"}), _status_error(503, {"retry-after": "100"}),
              _status_error(429, {"Retry-After": "0"}), _status_error(503, {"Retry-After": "soon"}), "An NDA."]
    summarizer = LLMSummarizer(llm=RecordingLLM(script=script), max_retries=4, retry_initial_delay=2.0,
                               retry_max_delay=30.0, retry_after_max=50.0)
    assert summarizer.summarize(NDA).summary == "An NDA."
    # backoff 2, 4, 8, 16; Retry-After 7, 100 -> 50 (cap), 0, unparsable (ignored)
    assert sleeps == [7.0, 50.0, 8.0, 16.0]


# -- malformed and truncated answers ----------------------------------------------------------------------------
def test_malformed_answer_is_retried_once_then_succeeds() -> None:
    with OpenAIStandIn([malformed(), answer("Fine summary.")]) as server:
        result = _summarizer(server, max_retries=0).summarize(NDA)  # the one retry does not need max_retries
    assert result.summary == "Fine summary." and result.llm_calls == 2 and len(server.received) == 2


def test_malformed_answer_twice_raises_naming_the_endpoint() -> None:
    with OpenAIStandIn([malformed(), malformed(), answer()]) as server:
        with pytest.raises(SummarizationError, match="malformed answer twice") as info:
            _summarizer(server, max_retries=5).summarize(NDA)
    assert server.base in str(info.value) and info.value.attempts == 2 and len(server.received) == 2


def test_truncated_answer_is_asked_again_once_on_both_routes() -> None:
    with OpenAIStandIn([answer("Cut off in the mid", finish_reason="length"), answer("Complete summary.")]) as chat:
        assert _summarizer(chat).summarize(NDA).summary == "Complete summary."
    assert [r.path for r in chat.received] == ["/v1/chat/completions"] * 2
    script = [answer("Cut once", finish_reason="length"), answer("Cut twice", finish_reason="length")]
    with OpenAIStandIn(script) as completions:
        llm = OpenAILike(model="stand-in", api_base=completions.base, api_key="x", is_chat_model=False,
                         max_retries=0, timeout=10)
        with pytest.raises(SummarizationError, match="the answer stopped at the token limit twice") as info:
            LLMSummarizer(llm=llm, **FAST).summarize(NDA)
    assert info.value.attempts == 2 and completions.base in str(info.value)  # truncated again: never kept cut
    assert [r.path for r in completions.received] == ["/v1/completions"] * 2


# -- the endpoint in errors -------------------------------------------------------------------------------------
def test_errors_name_the_endpoint() -> None:
    with OpenAIStandIn([status(400)]) as server:
        summarizer = _summarizer(server, max_retries=3)
        with pytest.raises(SummarizationError, match="non-transient") as info:
            summarizer.summarize(NDA)
    assert summarizer.endpoint == server.base and f"LLM request to {server.base} failed" in str(info.value)
    assert len(server.received) == 1
    secret = OpenAILike(model="m", api_base="https://user:s3cret@llm.example.com:8443/v1?key=k", api_key="x")
    assert LLMSummarizer(llm=secret).endpoint == "https://llm.example.com:8443/v1"
    assert LLMSummarizer(llm=RecordingLLM()).endpoint == "RecordingLLM (model recording-fake)"


# -- the circuit breaker ----------------------------------------------------------------------------------------
def test_killed_server_opens_the_circuit_after_n_attempts_then_no_more_connections() -> None:
    with OpenAIStandIn() as server:
        summarizer = _summarizer(server, max_retries=10, max_consecutive_failures=3)
        assert summarizer.summarize(NDA).summary == OK
        server.kill()
        with pytest.raises(LLMUnavailableError) as info:
            summarizer.summarize(NDA + " Second.")
        assert server.connections_after_kill == 3  # not the 11 attempts max_retries allows
        error = info.value
        assert error.endpoint == server.base and server.base in str(error) and "3 consecutive" in str(error)
        assert error.attempts == 3 and isinstance(error.__cause__, openai.APIConnectionError)
        assert summarizer.circuit_open
        server.revive()  # the server is back, but the circuit stays open until reset_circuit()
        with pytest.raises(LLMUnavailableError, match="reset_circuit") as again:
            summarizer.summarize(NDA + " Third.")
        assert again.value.attempts == 0 and str(again.value) == str(error)
        assert len(server.received) == 1 and server.connections_after_kill == 3  # nothing sent
        summarizer.reset_circuit()
        assert summarizer.summarize(NDA + " Fourth.").summary == OK and len(server.received) == 2


def test_refused_port_opens_the_circuit() -> None:
    server = OpenAIStandIn()
    server.close()  # the port now refuses connections
    summarizer = _summarizer(server, max_retries=10, max_consecutive_failures=2)
    with pytest.raises(LLMUnavailableError) as info:
        summarizer.summarize(NDA)
    assert info.value.attempts == 2 and server.base in str(info.value)
    with pytest.raises(LLMUnavailableError) as again:
        summarizer.summarize(NDA)
    assert again.value.attempts == 0  # failed fast, without a request


def test_connection_failures_are_counted_consecutively_and_http_errors_are_not() -> None:
    script = [drop(), drop(), answer(), drop(), drop(), answer()]
    with OpenAIStandIn(script) as server:
        summarizer = _summarizer(server, max_retries=5, max_consecutive_failures=3)
        assert summarizer.summarize(NDA).summary == OK and summarizer.summarize(NDA + " B").summary == OK
    assert len(server.received) == 6 and not summarizer.circuit_open  # a success restarts the count
    with OpenAIStandIn(default=status(500)) as failing:
        summarizer = _summarizer(failing, max_retries=4, max_consecutive_failures=2)
        with pytest.raises(SummarizationError, match="retries exhausted") as info:
            summarizer.summarize(NDA)
    assert not isinstance(info.value, LLMUnavailableError) and len(failing.received) == 5


def test_circuit_state_is_not_identity_nor_serialized() -> None:
    with OpenAIStandIn() as server:
        server.kill()
        summarizer = _summarizer(server, max_retries=3, max_consecutive_failures=1)
        before = summarizer.identity_hash()
        with pytest.raises(LLMUnavailableError):
            summarizer.summarize(NDA)
    assert summarizer.circuit_open and summarizer.identity_hash() == before
    assert "circuit" not in str(summarizer.to_dict())
    fake = LLMSummarizer(llm=RecordingLLM(script=[ConnectionResetError("reset")]), max_consecutive_failures=1, **FAST)
    with pytest.raises(LLMUnavailableError, match="RecordingLLM"):
        fake.summarize(NDA)
    copy = pickle.loads(pickle.dumps(fake))
    assert fake.circuit_open and not copy.circuit_open


def test_pipeline_stops_every_remaining_document_with_one_error() -> None:
    docs = [Document(text=f"{NDA} Document number {i}.", id_=f"d{i}") for i in range(5)]
    nodes = RecursiveCharacterNodeParser(chunk_size=200)(docs)

    servers: list[OpenAIStandIn] = []

    def killer(prompt: str, index: int) -> Reply | None:
        if index == 0:
            servers[0].kill()  # dies right after answering the first document
        return None

    with OpenAIStandIn(responder=killer) as server:
        servers.append(server)
        summarizer = _summarizer(server, max_retries=10, max_consecutive_failures=3)
        transform = SummaryAugmentationTransformation(summarizer=summarizer, num_workers=1, on_error="skip")
        out = transform(nodes, documents=docs)
    errors = {n.source_node.node_id: n.metadata.get("summary_error") for n in out if n.source_node}
    summarized = {d for d, e in errors.items() if e is None}
    assert len(summarized) == 1 and len(server.received) == 1
    assert server.connections_after_kill == 3  # 3 attempts in all, not 10 retries for each of 4 documents
    assert all("LLMUnavailableError" in e and server.base in e for e in errors.values() if e is not None)


# -- sibling cancellation ---------------------------------------------------------------------------------------
def _long_document(windows: int) -> str:
    return "\n\n".join(f"WINDOW-{i:02d} " + "The parties agree to keep the terms confidential. " * 3
                       for i in range(windows))


def _window(prompt: str) -> int:
    return int(prompt.split("WINDOW-", 1)[1][:2])


def test_failed_window_cancels_its_siblings() -> None:
    text = _long_document(12)

    def responder(prompt: str, index: int) -> Reply:
        return status(400) if "WINDOW-01" in prompt else answer(delay=0.3)

    with OpenAIStandIn(responder=responder) as server:
        summarizer = _summarizer(server, max_input_chars=200, max_retries=3)

        async def run() -> float:
            with pytest.raises(SummarizationError, match="non-transient"):
                await summarizer.asummarize(text, limiter=asyncio.Semaphore(2))
            returned = time.monotonic()
            # the event loop keeps running (as it does for the other documents of a pipeline run), longer than a
            # slow answer plus a retry: a request left running would reach the server now
            await asyncio.sleep(0.8)
            return returned

        returned = asyncio.run(run())
        received = list(server.received)
    assert len(text) > 12 * 150
    assert 1 in {_window(r.prompt) for r in received} and {_window(r.prompt) for r in received} <= {0, 1}
    # nothing arrived after the call returned (0.1 s for the stand-in's thread to stamp a request sent before the
    # cancel on a loaded machine; a request left running or retried would arrive after a 0.3 s answer)
    assert all(r.time <= returned + 0.1 for r in received)


def test_cancelling_the_caller_cancels_the_window_requests() -> None:
    text = _long_document(8)
    with OpenAIStandIn(default=answer(delay=0.3)) as server:
        summarizer = _summarizer(server, max_input_chars=200)

        async def run() -> None:
            task = asyncio.ensure_future(summarizer.asummarize(text, limiter=asyncio.Semaphore(2)))
            while not server.received:
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await asyncio.sleep(0.8)  # the loop runs on: a request left running would reach the server now

        asyncio.run(asyncio.wait_for(run(), timeout=10))
        received = list(server.received)
    # the two requests the limiter lets out may both reach the server (the second can be in flight when the task is
    # cancelled); a window request left running after the cancel would be a third, 0.3 s later, well within 0.8 s
    assert 1 <= len(received) <= 2
