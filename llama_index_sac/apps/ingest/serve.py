"""``llama-sac serve``: a collection written by ``llama-sac ingest`` behind a small HTTP JSON API.

The store is opened and the embedding model loaded once (:class:`~llama_index_sac.apps.ingest.query.Searcher`), then
questions are answered until SIGINT or SIGTERM (the server closes its socket and the store, and the command exits
with status 0). Standard library only (``http.server``): every answer, errors included, is JSON, which a stock
server stack does not give for its protocol-level errors. Questions are answered one at a time; before each, the
collection is reopened if an ``ingest`` or ``rm`` changed it since
(:meth:`~llama_index_sac.apps.ingest.query.Searcher.refresh`).

* ``GET /health``: ``{"status": "ok", "store", "collection", "rows", "ingest_in_progress", "generation"}``: the rows
  when the collection was last (re)opened, whether an ``ingest`` or ``rm`` holds its lock now, and the record's
  generation the server has open (``null`` for a record no run has bumped yet).
* ``POST /query`` with a JSON object ``{"query": "...", "k": 5}`` (``k`` optional, 1 to
  :data:`~llama_index_sac.apps.ingest.query.MAX_K`): ``{"query", "k", "hits": [...]}``, each hit as
  :meth:`~llama_index_sac.apps.ingest.query.QueryHit.to_dict` (document, pages, start, end, score, summary, text).

Who may ask is :mod:`~llama_index_sac.apps.ingest.serve_access`; the requests and their errors are
:mod:`~llama_index_sac.apps.ingest.serve_http`. Connections are bounded: at most ``max_connections`` are served at
once, one thread each; more are answered 503 at once by a small fixed set of threads. A connection must send each
request within ``read_timeout`` seconds (line, headers and body; idle time between requests counts), else it is
closed.
"""

from __future__ import annotations

import contextlib
import queue
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from http.server import HTTPServer
from typing import Any

from llama_index_sac.apps.ingest.query import Searcher, check_k
from llama_index_sac.apps.ingest.serve_http import MAX_BODY_BYTES, QueryHandler
from llama_index_sac.apps.ingest.serve_settings import ServeSettings

__all__ = ["MAX_BODY_BYTES", "QueryServer", "run_server", "serve"]

_BUSY_BODY = b'{"error": "too many connections: the server is busy, try again"}'
_BUSY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\n"
         b"Content-Length: %d\r\nRetry-After: 1\r\nConnection: close\r\n\r\n%s" % (len(_BUSY_BODY), _BUSY_BODY))
_REFUSERS = 4  # threads that answer 503
_REFUSE_QUEUE = 4096  # connections waiting for their 503; beyond it, closed at once


