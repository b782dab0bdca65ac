"""``llama-sac serve`` as a local service (issue 36, hostile round 3): who may ask (Host, Origin, Content-Type, bearer
token), every error as JSON, read timeouts, bounded connections, the access log, and a collection changed under the
running server by another process (``rm``, ``ingest``). Every case: a real server process on 127.0.0.1, a real HTTP
client (``http.client`` or a raw socket, so that the exact bytes of an attack are sent). Bounded: every socket has a
timeout, every loop a fixed number of rounds.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from llama_index_sac.apps.ingest.manage import remove
from llama_index_sac.apps.ingest.run import IngestSettings, ingest
from llama_index_sac.apps.ingest.serve_settings import TOKEN_ENV
from tests.apps.ingest.test_ingest_cli import rows, write_contracts
from tests.conftest import REPO, FakeEmbedding

pytest.importorskip("llama_index.vector_stores.chroma", reason="the 'vectorstores' extra is not installed")
ENV = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
       "TOKENIZERS_PARALLELISM": "false"}
TOKEN = "s3cret-token-0123456789abcdef"
QUESTION = "Which law governs the agreement?"
JSON_TYPE = "application/json; charset=utf-8"

_LAUNCHER = """
import json, sys
from llama_index_sac.apps.ingest.files import StoreSpec
from llama_index_sac.apps.ingest.query import Searcher
from llama_index_sac.apps.ingest.serve import serve
from llama_index_sac.apps.ingest.serve_settings import ServeSettings
from tests.conftest import FakeEmbedding
settings = ServeSettings(**json.loads(sys.argv[2]))
with Searcher(StoreSpec.parse(sys.argv[1]), embed_model=FakeEmbedding()) as searcher:
    serve(searcher, default_k=2, settings=settings, ready=lambda a: print(f"http://{a[0]}:{a[1]}", flush=True))
"""


class Server:
    """A ``serve`` process on 127.0.0.1 (a free port) over ``store`` with ``settings``; stderr kept in a file."""

    def __init__(self, store: str, log: Path, **settings: Any) -> None:
        self.log = log
        self._err = open(log, "w")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen([sys.executable, "-c", _LAUNCHER, store,
                                         json.dumps({"host": "127.0.0.1", "port": 0, **settings})],
                                        stdout=subprocess.PIPE, stderr=self._err, env=ENV, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if "http://" not in line:
            self.process.kill()
            raise AssertionError(f"the server did not start: {line}{log.read_text()}")
        self.port = int(line.strip().rsplit(":", 1)[1])
        self.host = f"127.0.0.1:{self.port}"

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        """One request on a fresh connection: status, headers (lower-case names), raw body."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            connection.request(method, path, body=body, headers={"Host": self.host, **(headers or {})})
            response = connection.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        finally:
            connection.close()

    def query(self, value: Any, headers: dict[str, str] | None = None) -> tuple[int, Any]:
        status, got, body = self.request("POST", "/query", json.dumps(value).encode(),
                                         {"Content-Type": "application/json", **(headers or {})})
        assert got["content-type"] == JSON_TYPE
        return status, json.loads(body)

    def health(self, headers: dict[str, str] | None = None) -> tuple[int, Any]:
        status, got, body = self.request("GET", "/health", headers=headers)
        assert got["content-type"] == JSON_TYPE
        return status, json.loads(body)

    def raw(self, data: bytes, wait: float = 30.0) -> bytes:
        """Send ``data`` on a raw connection; everything the server answers until it closes (or ``wait`` s)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=wait) as sock:
            sock.sendall(data)
            out = b""
            while True:
                try:
                    chunk = sock.recv(65536)
                except (TimeoutError, ConnectionResetError):
                    return out
                if not chunk:
                    return out
                out += chunk

    def stop(self) -> str:
        """SIGINT; the server's stderr."""
        self.process.send_signal(signal.SIGINT)
        self.process.communicate(timeout=60)
        self._err.close()
        assert self.process.returncode == 0
        return self.log.read_text()


