"""Benchmark (issue 36): ``llama-sac serve`` under load, on loopback only, bounded.

A collection of ``--docs`` built-in contracts is ingested once (the default embedding model, offline), then a server
process is started over it (``serve`` with its defaults, port 0) from the code in ``--code`` (default: this
checkout; pass a checkout of an older version to compare) and driven in three phases:

1. ``sequential``: ``--requests`` questions, one client, one connection each: latency p50/p99.
2. ``concurrent``: ``--clients`` threads at once, each asking ``--per-client`` questions (a new connection each):
   every answer counted by status (200, 503, or ``failed``: a reset, a timeout, no answer), p50/p99 of the 200s.
3. ``connections``: ``--connections`` sockets opened at once, each sending one full request, then read until the
   server closes them (a deadline of ``--deadline`` s): answers counted by status.

After each phase: the server's resident memory (VmRSS), its peak (VmHWM) and its thread count, from
``/proc/PID/status``, and the lines it wrote on stderr (tracebacks counted). Everything runs on 127.0.0.1; every
socket has a timeout and every loop a fixed size. Usage::

    python bench/bench_serve.py                                  # this checkout
    python bench/bench_serve.py --code /tmp/old-checkout          # the same load against another version
    python bench/bench_serve.py --json /tmp/bench_serve.json
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

_LAUNCHER = """
import sys
from llama_index_sac.apps.ingest.query import Searcher
from llama_index_sac.apps.ingest.files import StoreSpec
from llama_index_sac.apps.ingest.serve import serve
with Searcher(StoreSpec.parse(sys.argv[1]), show_progress=False) as searcher:
    serve(searcher, "127.0.0.1", 0, 5, ready=lambda a: print(f"http://{a[0]}:{a[1]}", flush=True))