class QueryServer(HTTPServer):
    """The HTTP server of ``llama-sac serve``: ``searcher`` answers (set before serving: the address is bound first),
    ``default_k`` when a request has no ``k``; ``settings`` say where it listens and what it accepts."""

    request_queue_size = 1024  # the listen backlog: a burst of connections waits instead of being dropped

    def __init__(self, settings: ServeSettings, searcher: Searcher | None, default_k: int = 5) -> None:
        self.settings = settings
        self.searcher: Searcher | None = searcher
        self.default_k = check_k(default_k)
        self.answering = threading.Lock()  # one question at a time: the model and the store client are shared
        self._slots = threading.BoundedSemaphore(settings.max_connections)
        self._deadlines: dict[QueryHandler, float] = {}
        self._deadlines_lock = threading.Lock()
        self._log_lock = threading.Lock()
        self._refused: queue.Queue[tuple[socket.socket, str, float]] = queue.Queue(_REFUSE_QUEUE)
        self._closing = threading.Event()
        super().__init__((settings.host, settings.port), QueryHandler)
        self.port = int(self.server_address[1])
        for target in [self._refuser] * _REFUSERS + [self._reaper]:
            threading.Thread(target=target, daemon=True).start()

    # -- connections ------------------------------------------------------------------------------------------------
    def process_request(self, request: Any, client_address: Any) -> None:
        """Serve the connection in a thread of its own if a slot is free, else answer it 503."""
        if not self._slots.acquire(blocking=False):
            self._refuse(request, client_address)
            return
        try:
            threading.Thread(target=self._serve, args=(request, client_address), daemon=True).start()
        except RuntimeError:  # the system gives no more threads
            self._slots.release()
            self._refuse(request, client_address)

    def _serve(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:  # noqa: BLE001 - said in one line, the server stays
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One line on stderr (no traceback); nothing for a client that hung up."""
        kind, exc = sys.exc_info()[:2]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            return
        self.log_line(f"error: serving {client_address[0]}: {getattr(kind, '__name__', kind)}: {exc}"[:1000])

    def _refuse(self, request: socket.socket, client_address: Any) -> None:
        try:
            self._refused.put_nowait((request, str(client_address[0]), time.perf_counter()))
        except queue.Full:
            self.shutdown_request(request)

    def _refuser(self) -> None:
        """Answer 503 to waiting connections: the answer, then the rest of the request read (bounded) so that the
        client gets the answer rather than a reset. Each is one access-log line (method and path unread: ``-``)."""
        while True:
            sock, client, started = self._refused.get()
            if self.settings.access_log:
                self.log_line(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {client} - - 503 "
                              f"{(time.perf_counter() - started) * 1000:.1f}ms")
            try:
                sock.settimeout(1.0)
                sock.sendall(_BUSY)
                sock.shutdown(socket.SHUT_WR)
                deadline, left = time.monotonic() + 1.0, 1 << 20
                while time.monotonic() < deadline and left > 0:
                    data = sock.recv(65536)
                    if not data:
                        break
                    left -= len(data)
            except OSError:
                pass
            finally:
                sock.close()

    def reading(self, handler: QueryHandler, started: bool) -> None:
        """Start (``started``) or end the read deadline of ``handler``'s connection (``read_timeout`` from now)."""
        with self._deadlines_lock:
            if started:
                self._deadlines[handler] = time.monotonic() + self.settings.read_timeout
            else:
                self._deadlines.pop(handler, None)

    def _reaper(self) -> None:
        """Shut down connections whose request is not in by its deadline (a client sending a byte at a time)."""
        while not self._closing.wait(0.25):
            now = time.monotonic()
            with self._deadlines_lock:
                late = [h for h, deadline in self._deadlines.items() if deadline < now]
                for handler in late:
                    del self._deadlines[handler]
            for handler in late:
                with contextlib.suppress(OSError):
                    handler.connection.shutdown(socket.SHUT_RDWR)

    def log_line(self, line: str) -> None:
        """Write one line on stderr (whole: lines of several threads never interleave)."""
        with self._log_lock, contextlib.suppress(OSError, ValueError):
            sys.stderr.write(line + "\n")
            sys.stderr.flush()

    def server_close(self) -> None:
        self._closing.set()
        super().server_close()


def serve(searcher: Searcher, host: str = "127.0.0.1", port: int = 8765, default_k: int = 5,
          ready: Callable[[tuple[str, int]], None] | None = None, settings: ServeSettings | None = None) -> None:
    """Answer questions over HTTP until SIGINT or SIGTERM (``searcher`` already open; it is not closed here).

    Args:
        searcher: the open collection.
        host, port: where to listen (port 0: a free port, chosen by the system); ignored when ``settings`` are given.
        default_k: ``k`` of requests without one.
        ready: called with the server's ``(host, port)`` once it listens.
        settings: the server's settings (default: :class:`ServeSettings` of ``host`` and ``port``).

    Raises:
        OSError: the address cannot be bound (in use, not this machine's).
        ValueError: bad settings (a host beyond loopback without a token...).
    """
    server = QueryServer(settings or ServeSettings(host=host, port=port), searcher, default_k)
    run_server(server, ready)


def run_server(server: QueryServer, ready: Callable[[tuple[str, int]], None] | None = None) -> None:
    """Serve until SIGINT or SIGTERM, then close the server's socket (its searcher must be set)."""
    assert server.searcher is not None
    main = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    if main:  # SIGTERM stops it as SIGINT does; SIGINT too when started ignoring it (`serve &` in a script)
        for sig in previous:
            signal.signal(sig, signal.default_int_handler)
    try:
        if ready is not None:
            ready((str(server.server_address[0]), server.port))
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        if main:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        sys.stdout.flush()
