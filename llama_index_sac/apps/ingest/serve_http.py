"""The request handler of ``llama-sac serve``: one HTTP/1.1 request after another on a connection, each answered
with a JSON body, errors included, and logged in one access-log line.

Every request passes :func:`~llama_index_sac.apps.ingest.serve_access.check_access` (Host, Origin, token) before it is
routed. Statuses: 400 (a bad request line, header or body), 401 (no or a wrong token), 403 (cross-origin), 404
(another path), 405 (another method: HEAD, OPTIONS, PUT...; with ``Allow``), 408 (the request not sent within the
read timeout), 411 (no Content-Length), 413 (a body over :data:`MAX_BODY_BYTES`), 414 (a request line over 64 KiB),
415 (not ``application/json``), 421 (another Host), 431 (a header line over 64 KiB or over 100 headers), 501 (an
unknown method, Transfer-Encoding), 503 (the collection is being reopened and cannot be now; too many connections,
answered by :class:`~llama_index_sac.apps.ingest.serve.QueryServer`), 505 (another HTTP version), 500 (the store
failed while answering).
"""

from __future__ import annotations

import json
import re
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol

from llama_index_sac.apps._display import printable
from llama_index_sac.apps._input import DuplicateKeyError, unique_keys
from llama_index_sac.apps.ingest.files import IngestError, IngestRecord
from llama_index_sac.apps.ingest.query import Searcher, check_k, check_question
from llama_index_sac.apps.ingest.serve_access import check_access, check_content_type
from llama_index_sac.apps.ingest.serve_settings import ServeSettings

__all__ = ["MAX_BODY_BYTES", "QueryHandler"]

#: The largest request body ``POST /query`` reads (bytes).
MAX_BODY_BYTES = 64 * 1024
_KEYS = {"query", "k"}
_LENGTH = re.compile(r"[0-9]{1,12}")  # ASCII digits only: str.isdigit() takes superscripts
_ROUTES = "GET /health or POST /query"


class Serving(Protocol):
    """What the handler needs of its server (:class:`~llama_index_sac.apps.ingest.serve.QueryServer`)."""

    settings: ServeSettings
    port: int
    searcher: Searcher | None
    default_k: int
    answering: threading.Lock

    def reading(self, handler: QueryHandler, started: bool) -> None: ...

    def log_line(self, line: str) -> None: ...


class _BadRequest(Exception):
    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