def status_and_json(answer: bytes) -> tuple[int, str, Any]:
    """The status, the Content-Type and the JSON body of one raw HTTP/1.1 answer."""
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers.get("Content-Type", ""), json.loads(body) if body else None


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A Chroma collection of 4 contracts, embedded with ``FakeEmbedding`` (only read by the servers using it)."""
    folder = tmp_path_factory.mktemp("serve")
    write_contracts(folder / "docs", 4)
    spec = f"chroma:{folder / 'store'}"
    ingest([folder / "docs"], spec, IngestSettings(show_progress=False), embed_model=FakeEmbedding())
    return spec


@pytest.fixture(scope="module")
def server(store: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server with the default settings."""
    running = Server(store, tmp_path_factory.mktemp("log") / "stderr.txt")
    yield running
    assert "Traceback" not in running.stop()


# -- F1: a web page the user visits (DNS rebinding, cross-origin POST) ----------------------------------------------
def test_the_dns_rebinding_request_of_round_3_is_refused(server: Server) -> None:
    """What a rebinding page sends (round 3, F1): a foreign Host, a foreign Origin, text/plain. Refused at the Host;
    no contract text in the answer."""
    body = json.dumps({"query": "governing law", "k": 1}).encode()
    status, headers, answer = server.request("POST", "/query", body, {
        "Host": f"attacker.example:{server.port}", "Origin": "http://attacker.example", "Content-Type": "text/plain"})
    assert (status, headers["content-type"]) == (421, JSON_TYPE)
    assert json.loads(answer) == {"error": f"Host 'attacker.example:{server.port}' is not this server's: use "
                                           f"127.0.0.1:{server.port}, or allow the name with --allow-host"}


@pytest.mark.parametrize("host", ["attacker.example", "127.0.0.1:1", "127.0.0.1.attacker.example", "",
                                  "user@127.0.0.1", "127.0.0.1/x"])
def test_a_host_that_is_not_the_servers_is_refused(server: Server, host: str) -> None:
    status, body = server.health({"Host": host})
    assert status == 421 and "is not this server's" in body["error"]


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "LOCALHOST.", "[::1]"])
def test_loopback_names_are_this_servers(server: Server, host: str) -> None:
    assert server.health({"Host": f"{host}:{server.port}"})[0] == 200
    assert server.health({"Host": host})[0] == 200  # no port: the name is what matters


@pytest.mark.parametrize("origin", ["http://attacker.example", "null", "http://127.0.0.1:1", "http://localhost:3000",
                                    "file://", "http://127.0.0.1:{port}.attacker.example"])
def test_cross_origin_requests_are_refused(server: Server, origin: str) -> None:
    status, body = server.query({"query": QUESTION}, {"Origin": origin.format(port=server.port)})
    assert status == 403 and body["error"].startswith("cross-origin requests are refused (Origin ")
    assert server.health({"Sec-Fetch-Site": "cross-site"}) == (403, {
        "error": "cross-origin requests are refused (Sec-Fetch-Site: cross-site)"})


def test_the_servers_own_origin_is_answered(server: Server) -> None:
    for origin in (f"http://127.0.0.1:{server.port}", f"http://localhost:{server.port}"):
        status, body = server.query({"query": QUESTION}, {"Origin": origin, "Sec-Fetch-Site": "same-origin"})
        assert status == 200 and len(body["hits"]) == 2


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x", "application/json; charset=latin-1",
                                          "application/jsonp"])
def test_a_body_that_is_not_json_by_its_type_is_refused(server: Server, content_type: str | None) -> None:
    """The content types a page can POST without a CORS preflight, and other non-JSON types: 415."""
    headers = {} if content_type is None else {"Content-Type": content_type}
    status, got, body = server.request("POST", "/query", json.dumps({"query": QUESTION}).encode(), headers)
    assert (status, got["content-type"]) == (415, JSON_TYPE)
    assert json.loads(body)["error"].startswith("Content-Type must be application/json (got ")
    for accepted in ("application/json", "Application/JSON; charset=UTF-8", 'application/json;charset="utf-8"'):
        assert server.query({"query": QUESTION}, {"Content-Type": accepted})[0] == 200