"""
QUESTIONS = ["Which law governs the agreement?", "What are the payment terms?", "How can the agreement be "
             "terminated?", "Who owns the intellectual property?", "What is the limitation of liability?"]


def request_bytes(port: int, question: str) -> bytes:
    body = json.dumps({"query": question, "k": 5}).encode()
    return (f"POST /query HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body


def ask(port: int, question: str, timeout: float = 120.0) -> tuple[str, float]:
    """One request on a new connection: its status (or ``failed``) and seconds."""
    started = time.perf_counter()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(request_bytes(port, question))
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
    except OSError:
        return "failed", time.perf_counter() - started
    status = answer.split(b" ", 2)[1].decode() if answer.startswith(b"HTTP/1.") else "failed"
    return status, time.perf_counter() - started


def percentiles(seconds: list[float]) -> dict[str, float | None]:
    if not seconds:
        return {"p50_ms": None, "p99_ms": None}
    ordered = sorted(seconds)
    return {"p50_ms": round(statistics.median(ordered) * 1000, 1),
            "p99_ms": round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1000, 1)}


def server_status(pid: int) -> dict[str, Any]:
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return {"rss_mib": round(int(fields["VmRSS"].split()[0]) / 1024, 1),
            "peak_rss_mib": round(int(fields["VmHWM"].split()[0]) / 1024, 1), "threads": int(fields["Threads"])}


def counted(statuses: list[str]) -> dict[str, int]:
    return {status: statuses.count(status) for status in sorted(set(statuses))}


def sequential(port: int, n: int) -> dict[str, Any]:
    results = [ask(port, QUESTIONS[i % len(QUESTIONS)]) for i in range(n)]
    return {"answers": counted([s for s, _ in results]), **percentiles([t for s, t in results if s == "200"])}


def concurrent(port: int, clients: int, per_client: int) -> dict[str, Any]:
    results: list[tuple[str, float]] = []
    lock = threading.Lock()
    start = threading.Barrier(clients)

    def client(number: int) -> None:
        start.wait()
        for i in range(per_client):
            got = ask(port, QUESTIONS[(number + i) % len(QUESTIONS)])
            with lock:
                results.append(got)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(600)
    return {"answers": counted([s for s, _ in results]), **percentiles([t for s, t in results if s == "200"]),
            "seconds": round(time.perf_counter() - started, 1)}


def connections(port: int, n: int, deadline: float) -> dict[str, Any]:
    """``n`` sockets at once, each one request, read until closed: the answers by status."""
    selector = selectors.DefaultSelector()
    answers: dict[socket.socket, bytes] = {}
    statuses: list[str] = []
    started = time.perf_counter()
    for i in range(n):
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            sock.sendall(request_bytes(port, QUESTIONS[i % len(QUESTIONS)]))
        except OSError:
            statuses.append("failed")
            continue
        sock.setblocking(False)
        answers[sock] = b""
        selector.register(sock, selectors.EVENT_READ)
    end = time.monotonic() + deadline
    while answers and time.monotonic() < end:
        for key, _ in selector.select(timeout=1.0):
            conn = key.fileobj
            assert isinstance(conn, socket.socket)
            try:
                chunk = conn.recv(65536)
            except OSError:
                chunk = b""
                answers[conn] = answers[conn] or b"reset"
            if chunk:
                answers[conn] += chunk
                continue
            got = answers.pop(conn)
            statuses.append(got.split(b" ", 2)[1].decode() if got.startswith(b"HTTP/1.") else "failed")
            selector.unregister(conn)
            conn.close()
    for sock in answers:  # no answer by the deadline
        statuses.append("unanswered")
        sock.close()
    return {"answers": counted(statuses), "seconds": round(time.perf_counter() - started, 1)}


def build_store(folder: Path, docs: int) -> str:
    from llama_index_sac.apps.benchmark.datasets.synthetic import synthetic_contracts
    from llama_index_sac.apps.ingest.run import IngestSettings, ingest

    (folder / "docs").mkdir(parents=True)
    for doc_id, text in synthetic_contracts(docs).documents.items():
        (folder / "docs" / Path(doc_id).name).write_text(text, encoding="utf-8")
    spec = f"chroma:{folder / 'store'}"
    ingest([folder / "docs"], spec, IngestSettings(show_progress=False))
    return spec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--code", type=Path, default=REPO, help="checkout whose llama_index_sac the server runs")
    parser.add_argument("--docs", type=int, default=8, help="built-in contracts ingested")
    parser.add_argument("--requests", type=int, default=200, help="sequential questions")
    parser.add_argument("--clients", type=int, default=200, help="concurrent clients")
    parser.add_argument("--per-client", type=int, default=3, help="questions per concurrent client")
    parser.add_argument("--connections", type=int, default=1000, help="connections opened at once")
    parser.add_argument("--deadline", type=float, default=120.0, help="seconds to wait for their answers")
    parser.add_argument("--json", type=Path, help="write the results here too")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        spec = build_store(Path(tmp), args.docs)
        err = open(Path(tmp) / "stderr.txt", "w+")  # noqa: SIM115 - closed below
        env = {**os.environ, "PYTHONPATH": str(args.code.resolve())}
        server = subprocess.Popen([sys.executable, "-c", _LAUNCHER, spec], stdout=subprocess.PIPE, stderr=err,
                                  env=env, text=True, cwd=tmp)
        try:
            assert server.stdout is not None
            line = server.stdout.readline()
            port = int(line.strip().rsplit(":", 1)[1])
            for question in QUESTIONS:  # warm up: the first question builds the retriever's caches
                ask(port, question)
            out: dict[str, Any] = {"code": str(args.code), "docs": args.docs, "started": server_status(server.pid)}
            for name, run in [("sequential", lambda: sequential(port, args.requests)),
                              ("concurrent", lambda: concurrent(port, args.clients, args.per_client)),
                              ("connections", lambda: connections(port, args.connections, args.deadline))]:
                out[name] = {**run(), **server_status(server.pid)}
                print(name, json.dumps(out[name]), flush=True)
        finally:
            server.terminate()
            server.wait(60)
            err.seek(0)
            log = err.read()
            err.close()
        out["stderr"] = {"bytes": len(log.encode()), "tracebacks": log.count("Traceback"),
                         "lines": len(log.splitlines())}
        print("stderr", json.dumps(out["stderr"]))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
