"""``llama-sac query`` with many questions and JSON, ``llama-sac serve`` (a real HTTP server process, a real HTTP
client) and ``chroma-http://`` stores (a real Chroma server, ``chroma run``, started here on 127.0.0.1).

Collections are written with the deterministic ``FakeEmbedding``; the commands run in this process load it in place
of the named model (``load_model`` patched), and the server processes are given it by a small launcher script; the
real MiniLM model is used by the slow end-to-end test of ``llama-sac serve``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.schema import NodeWithScore, TextNode
from typer.testing import CliRunner

from llama_index_sac.apps.ingest import query as query_module
from llama_index_sac.apps.ingest.files import IngestRecord, StoreSpec, default_state_dir
from llama_index_sac.apps.ingest.query import MAX_K, QueryHit, check_question
from llama_index_sac.apps.ingest.run import IngestError, IngestSettings, ingest, query
from llama_index_sac.apps.ingest.serve_settings import TOKEN_ENV
from tests.apps.ingest.test_ingest_cli import rows, write_contracts
from tests.conftest import REPO, FakeEmbedding

pytest.importorskip("llama_index.vector_stores.chroma", reason="the 'vectorstores' extra is not installed")
runner = CliRunner()
ENV = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
       "TOKENIZERS_PARALLELISM": "false"}


def settings(**kw: Any) -> IngestSettings:
    return IngestSettings(show_progress=False, **kw)


@pytest.fixture
def store(tmp_path: Path) -> str:
    """A Chroma collection of 4 contracts, embedded with ``FakeEmbedding``."""
    write_contracts(tmp_path / "docs", 4)
    spec = f"chroma:{tmp_path / 'store'}"
    ingest([tmp_path / "docs"], spec, settings(), embed_model=FakeEmbedding())
    return spec


@pytest.fixture
def fake_model(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """``load_model`` gives ``FakeEmbedding``; the names asked for are recorded."""
    asked: list[str | None] = []

    def load(name: str | None, show_progress: bool, options: Any = None) -> FakeEmbedding:
        asked.append(name)
        return FakeEmbedding()

    monkeypatch.setattr(query_module, "load_model", load)
    return asked


def cli(*args: str, input: str | None = None) -> Any:  # noqa: A002 - CliRunner's name
    from llama_index_sac.apps.cli import app

    return runner.invoke(app, list(args), input=input)


def one_error(result: Any) -> str:
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.exit_code == 2 and len(errors) == 1 and "Traceback" not in result.output, result.output
    return errors[0]


# -- query: many questions, JSON ------------------------------------------------------------------------------------
def test_many_questions_as_json_lines(store: str, tmp_path: Path, fake_model: list[str | None]) -> None:
    questions = tmp_path / "q.txt"
    questions.write_text("Which law governs the agreement?\n\n  Who pays the fees?  \n", encoding="utf-8")
    result = cli("query", "--questions", str(questions), "--vector-store", store, "--k", "3", "--json")
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(line["query"], line["k"], len(line["hits"])) for line in lines] == [
        ("Which law governs the agreement?", 3, 3), ("Who pays the fees?", 3, 3)]
    assert fake_model == [None]  # the model loaded once, for both questions
    texts = {doc: (tmp_path / doc).read_text(encoding="utf-8")  # ids are the folder label "docs" + the file name
             for doc in {h["document"] for line in lines for h in line["hits"]}}
    expected = query("Who pays the fees?", store, k=3, embed_model=FakeEmbedding(), document_aware=True)  # as the CLI
    assert lines[1]["hits"] == [h.to_dict() for h in expected]
    for hit in lines[0]["hits"] + lines[1]["hits"]:
        assert set(hit) == {"document", "pages", "start", "end", "score", "summary", "text"}
        assert hit["pages"] is None and texts[hit["document"]][hit["start"]: hit["end"]] == hit["text"]
    # standard input, plain text: one block per question
    result = cli("query", "--questions", "-", "--vector-store", store, "--k", "1", input="law\nfees\n")
    assert result.exit_code == 0, result.output
    heads = [line for line in result.stdout.splitlines() if line and not line.startswith(" ")]
    assert [h.split(" ")[0] for h in heads] == ["Q1:", "1.", "Q2:", "1."] and heads[0] == "Q1: law"


def test_bad_questions_and_k_are_one_error_before_the_model_loads(store: str, tmp_path: Path,
                                                                  fake_model: list[str | None]) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine question\nsecond \xff line\n")
    assert one_error(cli("query", "--questions", str(bad), "--vector-store", store)) == (
        f"error: --questions: {bad} line 2 is not UTF-8 text (byte 0xff at byte 8)")
    (tmp_path / "blank.txt").write_text("\n  \n", encoding="utf-8")
    assert "holds no question" in one_error(cli("query", "--questions", str(tmp_path / "blank.txt"),
                                                "--vector-store", store))
    assert "give one QUESTION or --questions" in one_error(cli("query", "--vector-store", store))
    assert "give one QUESTION or --questions" in one_error(cli("query", "x", "--questions", str(bad),
                                                               "--vector-store", store))
    # a command-line argument that was not UTF-8 (surrogateescape'd by Python)
    assert one_error(cli("query", "a\udcff", "--vector-store", store)) == (
        "error: the question is not UTF-8 text (byte 0xff at character 2)")
    assert "10000" in one_error(cli("query", "x", "--k", "99999999999999999999", "--vector-store", store))
    assert fake_model == []
    for k in (0, MAX_K + 1, 10**20):
        with pytest.raises(IngestError, match=f"--k must be an integer from 1 to {MAX_K}"):
            query("law", store, k=k, embed_model=FakeEmbedding())
    with pytest.raises(IngestError, match="lone surrogate U\\+D800"):
        check_question("a\ud800")


def test_a_questions_file_with_a_byte_order_mark(store: str, tmp_path: Path, fake_model: list[str | None]) -> None:
    """Windows Notepad starts a UTF-8 file with a byte order mark: not part of the first question; elsewhere it is."""
    questions = tmp_path / "bom.txt"
    questions.write_bytes(b"\xef\xbb\xbfWhich law governs?\r\nWho pays the fees?\r\n")
    from llama_index_sac.apps.cli import app

    for source, stdin in ((str(questions), None), ("-", questions.read_bytes())):  # a file, standard input
        result = runner.invoke(app, ["query", "--questions", source, "--vector-store", store, "--k", "1", "--json"],
                               input=stdin)
        assert result.exit_code == 0, result.output
        assert [json.loads(line)["query"] for line in result.stdout.splitlines()] == [
            "Which law governs?", "Who pays the fees?"]
    questions.write_bytes(b"caf\xc3\xa9 law?\nfees \xef\xbb\xbf\xff\n")
    assert one_error(cli("query", "--questions", str(questions), "--vector-store", store)) == (
        f"error: --questions: {questions} line 2 is not UTF-8 text (byte 0xff at byte 9)")


def test_serve_refuses_a_key_given_twice() -> None:
    """``{"query": "x", "k": 1, "k": 2}`` is a 400 naming the key, not an answer with the last k."""
    import threading

    from llama_index_sac.apps.ingest.serve import QueryServer
    from llama_index_sac.apps.ingest.serve_settings import ServeSettings

    server = QueryServer(ServeSettings(port=0), None, 5)  # refused before a question reaches the searcher
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        for body, key in ((b'{"query": "x", "k": 1, "k": 2}', "k"), (b'{"query": "x", "query": "y"}', "query")):
            request = urllib.request.Request(f"http://127.0.0.1:{server.server_address[1]}/query", data=body,
                                             method="POST", headers={"Content-Type": "application/json"})
            with pytest.raises(urllib.error.HTTPError) as info:
                urllib.request.urlopen(request, timeout=60)
            assert info.value.code == 400
            assert json.loads(info.value.read()) == {"error": f"the request body has a duplicate key {key!r}"}
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow
def test_non_utf8_argv_in_a_real_process(store: str) -> None:
    result = subprocess.run([sys.executable, "-m", "llama_index_sac.apps.cli", "query", b"caf\xe9",
                             "--vector-store", store, "--no-progress"], capture_output=True, env=ENV, timeout=300)
    assert result.returncode == 2 and result.stdout == b""
    assert result.stderr.decode().splitlines() == ["error: the question is not UTF-8 text (byte 0xe9 at character 4)"]


def test_another_embedding_model_is_refused_before_it_loads(store: str, fake_model: list[str | None]) -> None:
    message = one_error(cli("query", "law", "--vector-store", store, "--embed-model", "BAAI/bge-small-en-v1.5"))
    assert message == ("error: --embed-model: collection 'llama-sac' was embedded with unknown, not "
                       "BAAI/bge-small-en-v1.5: leave --embed-model out (the collection's model is used) or pass "
                       "that one")
    assert fake_model == []  # refused before loading


def test_an_ingest_in_progress_is_said_instead_of_no_chunks(tmp_path: Path, store: str,
                                                           fake_model: list[str | None]) -> None:
    first = f"chroma:{tmp_path / 'first'}"  # a first ingest that has not created the store yet
    with IngestRecord(StoreSpec.parse(first), "llama-sac").lock():
        result = cli("query", "law", "--vector-store", first)
    assert result.exit_code == 0, result.output
    assert result.stdout == (f"an ingest into {first} (collection llama-sac) is in progress: no chunks yet, ask again "
                             "when it has finished\n")
    assert one_error(cli("query", "law", "--vector-store", first)).startswith("error: --vector-store: ")  # after it
    with IngestRecord(StoreSpec.parse(store), "llama-sac").lock():  # an update: the rows there are answered
        result = cli("query", "law", "--vector-store", store, "--k", "1")
    assert result.exit_code == 0 and result.stdout.startswith("1. score "), result.output


def test_hits_carry_pages_when_the_reader_recorded_them() -> None:
    node = TextNode(text="Clause", metadata={"page_start": 3, "page_end": 4, "document_summary": "S"},
                    start_char_idx=10, end_char_idx=16)
    hit = QueryHit.from_node(NodeWithScore(node=node, score=0.5))
    assert hit.pages == (3, 4) and hit.to_dict() == {"document": node.node_id, "pages": {"start": 3, "end": 4},
                                                     "start": 10, "end": 16, "score": 0.5, "summary": "S",
                                                     "text": "Clause"}
    node.metadata = {"page_start": 2}
    assert QueryHit.from_node(NodeWithScore(node=node, score=0.5)).pages == (2, 2)


# -- serve: a real server process, a real HTTP client ---------------------------------------------------------------
_LAUNCHER = """
import sys
from llama_index_sac.apps.ingest.query import Searcher
from llama_index_sac.apps.ingest.files import StoreSpec
from llama_index_sac.apps.ingest.serve import serve
from tests.conftest import FakeEmbedding
with Searcher(StoreSpec.parse(sys.argv[1], sys.argv[2] or None), embed_model=FakeEmbedding()) as searcher:
    serve(searcher, "127.0.0.1", 0, 2, ready=lambda a: print(f"http://{a[0]}:{a[1]}", flush=True))