# -- P1, P4: every error a JSON body -------------------------------------------------------------------------------
def test_a_superscript_digit_in_content_length_is_400(server: Server) -> None:
    answer = server.raw(b"POST /query HTTP/1.1\r\nHost: " + server.host.encode() + b"\r\nContent-Type: "
                        b"application/json\r\nContent-Length: \xb2\r\nConnection: close\r\n\r\n{}")
    assert status_and_json(answer) == (400, JSON_TYPE, {"error": "Content-Length is not a number"})


def test_other_methods_and_bad_requests_get_json_errors(server: Server) -> None:
    host = server.host.encode()
    cases: list[tuple[bytes, int, str]] = [
        (b"OPTIONS /query HTTP/1.1\r\nHost: " + host + b"\r\n\r\n", 405, "method OPTIONS not allowed"),
        (b"DELETE /query HTTP/1.1\r\nHost: " + host + b"\r\n\r\n", 405, "method DELETE not allowed"),
        (b"FOO /query HTTP/1.1\r\nHost: " + host + b"\r\n\r\n", 501, "method 'FOO' is not supported"),
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 400, "bad request line"),  # TLS to a plain port
        (b"GET /health\r\n", 400, "bad request line"),  # HTTP/0.9, no blank line: answered at once
        (b"GET /health HTTP/2.0\r\nHost: " + host + b"\r\n\r\n", 505, "Invalid HTTP version"),
        (b"GET /health HTTP/1.x\r\nHost: " + host + b"\r\n\r\n", 400, "Bad request version"),
        (b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: " + host + b"\r\n\r\n", 414, "over 65536 bytes"),
        (b"GET /health HTTP/1.1\r\nHost: " + host + b"\r\n" + b"X-A: b\r\n" * 200 + b"\r\n", 431, "Too many headers"),
        (b"GET /health HTTP/1.1\r\nHost: " + host + b"\r\nX-A: " + b"b" * 70_000 + b"\r\n\r\n", 431, "Line too long"),
        (b"GET /health HTTP/1.1\r\n\r\n", 400, "exactly one Host header is required"),
        (b"GET /health HTTP/1.1\r\nHost: " + host + b"\r\nHost: " + host + b"\r\n\r\n", 400, "exactly one Host"),
        (b"POST /query HTTP/1.1\r\nHost: " + host + b"\r\nContent-Type: application/json\r\nTransfer-Encoding: "
         b"chunked\r\n\r\n0\r\n\r\n", 501, "Transfer-Encoding is not supported"),
        (b"POST /query HTTP/1.1\r\nHost: " + host + b"\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
         b"Content-Length: 3\r\n\r\n{}", 400, "Content-Length is not a number"),
        (b"POST /query HTTP/1.1\r\nHost: " + host + b"\r\nContent-Type: application/json\r\n\r\n", 411,
         "a Content-Length header is required"),
        (b"POST /query HTTP/1.1\r\nHost: " + host + b"\r\nContent-Type: application/json\r\nContent-Length: "
         b"70000\r\n\r\n" + b" " * 70_000, 413, "over 65536 bytes"),
        (b"GET /nowhere HTTP/1.1\r\nHost: " + host + b"\r\n\r\n", 404, "no such path '/nowhere'"),
    ]
    for request, code, message in cases:
        status, content_type, body = status_and_json(server.raw(request))
        assert (status, content_type) == (code, JSON_TYPE) and message in body["error"], (request[:60], body)
    head = server.raw(b"HEAD /health HTTP/1.1\r\nHost: " + host + b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 405 ") and b"Allow: GET, POST\r\n" in head and head.endswith(b"\r\n\r\n")


def test_each_request_is_one_access_log_line_without_the_question(server: Server) -> None:
    secret = "the confidential question of a client"
    assert server.query({"query": secret})[0] == 200
    answer = server.raw(b"GET /nowhere\x1b[31m HTTP/1.1\r\nHost: " + server.host.encode() + b"\r\n\r\n")
    assert status_and_json(answer)[0] == 404
    for _ in range(100):  # the line is written just after the answer
        lines = server.log.read_text().splitlines()
        if any(" GET /nowhere" in line for line in lines):
            break
        time.sleep(0.1)
    assert secret not in "\n".join(lines)
    post = [line for line in lines if " POST /query 200 " in line]
    assert post and post[-1].split()[1:5] == ["127.0.0.1", "POST", "/query", "200"]
    assert post[-1].split()[5].endswith("ms") and float(post[-1].split()[5][:-2]) >= 0
    assert any(line.split()[2:5] == ["GET", "/nowhere\\x1b[31m", "404"] for line in lines)  # escaped


# -- item 2: the bearer token, allowed names, the question in the log -----------------------------------------------
def test_a_token_is_required_when_set_and_allowed_names_are_answered(store: str, tmp_path: Path) -> None:
    server = Server(store, tmp_path / "err.txt", token=TOKEN, allow_hosts=["search.firm.example"],
                    log_questions=True)
    try:
        for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"}, {"Authorization": TOKEN},
                        {"Authorization": f"Basic {TOKEN}"}):
            status, got, body = server.request("GET", "/health", headers=headers)
            assert (status, got["www-authenticate"], json.loads(body)) == (401, "Bearer", {
                "error": "a valid bearer token is required (Authorization: Bearer TOKEN)"})
            assert server.query({"query": QUESTION}, headers)[0] == 401
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert server.health(auth)[0] == 200
        proxied = {**auth, "Host": "search.firm.example", "Origin": "https://search.firm.example"}
        status, body = server.query({"query": QUESTION}, proxied)
        assert status == 200 and len(body["hits"]) == 2
        assert server.query({"query": QUESTION}, {**auth, "Host": "other.firm.example"})[0] == 421
    finally:
        log = server.stop()
    assert ' POST /query 200 ' in log and f'query={json.dumps(QUESTION)}' in log and TOKEN not in log


