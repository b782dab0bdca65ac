"""``llama-sac ingest`` into a Chroma server (``chroma run`` on 127.0.0.1, started here) that goes down, restarts,
answers slowly or stops answering in the middle of a run: nothing is lost, the failure is one ``IngestError`` naming
the server, and the next run completes the store (every document recorded with exactly the rows the server holds).

The faults are real: the server process is killed and started again on the same port and data folder; slow and
silent answers come from a TCP relay on 127.0.0.1 between the client and the server. Each is triggered from inside
the run, by the embedding model, once the journal has committed a few documents."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.bridge.pydantic import PrivateAttr

from llama_index_sac.apps.ingest import store as store_module
from llama_index_sac.apps.ingest.files import IngestRecord, StoreSpec
from llama_index_sac.apps.ingest.journal import Journal
from llama_index_sac.apps.ingest.run import IngestError, ingest
from tests.apps.ingest.test_ingest_cli import write_contracts
from tests.apps.ingest.test_query_serve import ENV, _free_port
from tests.conftest import FakeEmbedding

pytest.importorskip("chromadb")
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

_LAUNCHER = "import sys; from chromadb.cli.cli import app; sys.argv[0] = 'chroma'; app()"


class ChromaProcess:
    """``chroma run`` on 127.0.0.1: one port and one data folder, killed and started again at will."""

    def __init__(self, data: Path) -> None:
        self.data, self.port = data, _free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", _LAUNCHER, "run", "--path", str(self.data), "--host",
                                         "127.0.0.1", "--port", str(self.port)], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, env=ENV)
        for _ in range(240):  # up to 60 s
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/v2/heartbeat", timeout=2):
                    return
            except OSError:
                if self.process.poll() is not None:
                    pytest.fail("chroma run exited")
                time.sleep(0.25)
        pytest.fail("chroma run did not answer within 60 s")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)


class Relay:
    """A TCP relay on 127.0.0.1 in front of ``port``: ``mode`` "pass", "slow" (every answer held 0.3 s) or "mute"
    (answers held back until the mode changes). Its threads stop with :meth:`close`."""

    def __init__(self, port: int) -> None:
        self.upstream, self.mode, self.stopped = port, "pass", threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                client, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream), timeout=5)
            except OSError:
                client.close()
                continue
            for source, target, answers in ((client, upstream, False), (upstream, client, True)):
                threading.Thread(target=self._pump, args=(source, target, answers), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket, answers: bool) -> None:
        source.settimeout(0.2)
        try:
            while not self.stopped.is_set():
                try:
                    data = source.recv(1 << 16)
                except TimeoutError:
                    continue
                if not data:
                    break
                if answers and self.mode == "slow":
                    time.sleep(0.3)
                while answers and self.mode == "mute" and not self.stopped.is_set():
                    time.sleep(0.05)
                target.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, target):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()

    def close(self) -> None:
        self.stopped.set()
        self.listener.close()


class Tripwire(FakeEmbedding):
    """The fake embedding, calling :attr:`action` once, at the first batch after ``after`` documents were committed
    (journal ``done`` entries) in ``journal``."""

    _trip: Any = PrivateAttr(default=None)

    @classmethod
    def class_name(cls) -> str:
        return "FakeEmbedding"  # the same model as the plain fake: the record's settings match

    def arm(self, journal: Journal, after: int, action: Callable[[], None]) -> Tripwire:
        self._trip = (journal, after, action)
        return self

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        trip = self._trip
        if trip is not None and trip[0].path.is_file() and sum(
                '"done"' in line for line in trip[0].path.read_text(encoding="utf-8").splitlines()) >= trip[1]:
            self._trip = None
            trip[2]()
        return super()._get_text_embeddings(texts)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ChromaProcess]:
    process = ChromaProcess(tmp_path / "chroma-data")
    process.start()
    try:
        yield process
    finally:
        process.kill()


def settings() -> Any:
    from llama_index_sac.apps.ingest.run import IngestSettings

    return IngestSettings(show_progress=False)


def server_rows(port: int) -> Counter[str]:
    import chromadb

    client = chromadb.HttpClient(host="127.0.0.1", port=port, settings=chromadb.Settings(anonymized_telemetry=False))
    try:
        got = client.get_collection("llama-sac").get(include=["metadatas"])
    finally:
        client.close()  # type: ignore[attr-defined]  # chromadb >= 1.5.2 (the vectorstores extra's bound)
    return Counter(str(m["ref_doc_id"]) for m in got["metadatas"] or [])


def complete(spec: StoreSpec, port: int, texts: dict[str, str]) -> None:
    """Every document recorded, with exactly the rows the server holds, and no other row."""
    record = IngestRecord(spec, "llama-sac")
    assert not Journal(record).path.exists()
    assert record.rows() == dict(server_rows(port)) and set(record.rows()) == set(texts)
    assert all(count > 0 for count in record.rows().values())


def test_a_server_that_goes_down_mid_ingest_loses_nothing(server: ChromaProcess, tmp_path: Path) -> None:
    texts = write_contracts(tmp_path / "docs", 8)
    spec = StoreSpec.parse(f"chroma-http://127.0.0.1:{server.port}", tmp_path / "state")
    journal = Journal(IngestRecord(spec, "llama-sac"))
    embed = Tripwire().arm(journal, 2, server.kill)
    with pytest.raises(IngestError) as caught:
        ingest([tmp_path / "docs"], spec, settings(), embed_model=embed)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"the chroma server http://127.0.0.1:{server.port} cannot be "
                                                      "read or written (")
    assert message.endswith("reachable from here? The documents committed before it are kept: run the same ingest "
                            "again to write the rest")
    server.start()  # the same port and data folder
    said: list[str] = []
    report = ingest([tmp_path / "docs"], spec, settings(), embed_model=FakeEmbedding(), log=said.append)
    assert report.new + report.unchanged == len(texts) and report.unchanged >= 2
    complete(spec, server.port, texts)


def test_a_server_restarted_mid_ingest(server: ChromaProcess, tmp_path: Path) -> None:
    texts = write_contracts(tmp_path / "docs", 8)
    spec = StoreSpec.parse(f"chroma-http://127.0.0.1:{server.port}", tmp_path / "state")
    journal = Journal(IngestRecord(spec, "llama-sac"))

    restarts = []

    def restart() -> None:
        server.kill()
        server.start()
        restarts.append(server.port)

    try:
        report = ingest([tmp_path / "docs"], spec, settings(), embed_model=Tripwire().arm(journal, 2, restart))
        assert report.new == len(texts)
    except IngestError as exc:  # the client's kept-alive connection died with the old process: one line, then...
        assert "\n" not in str(exc) and str(exc).startswith("the chroma server")
        report = ingest([tmp_path / "docs"], spec, settings(), embed_model=FakeEmbedding())  # ...the next run
        assert report.new + report.unchanged == len(texts)
    assert restarts == [server.port]
    complete(spec, server.port, texts)


def test_a_slow_server_and_a_silent_one(server: ChromaProcess, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    texts = write_contracts(tmp_path / "docs", 8)
    relay = Relay(server.port)
    try:
        spec = StoreSpec.parse(f"chroma-http://127.0.0.1:{relay.port}", tmp_path / "state")
        journal = Journal(IngestRecord(spec, "llama-sac"))

        def slow() -> None:
            relay.mode = "slow"

        report = ingest([tmp_path / "docs"], spec, settings(), embed_model=Tripwire().arm(journal, 2, slow))
        assert report.new == len(texts) and relay.mode == "slow"  # slow answers: only slower
        complete(spec, server.port, texts)
        # a server that stops answering: the run gives up after the timeout, in one line
        monkeypatch.setattr(store_module, "CHROMA_HTTP_TIMEOUT_S", 3.0)
        relay.mode = "pass"
        for name in texts:
            (tmp_path / name).write_text(texts[name] + "\n\nAmendment: the term is extended.", encoding="utf-8")

        def mute() -> None:
            relay.mode = "mute"

        started = time.monotonic()
        with pytest.raises(IngestError) as caught:
            ingest([tmp_path / "docs"], spec, settings(), embed_model=Tripwire().arm(journal, 2, mute))
        assert time.monotonic() - started < 60
        assert "\n" not in str(caught.value) and "(ReadTimeout: timed out)" in str(caught.value)
        assert str(caught.value).endswith("The documents committed before it are kept: run the same ingest again to "
                                          "write the rest")
        relay.mode = "pass"
        report = ingest([tmp_path / "docs"], spec, settings(), embed_model=FakeEmbedding())
        assert report.changed + report.unchanged + report.new == len(texts) and report.redone
        complete(spec, server.port, texts)
    finally:
        relay.close()