print("closed", flush=True)
"""


class Server:
    """A server process; ``url`` from its first line of output."""

    def __init__(self, args: list[str], ignore_sigint: bool = False, env: dict[str, str] | None = None) -> None:
        ignore = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignore_sigint else None  # `serve &`
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        env={**ENV, **(env or {})}, text=True, preexec_fn=ignore)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if "http://" not in line:
            self.process.kill()
            raise AssertionError(f"the server did not start: {line}{self.process.communicate()}")
        self.url = "http://" + line.split("http://", 1)[1].split()[0]

    def request(self, path: str, body: bytes | None = None, method: str | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, Any]:
        req = urllib.request.Request(self.url + path, data=body, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=120) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            assert exc.headers["Content-Type"] == "application/json; charset=utf-8"
            return exc.code, json.loads(exc.read())

    def stop(self) -> tuple[int, str, str]:
        self.process.send_signal(signal.SIGINT)
        out, err = self.process.communicate(timeout=60)
        return self.process.returncode, out, err


def post(server: Server, value: Any, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    return server.request("/query", json.dumps(value).encode(),
                          headers={"Content-Type": "application/json", **(headers or {})})


def check_server(server: Server, store: str, state_dir: str | None = None) -> None:
    status, health = server.request("/health")
    assert status == 200 and health["status"] == "ok" and health["rows"] == len(rows_of(store, state_dir)) > 0
    status, answer = post(server, {"query": "Which law governs the agreement?", "k": 3})
    spec = StoreSpec.parse(store, state_dir)
    expected = query("Which law governs the agreement?", spec, k=3, embed_model=FakeEmbedding())
    assert status == 200 and answer == {"query": "Which law governs the agreement?", "k": 3,
                                        "hits": [h.to_dict() for h in expected]}
    assert len(post(server, {"query": "fees"})[1]["hits"]) == 2  # the server's default k
    for body, code, message in [
        (b"{not json", 400, "not JSON"), (b"\xff\xfe", 400, "not UTF-8"), (b"[1]", 400, "expected a JSON object"),
        (b'{"k": 2}', 400, 'missing "query"'), (b'{"query": " "}', 400, "query is empty"),
        (b'{"query": 5}', 400, "query must be a string"), (b'{"query": "a", "k": 0}', 400, '"k" must be'),
        (b'{"query": "a", "k": 99999999999999999999}', 400, '"k" must be'),
        (b'{"query": "a", "k": true}', 400, '"k" must be an integer from 1 to 10000, got true'),
        (b'{"query": "a", "x": 1}', 400, "unknown key"), (b'{"query": "a", "k": 1, "k": 2}', 400, "duplicate key 'k'"),
        (b'{"query": "a\\udcff"}', 400, "not UTF-8 text"), (b"[" * 30000 + b"]" * 30000, 400, "not JSON"),
        (b"x" * (64 * 1024 + 1), 413, "over 65536 bytes"),
    ]:
        status, error = server.request("/query", body, headers={"Content-Type": "application/json"})
        assert (status, set(error)) == (code, {"error"}) and message in error["error"], (body[:40], error)
    assert server.request("/nowhere")[0] == 404 and server.request("/query", b"{}", method="PUT")[0] == 405
    assert server.request("/query", b'{"query": "fees"}')[0] == 415  # urllib's default: a form, not JSON
    assert server.request("/query")[0] == 405  # GET of the query path: the method is wrong, not the path
    assert server.request("/health")[1]["status"] == "ok"  # still serving


def rows_of(store: str, state_dir: str | None) -> Any:
    spec = StoreSpec.parse(store, state_dir)
    return rows(store) if spec.url is None else _http_rows(spec)


def _http_rows(spec: StoreSpec) -> list[str]:
    import chromadb

    host, port = spec.host_port
    client = chromadb.HttpClient(host=host, port=port, settings=chromadb.Settings(anonymized_telemetry=False))
    try:
        return list(client.get_collection("llama-sac").get(include=[])["ids"])
    finally:
        client.close()  # type: ignore[attr-defined]


@pytest.mark.slow
def test_serve_answers_over_http_and_stops_on_sigint(store: str) -> None:
    server = Server([sys.executable, "-c", _LAUNCHER, store, ""], ignore_sigint=True)  # as a shell's `serve &`
    try:
        check_server(server, store)
    finally:
        code, out, err = server.stop()
    assert code == 0 and out.splitlines()[-1] == "closed" and "Traceback" not in err, err


@pytest.mark.slow
def test_serve_command_with_the_default_model(tmp_path: Path) -> None:
    """``llama-sac serve`` end to end: the real MiniLM model loaded once, answers equal to ``llama-sac query``'s; the
    token from the environment required, one access-log line per request."""
    from llama_index_sac.apps.ingest.query import load_model

    write_contracts(tmp_path / "docs", 3)
    store = f"chroma:{tmp_path / 'store'}"
    model = load_model(None, show_progress=False)
    ingest([tmp_path / "docs"], store, settings(), embed_model=model)
    server = Server([sys.executable, "-m", "llama_index_sac.apps.cli", "serve", "--vector-store", store, "--port",
                     "0", "--no-progress", "--plain"], env={TOKEN_ENV: "a-token-of-32-characters-abcdefg"})
    auth = {"Authorization": "Bearer a-token-of-32-characters-abcdefg"}
    try:
        assert post(server, {"query": "Which law governs the agreement?", "k": 2})[0] == 401
        status, answer = post(server, {"query": "Which law governs the agreement?", "k": 2}, auth)
        assert status == 200
        expected = query("Which law governs the agreement?", store, k=2, embed_model=model, document_aware=False)
        assert [(h["document"], h["start"], h["end"]) for h in answer["hits"]] == [
            (h.doc_id, h.start, h.end) for h in expected]
        assert answer["hits"][0]["score"] == pytest.approx(expected[0].score, abs=1e-5)
        assert post(server, {"query": ""}, auth)[0] == 400
    finally:
        code, out, err = server.stop()
    assert code == 0 and err.splitlines()[-1] == "stopped" and "Traceback" not in err, err
    assert [line.split()[2:5] for line in err.splitlines() if "/query" in line] == [
        ["POST", "/query", "401"], ["POST", "/query", "200"], ["POST", "/query", "400"]]
    assert "Which law" not in err


def test_serve_on_a_port_in_use_is_one_error_before_loading(store: str, fake_model: list[str | None]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        message = one_error(cli("serve", "--vector-store", store, "--port", str(port)))
    assert message.startswith(f"error: cannot serve on 127.0.0.1:{port}: OSError: ") and fake_model == []
    assert "65535" in one_error(cli("serve", "--vector-store", store, "--port", "70000"))


# -- a Chroma server (chroma run) as the store -----------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def chroma_server(tmp_path: Path) -> Iterator[str]:
    """``chroma run`` on 127.0.0.1 (data in a temporary folder); its ``chroma-http://`` spec."""
    port = _free_port()
    launcher = "import sys; from chromadb.cli.cli import app; sys.argv[0] = 'chroma'; app()"
    process = subprocess.Popen([sys.executable, "-c", launcher, "run", "--path", str(tmp_path / "chroma-data"),
                                "--host", "127.0.0.1", "--port", str(port)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, env=ENV)
    try:
        for _ in range(240):  # up to 60 s
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=2):
                    break
            except OSError:
                if process.poll() is not None:
                    pytest.fail("chroma run exited")
                time.sleep(0.25)
        else:
            pytest.fail("chroma run did not answer within 60 s")
        yield f"chroma-http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.mark.slow