def _number(generation: str | None) -> int | None:
    """The record's generation as a number (``None`` before the first ``ingest`` or ``rm`` that wrote one)."""
    return int(generation) if generation and generation.isascii() and generation.isdigit() else None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class QueryHandler(BaseHTTPRequestHandler):
    """The requests of one connection (see the module docstring)."""

    server: Serving  # type: ignore[assignment]  # BaseRequestHandler's socketserver.BaseServer
    server_version = "llama-sac"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.settings.read_timeout)  # every read of the socket

    def handle(self) -> None:
        """Requests until the connection closes; a client that hangs up or stalls ends it quietly."""
        try:
            super().handle()
        except (OSError, ValueError):  # reset, broken pipe, timed out, or shut down by the server's deadline
            self.close_connection = True
        finally:
            self.server.reading(self, False)

    def handle_one_request(self) -> None:
        self.command, self.path, self.request_version, self.requestline = None, "", "HTTP/1.1", ""  # type: ignore
        self._status: int | None = None
        self._logged = False
        self._started = time.perf_counter()
        self._question: str | None = None
        self.server.reading(self, True)  # the whole request within the read timeout
        try:
            self.raw_requestline = self.rfile.readline(65537)
        except TimeoutError:
            self.close_connection = True
            return
        started = self._started = time.perf_counter()
        if not self.raw_requestline:
            self.close_connection = True
            return
        try:
            self._one()
            self.wfile.flush()
        finally:
            self.server.reading(self, False)
            if self._status is not None and not self._logged:
                self._log(started)

    def _one(self) -> None:
        if len(self.raw_requestline) > 65536:
            self.send_error(HTTPStatus.REQUEST_URI_TOO_LONG, "the request line is over 65536 bytes")
            return
        words = self.raw_requestline.split()
        if len(words) != 3 or not words[2].startswith(b"HTTP/"):
            self.send_error(HTTPStatus.BAD_REQUEST, "bad request line: expected METHOD PATH HTTP/1.1")
            return
        if not self.parse_request():  # answered by send_error: a bad version (505), too many or long headers (431)
            return
        if self.command != "POST":  # read in full: no deadline while it waits for its answer
            self.server.reading(self, False)
        refusal = check_access(self.server.settings, self.server.port, self.headers)
        if refusal is not None:
            extra = {"WWW-Authenticate": "Bearer"} if refusal[0] == HTTPStatus.UNAUTHORIZED else {}
            self._send(refusal[0], {"error": refusal[1]}, extra)
            return
        method = getattr(self, f"do_{self.command}", None)
        if method is None:
            self.send_error(HTTPStatus.NOT_IMPLEMENTED, f"method {self.command[:20]!r} is not supported: {_ROUTES}")
            return
        method()

    # -- answers --------------------------------------------------------------------------------------------------
    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Every error as JSON ``{"error": message}`` (http.server's own errors too), the connection closed after."""
        status = HTTPStatus(code)
        self.request_version = "HTTP/1.1"  # http.server's default before a version is read: no status line
        self._send(status, {"error": message or status.phrase})

    def _send(self, status: HTTPStatus, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        self._status = int(status)
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if status >= 400:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self._log(self._started)  # before the body: a client that has its whole answer finds the line written
        if self.command != "HEAD":
            self.wfile.write(data)

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """Nothing: :meth:`_log` writes one line per request once it is answered."""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        """Nothing (the base class writes to stderr)."""

    def _log(self, started: float) -> None:
        self._logged = True
        if not self.server.settings.access_log:
            return
        path = printable(self.path[:200] + ("..." if len(self.path) > 200 else ""))
        line = (f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {self.client_address[0]} "
                f"{printable(str(self.command or '-')[:20])} {path or '-'} {self._status} "
                f"{(time.perf_counter() - started) * 1000:.1f}ms")
        if self.server.settings.log_questions and self._question is not None:
            line += f" query={json.dumps(self._question[:2000])}"
        self.server.log_line(line)

    # -- routes ---------------------------------------------------------------------------------------------------
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        route = self.path.split("?", 1)[0]
        if route == "/query":
            self._not_allowed()
            return
        if route != "/health":
            self.send_error(HTTPStatus.NOT_FOUND, f"no such path {self.path[:100]!r}: {_ROUTES}")
            return
        searcher = self.server.searcher
        assert searcher is not None
        with self.server.answering:
            if not self._refreshed():
                return
            running = IngestRecord(searcher.spec, searcher.collection).ingest_running()
            self._send(HTTPStatus.OK, {"status": "ok", "store": str(searcher.spec), "collection": searcher.collection,
                                       "rows": searcher.rows, "ingest_in_progress": running,
                                       "generation": _number(searcher.generation)})

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        try:
            if self.path.split("?", 1)[0] != "/query":
                raise _BadRequest(HTTPStatus.NOT_FOUND, f"no such path {self.path[:100]!r}: POST /query")
            refusal = check_content_type(self.headers.get("Content-Type"))
            if refusal is not None:
                raise _BadRequest(*refusal)
            try:
                question, k = self._request()
            except IngestError as exc:
                raise _BadRequest(HTTPStatus.BAD_REQUEST, str(exc)) from None
            self._question = question
            searcher = self.server.searcher
            assert searcher is not None
            with self.server.answering:
                if not self._refreshed():
                    return
                hits = searcher.search(question, k)
                dropped = searcher.dropped
        except _BadRequest as exc:
            self._send(exc.status, {"error": str(exc)})
            return
        except Exception as exc:  # noqa: BLE001 - the store failed while answering: said to the client, server stays
            self._send(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"{type(exc).__name__}: {exc}"[:1000]})
            return
        answer: dict[str, Any] = {"query": question, "k": k, "hits": [h.to_dict() for h in hits]}
        if dropped:
            answer["dropped"] = dropped
            answer["note"] = (f"{dropped} hit(s) left out: their rows were deleted while the collection was being "
                              "changed; ask again once it is done")
        self._send(HTTPStatus.OK, answer)

    def _refreshed(self) -> bool:
        """Reopen the collection if an ``ingest`` or ``rm`` changed it since (the caller holds ``answering``; a note
        on stderr when its vector index cannot be verified); ``False`` after answering 503 when it cannot be reopened
        now (a damaged store included)."""
        searcher = self.server.searcher
        assert searcher is not None
        try:
            if searcher.refresh() and searcher.unverified:
                self.server.log_line(f"note: {printable(searcher.unverified)}")
        except Exception as exc:  # noqa: BLE001 - a store in the middle of a change: the next request tries again
            self._send(HTTPStatus.SERVICE_UNAVAILABLE, {"error": "the collection changed and cannot be reopened now "
                                                                 f"({type(exc).__name__}: {exc}); try again"[:1000]},
                       {"Retry-After": "1"})
            return False
        return True

    def _request(self) -> tuple[str, int]:
        """The question and k of a ``POST /query`` body (read only up to :data:`MAX_BODY_BYTES`)."""
        if self.headers.get("Transfer-Encoding") is not None:
            raise _BadRequest(HTTPStatus.NOT_IMPLEMENTED, "Transfer-Encoding is not supported: send Content-Length")
        lengths = self.headers.get_all("Content-Length") or []
        if not lengths:
            raise _BadRequest(HTTPStatus.LENGTH_REQUIRED, "a Content-Length header is required")
        if len(lengths) > 1 or not _LENGTH.fullmatch(lengths[0].strip()):
            raise _BadRequest(HTTPStatus.BAD_REQUEST, "Content-Length is not a number")
        length = int(lengths[0])
        try:
            if length > MAX_BODY_BYTES:
                if length <= 16 * MAX_BODY_BYTES:  # read it, so the client sees the answer instead of a reset
                    self.rfile.read(length)
                raise _BadRequest(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"the request body is over {MAX_BODY_BYTES} "
                                                                       "bytes")
            raw = self.rfile.read(length)
        except TimeoutError:
            raise _BadRequest(HTTPStatus.REQUEST_TIMEOUT, "the request body was not sent in time") from None
        if len(raw) < length:
            raise _BadRequest(HTTPStatus.BAD_REQUEST, "the request body is shorter than its Content-Length")
        self.server.reading(self, False)
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
        self._send(HTTPStatus.METHOD_NOT_ALLOWED, {"error": f"method {self.command} not allowed: {_ROUTES}"},
                   {"Allow": "GET, POST"})

    do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = do_TRACE = do_CONNECT = _not_allowed  # noqa: N815
