"""``llama-sac serve``: a collection written by ``llama-sac ingest`` behind a small HTTP JSON API.

The store is opened and the embedding model loaded once (:class:`~llama_index_sac.apps.ingest.query.Searcher`), then
questions are answered until SIGINT or SIGTERM (the server closes its socket and the store, and the command exits
with status 0). Standard library only (``http.server.ThreadingHTTPServer``); questions are answered one at a time.

* ``GET /health``: ``{"status": "ok", "store", "collection", "rows", "ingest_in_progress"}``.
* ``POST /query`` with a JSON object ``{"query": "...", "k": 5}`` (``k`` optional, 1 to
  :data:`~llama_index_sac.apps.ingest.query.MAX_K`): ``{"query", "k", "hits": [...]}``, each hit as
  :meth:`~llama_index_sac.apps.ingest.query.QueryHit.to_dict` (document, pages, start, end, score, summary, text).

A bad request is answered with a JSON ``{"error": "..."}``: 400 (not JSON, not UTF-8, not an object, a key given
twice, a missing or empty ``query``, a bad ``k``, an unknown key), 404 (another path), 405 (another method), 411 (no
Content-Length), 413 (a body over :data:`MAX_BODY_BYTES`); 500 when the store fails while answering.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from llama_index_sac.apps._input import DuplicateKeyError, unique_keys
from llama_index_sac.apps.ingest.files import IngestError
from llama_index_sac.apps.ingest.query import Searcher, check_k, check_question

__all__ = ["MAX_BODY_BYTES", "QueryServer", "run_server", "serve"]

#: The largest request body ``POST /query`` reads (bytes).
MAX_BODY_BYTES = 64 * 1024
_KEYS = {"query", "k"}


class QueryServer(ThreadingHTTPServer):
    """The HTTP server of ``llama-sac serve``: ``searcher`` answers, ``default_k`` when a request has no ``k``."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], searcher: Searcher | None, default_k: int = 5) -> None:
        self.searcher: Searcher | None = searcher  # set before serving: the address is bound first
        self.default_k = check_k(default_k)
        self.answering = threading.Lock()  # one question at a time: the model and the store client are shared
        super().__init__(address, _Handler)


class _BadRequest(Exception):
    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class _Handler(BaseHTTPRequestHandler):
    server: QueryServer
    server_version = "llama-sac"
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        """No access log (the base class writes every request to stderr)."""

    def _send(self, status: HTTPStatus, body: dict[str, Any]) -> None:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        if status >= 400:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.path.split("?", 1)[0] == "/query":
            self._not_allowed()
            return
        if self.path.split("?", 1)[0] != "/health":
            self._send(HTTPStatus.NOT_FOUND, {"error": f"no such path {self.path[:100]!r}: GET /health or POST "
                                                       "/query"})
            return
        searcher = self.server.searcher
        assert searcher is not None
        self._send(HTTPStatus.OK, {"status": "ok", "store": str(searcher.spec), "collection": searcher.collection,
                                   "rows": searcher.rows, "ingest_in_progress": searcher.ingest_in_progress})

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        try:
            if self.path.split("?", 1)[0] != "/query":
                raise _BadRequest(HTTPStatus.NOT_FOUND, f"no such path {self.path[:100]!r}: POST /query")
            try:
                question, k = self._request()
            except IngestError as exc:
                raise _BadRequest(HTTPStatus.BAD_REQUEST, str(exc)) from None
            assert self.server.searcher is not None
            with self.server.answering:
                hits = self.server.searcher.search(question, k)
        except _BadRequest as exc:
            self._send(exc.status, {"error": str(exc)})
            return
        except Exception as exc:  # noqa: BLE001 - the store failed while answering: said to the client, server stays
            self._send(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"{type(exc).__name__}: {exc}"})
            return
        self._send(HTTPStatus.OK, {"query": question, "k": k, "hits": [h.to_dict() for h in hits]})

    def _request(self) -> tuple[str, int]:
        """The question and k of a ``POST /query`` body (read only up to :data:`MAX_BODY_BYTES`)."""
        length = self.headers.get("Content-Length")
        if length is None:
            raise _BadRequest(HTTPStatus.LENGTH_REQUIRED, "a Content-Length header is required")
        if not length.strip().isdigit() or len(length.strip()) > 12:
            raise _BadRequest(HTTPStatus.BAD_REQUEST, "Content-Length is not a number")
        if int(length) > MAX_BODY_BYTES:
            if int(length) <= 16 * MAX_BODY_BYTES:  # read it, so the client sees the answer instead of a reset
                self.rfile.read(int(length))
            raise _BadRequest(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                              f"the request body is over {MAX_BODY_BYTES} bytes")
        raw = self.rfile.read(int(length))
        try:
            body = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant, object_pairs_hook=unique_keys)
        except UnicodeDecodeError:
            raise _BadRequest(HTTPStatus.BAD_REQUEST, "the request body is not UTF-8") from None
        except DuplicateKeyError as exc:
            raise _BadRequest(HTTPStatus.BAD_REQUEST, f"the request body has a {exc}") from None
        except (ValueError, RecursionError) as exc:
            raise _BadRequest(HTTPStatus.BAD_REQUEST, f"the request body is not JSON ({str(exc)[:200]})") from None
        if not isinstance(body, dict):
            raise _BadRequest(HTTPStatus.BAD_REQUEST, 'expected a JSON object {"query": "...", "k": 5}')
        unknown = sorted(set(body) - _KEYS)
        if unknown:
            raise _BadRequest(HTTPStatus.BAD_REQUEST, f"unknown key(s) {', '.join(map(repr, unknown))[:200]}: "
                                                      "expected query and k")
        if "query" not in body:
            raise _BadRequest(HTTPStatus.BAD_REQUEST, 'missing "query"')
        return check_question(body["query"], "query"), check_k(body.get("k", self.server.default_k), '"k"')

    def _not_allowed(self) -> None:
        self._send(HTTPStatus.METHOD_NOT_ALLOWED, {"error": f"method {self.command} not allowed: GET /health or "
                                                            "POST /query"})

    do_PUT = do_DELETE = do_PATCH = _not_allowed  # noqa: N815 - http.server's names


def serve(searcher: Searcher, host: str = "127.0.0.1", port: int = 8765, default_k: int = 5,
          ready: Callable[[tuple[str, int]], None] | None = None) -> None:
    """Answer questions over HTTP until SIGINT or SIGTERM (``searcher`` already open; it is not closed here).

    Args:
        searcher: the open collection.
        host, port: where to listen (port 0: a free port, chosen by the system).
        default_k: ``k`` of requests without one.
        ready: called with the server's ``(host, port)`` once it listens.

    Raises:
        OSError: the address cannot be bound (in use, not this machine's).
    """
    server = QueryServer((host, port), searcher, default_k)
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
            ready((str(server.server_address[0]), int(server.server_address[1])))
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        if main:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        sys.stdout.flush()
