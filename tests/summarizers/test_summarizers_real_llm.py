"""Summaries from a REAL model (Qwen2.5-Coder-0.5B-Instruct GGUF via llama.cpp) and fault tests over loopback HTTP.

The real-model tests skip with a reason when the GGUF or llama-cpp-python is missing (``bash scripts/setup-llm.sh``
installs both; ``.ci/run`` does it). The 429/500/slow tests use a tiny local OpenAI-compatible stub server, so they
always run. Everything listens on 127.0.0.1 only.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.schema import Document

from llama_index_sac import (
    LLMSummarizer,
    RecursiveCharacterNodeParser,
    SummarizationError,
    SummaryAugmentationTransformation,
)
from llama_index_sac.summarizers import SummaryCache
from tests._nodes import located_nodes, source_id

MODEL_NAME = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
MODEL_DIR = Path(os.environ.get("SAC_MODEL_DIR", Path.home() / ".cache" / "llama-index-sac" / "models"))
GGUF = Path(os.environ.get("SAC_TEST_GGUF", MODEL_DIR / MODEL_NAME))
HAVE_LLAMA_CPP = importlib.util.find_spec("llama_cpp") is not None
requires_model = pytest.mark.skipif(
    not (GGUF.is_file() and HAVE_LLAMA_CPP),
    reason=f"local test LLM not installed (need {GGUF} and llama-cpp-python): run bash scripts/setup-llm.sh",
)

NDA = (
    "MUTUAL NON-DISCLOSURE AGREEMENT. This Agreement is made on 3 March 2021 between Kestrel Analytics Inc. "
    "and Marlow Biotech Ltd. Each party may disclose genomics data to the other to evaluate a research "
    "collaboration. The recipient keeps it confidential for three years. Delaware law governs."
)
DOCS = [
    NDA,
    "SUPPLY AGREEMENT between Acme Widgets Corp. and Birchwood Bakery LLC. Acme supplies ovens monthly; "
    "Birchwood pays within 30 days. Texas law governs.",
    "PRIVACY POLICY of Fiverr. We collect your name, email and payment data to run the marketplace and do not "
    "sell personal information.",
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_server() -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(GGUF), "--model_alias", "qwen", "--host",
         "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--verbose", "False"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{base}/models", timeout=2) as response:
                if response.status == 200:
                    return proc, base
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError("llama_cpp.server did not become ready within 90 s")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@pytest.fixture(scope="module")
def llama_server() -> Iterator[str]:
    proc, base = _start_server()
    try:
        yield base
    finally:
        _stop(proc)


def _summarizer(base: str, **kwargs: Any) -> LLMSummarizer:
    return LLMSummarizer.from_openai_like(api_base=base, model="qwen", max_tokens=60, request_timeout=60,
                                          **{"retry_initial_delay": 0.2, "retry_max_delay": 0.5, **kwargs})


@pytest.mark.slow
@pytest.mark.llm
@requires_model
def test_real_summary_through_openai_like_server(llama_server: str, tmp_path: Path) -> None:
    summarizer = _summarizer(llama_server, max_chars=150)
    doc = Document(text=NDA, id_="nda")
    transform = SummaryAugmentationTransformation(summarizer=summarizer, cache_dir=str(tmp_path))
    nodes = located_nodes(transform(RecursiveCharacterNodeParser(chunk_size=120)([doc]), documents=[doc]))
    summary = nodes[0].metadata["document_summary"]
    assert summary and len(summary) <= summarizer.max_output_chars()
    assert any(word in summary.lower() for word in ("kestrel", "marlow", "disclosure", "confidential")), summary
    assert {n.metadata["document_summary"] for n in nodes} == {summary}
    assert all(doc.text[n.start_char_idx: n.end_char_idx] == n.text for n in nodes)
    again = SummaryAugmentationTransformation(summarizer=summarizer, cache_dir=str(tmp_path))
    again(RecursiveCharacterNodeParser(chunk_size=120)([doc]), documents=[doc])
    assert again.summarizer_calls == 0  # second run: zero LLM calls


@pytest.mark.slow
@pytest.mark.llm
@requires_model
def test_real_summary_in_process_llamacpp() -> None:
    pytest.importorskip("llama_index.llms.llama_cpp", reason="llama-index-llms-llama-cpp not installed")
    summarizer = LLMSummarizer.from_gguf(GGUF, n_ctx=2048, max_new_tokens=60, max_chars=150)
    result = summarizer.summarize(NDA)
    assert result.summary and result.strategy == "single" and result.llm_calls >= 1
    assert len(result.summary) <= summarizer.max_output_chars()
    assert summarizer.identity()["llm"]["model"] == MODEL_NAME


@pytest.mark.slow
@pytest.mark.llm
@requires_model
def test_server_killed_mid_run_keeps_completed_summaries(tmp_path: Path) -> None:
    proc, base = _start_server()
    cache = SummaryCache(tmp_path)
    docs = [Document(text=t, id_=f"d{i}") for i, t in enumerate(DOCS)]
    nodes = RecursiveCharacterNodeParser(chunk_size=200)(docs)

    def kill_after_first() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(cache) < 1:
            time.sleep(0.05)
        proc.kill()

    killer = threading.Thread(target=kill_after_first, daemon=True)
    killer.start()
    try:
        transform = SummaryAugmentationTransformation(summarizer=_summarizer(base, max_retries=2),
                                                      cache_dir=str(tmp_path), num_workers=1)
        with pytest.raises(SummarizationError) as info:
            transform(nodes, documents=docs)
        # a retry-exhausted request ("... after N attempt(s)") is wrapped per document; the circuit breaker's
        # LLMUnavailableError ("N consecutive attempts failed to connect") keeps its type and names the endpoint
        assert "attempt" in f"{info.value} {info.value.__cause__}"
        assert base in str(info.value) or base in str(info.value.__cause__)
    finally:
        killer.join(5)
        _stop(proc)
    done = len(cache)
    assert 1 <= done < len(docs)  # what completed before the kill is kept
    skip = SummaryAugmentationTransformation(summarizer=_summarizer(base, max_retries=1), cache_dir=str(tmp_path),
                                             on_error="skip")
    out = skip(RecursiveCharacterNodeParser(chunk_size=200)(docs), documents=docs)
    with_summary = {source_id(n) for n in out if "document_summary" in n.metadata}
    with_error = {source_id(n) for n in out if "summary_error" in n.metadata}
    assert len(with_summary) == done and len(with_error) == len(docs) - done  # reported, nothing lost
    assert with_summary.isdisjoint(with_error)


# -- a loopback OpenAI-compatible stub for HTTP faults -------------------------------------------------------------
class _Stub:
    def __init__(self, plan: list[Any]) -> None:
        self.plan = plan  # each item: int status, ("sleep", seconds), or "ok"
        self.requests = 0
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length", 0))
                self.rfile.read(length)
                stub.requests += 1
                step = stub.plan.pop(0) if stub.plan else "ok"
                if isinstance(step, tuple):
                    time.sleep(step[1])
                    step = "ok"
                if isinstance(step, int):
                    body = json.dumps({"error": {"message": f"status {step}"}}).encode()
                    self.send_response(step)
                else:
                    body = json.dumps({
                        "id": "x", "object": "chat.completion", "created": 0, "model": "stub",
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": "Stub summary of an NDA."}}],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    }).encode()
                    self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except OSError:
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stub() -> Iterator[Any]:
    made: list[_Stub] = []

    def make(plan: list[Any]) -> _Stub:
        made.append(_Stub(plan))
        return made[-1]

    yield make
    for s in made:
        s.close()


def test_http_429_and_500_are_retried_then_succeed(stub: Any, tmp_path: Path) -> None:
    server = stub([429, 500, 503])
    summarizer = LLMSummarizer.from_openai_like(api_base=server.base, model="stub", max_retries=3,
                                                retry_initial_delay=0.01, retry_max_delay=0.02)
    result = summarizer.summarize(NDA)
    assert result.summary == "Stub summary of an NDA." and result.llm_calls == 4 and server.requests == 4


def test_http_500_forever_is_reported_and_cache_keeps_the_rest(stub: Any, tmp_path: Path) -> None:
    server = stub(["ok", 500, 500, 500])  # first document fine, then the server keeps failing
    summarizer = LLMSummarizer.from_openai_like(api_base=server.base, model="stub", max_retries=2,
                                                retry_initial_delay=0.01, retry_max_delay=0.02)
    docs = [Document(text=t, id_=f"d{i}") for i, t in enumerate(DOCS[:2])]
    transform = SummaryAugmentationTransformation(summarizer=summarizer, cache_dir=str(tmp_path), num_workers=1,
                                                  on_error="skip")
    out = transform(RecursiveCharacterNodeParser(chunk_size=500)(docs), documents=docs)
    by_doc = {source_id(n): n.metadata for n in out}
    assert by_doc["d0"]["document_summary"] == "Stub summary of an NDA."
    assert "InternalServerError" in by_doc["d1"]["summary_error"] or "500" in by_doc["d1"]["summary_error"]
    assert server.requests == 1 + 3 and len(SummaryCache(tmp_path)) == 1


def test_slow_responses_past_the_timeout_are_retried_then_reported(stub: Any) -> None:
    server = stub([("sleep", 1.5), ("sleep", 1.5)])
    summarizer = LLMSummarizer.from_openai_like(api_base=server.base, model="stub", max_retries=1, timeout=0.3,
                                                retry_initial_delay=0.01, retry_max_delay=0.02)
    with pytest.raises(SummarizationError, match="TimeoutError") as info:
        summarizer.summarize(NDA)
    assert info.value.attempts == 2
    ok = stub([("sleep", 0.5)])
    assert LLMSummarizer.from_openai_like(api_base=ok.base, model="stub", max_retries=0, timeout=5).summarize(
        NDA).summary == "Stub summary of an NDA."