def test_beyond_loopback_without_a_token_is_one_error_before_loading(store: str, monkeypatch: pytest.MonkeyPatch
                                                                     ) -> None:
    from llama_index_sac.apps.cli import app
    from llama_index_sac.apps.ingest import query as query_module

    loaded: list[str | None] = []
    monkeypatch.setattr(query_module, "load_model", lambda name, *a, **k: loaded.append(name))
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    runner = CliRunner()
    for args, env, message in [
        (["--host", "192.0.2.1"], {}, "error: listening on 192.0.2.1 (beyond loopback) requires a token: set "
                                      f"{TOKEN_ENV} (or --token) and send it as Authorization: Bearer TOKEN"),
        (["--host", "0.0.0.0", "--token", TOKEN], {}, "error: listening on 0.0.0.0 (every interface): name the host "
                                                      "names or addresses clients use with --allow-host"),
        (["--host", "192.0.2.1"], {TOKEN_ENV: "short"}, "error: --token: the token must be 16 to 256 printable ASCII"),
        (["--allow-host", "a b"], {}, "error: --allow-host: not a host name: 'a b'"),
        (["--read-timeout", "0"], {}, "error: --read-timeout: Input should be greater than 0"),
    ]:
        result = runner.invoke(app, ["serve", "--vector-store", store, *args], env=env)
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert result.exit_code == 2 and len(errors) == 1 and errors[0].startswith(message), result.output
    assert loaded == []