def test_a_chroma_server_as_the_store(chroma_server: str, tmp_path: Path) -> None:
    docs, state = tmp_path / "docs", str(tmp_path / "state")
    texts = write_contracts(docs, 4)
    spec = StoreSpec.parse(chroma_server, state)
    assert str(spec) == chroma_server and spec.path == Path(state)
    report = ingest([docs], spec, settings(), embed_model=FakeEmbedding())
    assert (report.new, report.unchanged) == (4, 0) and report.store == chroma_server
    record = IngestRecord(spec, "llama-sac")
    assert record.store_kind() == "chroma-http" and record.directory.is_relative_to(state)
    assert sum(record.rows().values()) == len(_http_rows(spec)) == report.chunks_written
    changed = sorted(texts)[0]
    (tmp_path / changed).write_text(texts[changed][:600], encoding="utf-8")
    report = ingest([docs], spec, settings(), embed_model=FakeEmbedding())
    assert (report.new, report.changed, report.unchanged) == (0, 1, 3)
    assert sum(record.rows().values()) == len(_http_rows(spec))
    hits = query(texts[changed][:200], spec, k=2, embed_model=FakeEmbedding())
    assert hits[0].doc_id == changed and hits[0].start == 0

    server = Server([sys.executable, "-c", _LAUNCHER, chroma_server, state])  # serve from the same server
    try:
        check_server(server, chroma_server, state)
    finally:
        code, _, err = server.stop()
    assert code == 0, err
    # another state folder has no record: the server's rows are not overwritten by a stranger
    with pytest.raises(IngestError, match="rows that llama-sac ingest did not write"):
        ingest([docs], StoreSpec.parse(chroma_server, tmp_path / "other"), settings(), embed_model=FakeEmbedding())