# -- P2, P3: read timeouts, bounded connections, clients that hang up ----------------------------------------------
def test_idle_slow_and_surplus_connections_are_bounded(store: str, tmp_path: Path) -> None:
    server = Server(store, tmp_path / "err.txt", max_connections=4, read_timeout=1.0)
    try:
        head = b"POST /query HTTP/1.1\r\nHost: " + server.host.encode() + b"\r\nContent-Type: application/json\r\n"
        held = [socket.create_connection(("127.0.0.1", server.port), timeout=30) for _ in range(4)]
        for sock in held:  # round 3's P2: headers and a promised body of 60000 bytes, then nothing
            sock.sendall(head + b"Content-Length: 60000\r\n\r\n{")
        time.sleep(0.3)  # the four are being served (waiting for their bodies)
        status, content_type, body = status_and_json(server.raw(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"))
        assert (status, content_type) == (503, JSON_TYPE) and body == {
            "error": "too many connections: the server is busy, try again"}
        for sock in held:  # each closed by its read timeout (1 s), answered 408 or closed by the deadline
            answer = b""
            try:
                while chunk := sock.recv(65536):
                    answer += chunk
            except ConnectionResetError:  # closed by the deadline with the promised body unread
                pass
            assert answer == b"" or status_and_json(answer)[0] == 408
            sock.close()
        assert server.health()[0] == 200  # the slots are free again
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:  # a byte every 0.2 s
            sent, closed = 0, False
            for byte in (b"GET /health HTTP/1.1\r\nHost: " + server.host.encode() + b"\r\nX: " + b"y" * 100):
                try:
                    sock.sendall(bytes([byte]))
                except OSError:
                    closed = True
                    break
                sent += 1
                time.sleep(0.2)
            assert closed or sock.recv(65536) == b""  # closed by the deadline, long before the 100 bytes were sent
        assert sent < 60
        for _ in range(200):  # clients that hang up at once, mid-request, or after asking
            with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # reset
                sock.sendall(head + b"Content-Length: 20\r\n\r\n" + json.dumps({"query": "x"}).encode())
        for _ in range(120):  # their questions are still answered (or refused 503 while the 4 slots are busy)
            if server.health()[0] == 200:
                break
            time.sleep(0.5)
        assert server.health()[0] == 200
    finally:
        log = server.stop()
    assert "Traceback" not in log and "rror" not in log
    refused = [line.split()[1:5] for line in log.splitlines() if " 503 " in line]  # the surplus one, and any while
    assert refused and all(line == ["127.0.0.1", "-", "-", "503"] for line in refused)  # the hang-ups kept slots busy


# -- F2 / item 3: the collection changed under the running server by another process --------------------------------
def test_rm_and_ingest_under_a_running_server_are_seen(tmp_path: Path) -> None:
    docs = write_contracts(tmp_path / "docs", 4)
    spec = f"chroma:{tmp_path / 'store'}"
    ingest([tmp_path / "docs"], spec, IngestSettings(show_progress=False), embed_model=FakeEmbedding())
    server = Server(spec, tmp_path / "err.txt")
    try:
        status, health = server.health()
        assert status == 200 and health["rows"] == len(rows(spec)) and health["generation"] == 1
        every = {"query": QUESTION, "k": len(rows(spec))}
        gone = sorted(docs)[0]
        assert gone in {hit["document"] for hit in server.query(every)[1]["hits"]}
        remove([gone], spec)  # round 3's F2: rm from another process while the server runs
        status, answer = server.query(every)
        left = rows(spec)
        assert status == 200 and "dropped" not in answer and len(answer["hits"]) == len(left)
        assert {hit["document"] for hit in answer["hits"]} == set(docs) - {gone}
        assert all(hit["text"] and hit["start"] is not None for hit in answer["hits"])
        assert server.health()[1] == {**health, "rows": len(left), "generation": 2}
        (tmp_path / gone).write_text(docs[gone] + "\nA new clause: the Zanzibar escrow.\n", encoding="utf-8")
        ingest([tmp_path / "docs"], spec, IngestSettings(show_progress=False), embed_model=FakeEmbedding())
        status, answer = server.query({**every, "k": len(rows(spec))})
        assert status == 200 and {hit["document"] for hit in answer["hits"]} == set(docs)
        assert any("Zanzibar escrow" in hit["text"] for hit in answer["hits"])
        assert server.health()[1]["rows"] == len(rows(spec))
    finally:
        assert "Traceback" not in server.stop()


def test_rows_deleted_without_a_new_generation_are_never_ghost_hits(tmp_path: Path) -> None:
    """Rows deleted under the server with no generation bump yet (an ingest replacing a document, mid-run): the
    server's open index still finds them; they are left out and counted, never returned as empty hits."""
    import chromadb

    docs = write_contracts(tmp_path / "docs", 3)
    spec = f"chroma:{tmp_path / 'store'}"
    ingest([tmp_path / "docs"], spec, IngestSettings(show_progress=False), embed_model=FakeEmbedding())
    server = Server(spec, tmp_path / "err.txt")
    try:
        total = len(rows(spec))
        gone = sorted(docs)[0]
        client = chromadb.PersistentClient(path=str(tmp_path / "store"),
                                           settings=chromadb.Settings(anonymized_telemetry=False))
        try:
            client.get_collection("llama-sac").delete(where={"ref_doc_id": gone})
        finally:
            client.close()  # type: ignore[attr-defined]
        status, answer = server.query({"query": QUESTION, "k": total})
        assert status == 200 and answer["dropped"] == total - len(rows(spec)) > 0
        assert "rows were deleted" in answer["note"] and len(answer["hits"]) == len(rows(spec))
        assert all(hit["document"] in docs and hit["text"] for hit in answer["hits"])
    finally:
        assert "Traceback" not in server.stop()


def test_the_generation_counts_from_one_and_survives_a_damaged_file(tmp_path: Path) -> None:
    from llama_index_sac.apps.ingest.files import IngestRecord, StoreSpec
    from llama_index_sac.apps.ingest.generation import GENERATION_FILE, bump_generation, read_generation

    record = IngestRecord(StoreSpec.parse(f"chroma:{tmp_path}"), "llama-sac")
    assert read_generation(record) == "" and not record.directory.exists()  # reading creates nothing
    assert [bump_generation(record) for _ in range(3)] == [1, 2, 3] and read_generation(record) == "3"
    (record.directory / GENERATION_FILE).write_bytes(b"\xff" * 1000)  # damaged: restarts at 1, still a change
    assert read_generation(record) not in ("", "3") and bump_generation(record) == 1
    assert sorted(p.name for p in record.directory.iterdir()) == [GENERATION_FILE]  # no temporary file left


def test_a_collection_that_cannot_be_reopened_is_503_until_it_can(tmp_path: Path) -> None:
    """A new generation whose store cannot be opened (here: its database moved away mid-change): 503 naming the
    problem, the server stays up, and the next request after the store is back reopens it."""
    from llama_index_sac.apps.ingest.files import IngestRecord, StoreSpec
    from llama_index_sac.apps.ingest.generation import bump_generation

    write_contracts(tmp_path / "docs", 2)
    spec = f"chroma:{tmp_path / 'store'}"
    ingest([tmp_path / "docs"], spec, IngestSettings(show_progress=False), embed_model=FakeEmbedding())
    server = Server(spec, tmp_path / "err.txt")
    database = tmp_path / "store" / "chroma.sqlite3"
    try:
        assert server.query({"query": QUESTION})[0] == 200
        database.rename(tmp_path / "away.sqlite3")
        bump_generation(IngestRecord(StoreSpec.parse(spec), "llama-sac"))
        for _ in range(2):  # tried again on each request
            status, got, body = server.request("POST", "/query", json.dumps({"query": QUESTION}).encode(),
                                               {"Content-Type": "application/json"})
            assert (status, got["retry-after"]) == (503, "1")
            assert json.loads(body)["error"].startswith("the collection changed and cannot be reopened now (")
        assert server.health()[0] == 503
        (tmp_path / "away.sqlite3").rename(database)
        status, answer = server.query({"query": QUESTION})
        assert status == 200 and len(answer["hits"]) == 2 and server.health()[1]["generation"] == 2
    finally:
        assert "Traceback" not in server.stop()