def test_chroma_server_specs_and_an_unreachable_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    spec = StoreSpec.parse("chroma-http://127.0.0.1:9")
    assert spec.path == default_state_dir("127.0.0.1", 9) == tmp_path / "xdg" / "llama-sac" / "chroma-http-127.0.0.1-9"
    for bad in ("chroma-http://", "chroma-http://host", "chroma-http://h:99999", "chroma-http://h:1/path"):
        with pytest.raises(IngestError, match="expected chroma-http://HOST:PORT"):
            StoreSpec.parse(bad)
    with pytest.raises(IngestError, match="--state-dir applies to chroma-http://"):
        StoreSpec.parse(f"chroma:{tmp_path}", tmp_path)
    port = _free_port()  # nothing listens there
    message = one_error(cli("query", "law", "--vector-store", f"chroma-http://127.0.0.1:{port}"))
    assert message.startswith(f"error: the chroma server http://127.0.0.1:{port} cannot be opened (") and \
        "is it running" in message
    with pytest.raises(IngestError, match=f"the chroma server http://127.0.0.1:{port} cannot be opened"):
        ingest([REPO / "README.md"], f"chroma-http://127.0.0.1:{port}", settings(), embed_model=FakeEmbedding())
    assert not (tmp_path / "xdg").exists() or not list((tmp_path / "xdg").rglob("*.json"))


def test_a_store_that_cannot_answer_is_one_error(store: str) -> None:
    """Vectors of another dimension than the collection's (a model the record cannot tell apart, or no record on
    this machine): the store's error, named, instead of a traceback."""
    with pytest.raises(IngestError, match=r"cannot answer \(InvalidArgumentError: .*dimension.*another --embed-model"):
        query("governing law", store, k=2, embed_model=FakeEmbedding(dim=32))
