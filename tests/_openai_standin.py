"""A local OpenAI-compatible stand-in server for the LLM fault tests (loopback only, bounded, stdlib only).

:class:`OpenAIStandIn` serves ``POST /v1/chat/completions`` and ``POST /v1/completions`` on ``127.0.0.1`` (port 0:
the OS picks a free port) from a ``ThreadingHTTPServer`` in a background thread. Each request gets a scripted
:class:`Reply`: an answer (optionally slow, optionally ``finish_reason="length"``), an HTTP error status (optionally
with ``Retry-After``), a malformed JSON body, or a dropped connection. Every request is recorded with its arrival
time (:class:`Received`), so tests assert on what the server saw rather than on how long the client took.

Bounded: the serving loop stops by itself after ``lifetime`` seconds, slow replies never outlive the server, and
:meth:`OpenAIStandIn.close` stops it at once. :meth:`OpenAIStandIn.kill` turns the HTTP server into a socket that
accepts each connection and closes it without a byte (the client sees the server vanish) while counting those
connection attempts (:meth:`OpenAIStandIn.revive` serves again); after :meth:`OpenAIStandIn.close` the port
refuses connections.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

__all__ = ["OpenAIStandIn", "Received", "Reply", "answer", "drop", "http_date", "malformed", "status"]


@dataclass(frozen=True)
class Reply:
    """What the stand-in does with one request (build it with :func:`answer`, :func:`status`, :func:`malformed` or
    :func:`drop`). ``delay`` is in seconds, before anything is written."""

    kind: Literal["answer", "status", "malformed", "drop"]
    text: str = "Stand-in summary of the document."
    code: int = 200
    retry_after: str | None = None
    delay: float = 0.0
    finish_reason: str = "stop"


def answer(text: str = "Stand-in summary of the document.", *, delay: float = 0.0,
           finish_reason: str = "stop") -> Reply:
    """A 200 completion whose content is ``text`` (after ``delay`` seconds)."""
    return Reply("answer", text=text, delay=delay, finish_reason=finish_reason)


def status(code: int, *, retry_after: str | None = None) -> Reply:
    """An HTTP error ``code`` with an OpenAI-style error body and, when given, a ``Retry-After`` header value."""
    return Reply("status", code=code, retry_after=retry_after)


def malformed() -> Reply:
    """A 200 ``application/json`` response whose body is cut off mid-JSON."""
    return Reply("malformed")


def drop() -> Reply:
    """Read the request, then close the connection without sending a response."""
    return Reply("drop")


def http_date(epoch_seconds: float) -> str:
    """``epoch_seconds`` as an RFC 9110 IMF-fixdate (``Sun, 06 Nov 1994 08:49:37 GMT``; whole seconds)."""
    from datetime import datetime, timezone

    return format_datetime(datetime.fromtimestamp(int(epoch_seconds), tz=timezone.utc), usegmt=True)


@dataclass(frozen=True)
class Received:
    """One request as the server saw it: ``time`` (``time.monotonic()``) and ``wall`` (``time.time()``) when its
    body had been read, the path, the prompt text (last chat message, or the completion prompt) and the reply."""

    time: float
    wall: float
    path: str
    prompt: str
    reply: Reply


def _prompt_of(path: str, payload: Any) -> str:
    if not isinstance(payload, dict):
        return ""
    if path.endswith("/chat/completions"):
        messages = payload.get("messages") or [{}]
        content = messages[-1].get("content", "") if isinstance(messages[-1], dict) else ""
        if isinstance(content, list):  # content parts
            return "".join(p.get("text", "") for p in content if isinstance(p, dict))
        return str(content)
    return str(payload.get("prompt", ""))


class OpenAIStandIn:
    """The stand-in server; use it as a context manager (or call :meth:`close`).

    Args:
        script: replies for the 1st, 2nd... request in arrival order; after it, ``default``.
        responder: optional ``(prompt, index) -> Reply | None`` consulted first (``index`` is the 0-based arrival
            index), for replies that depend on the request rather than on its order.
        default: the reply once ``script`` is used up.
        lifetime: seconds after which the server stops by itself.
        keep_alive: answer as HTTP/1.1 and keep connections open between requests (as real servers do), instead
            of HTTP/1.0 with one connection per request.
    """

    def __init__(self, script: Sequence[Reply] = (), *, responder: Callable[[str, int], Reply | None] | None = None,
                 default: Reply | None = None, lifetime: float = 30.0, keep_alive: bool = False) -> None:
        self._script = list(script)
        self._responder = responder
        self._default = default or answer()
        self._deadline = time.monotonic() + lifetime
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._dead = False
        self.received: list[Received] = []
        self.connections_after_kill = 0
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                standin._handle(self)

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def process_request(self, request: Any, client_address: Any) -> None:
                if standin._dead:  # killed: accept, close, count
                    with standin._lock:
                        standin.connections_after_kill += 1
                    self.shutdown_request(request)
                    return
                super().process_request(request, client_address)

        self._server = Server(("127.0.0.1", 0), Handler)
        self._server.timeout = 0.05
        self.port = int(self._server.server_address[1])
        self.base = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._serve, name="openai-standin", daemon=True)
        self._thread.start()

    # -- lifecycle -----------------------------------------------------------------------------------------
    def _serve(self) -> None:
        try:
            while not self._stop.is_set() and time.monotonic() < self._deadline:
                self._server.handle_request()
        finally:
            self._server.server_close()

    def kill(self) -> None:
        """From now on every connection is accepted and closed at once, without a response (and counted in
        ``connections_after_kill``)."""
        self._dead = True

    def revive(self) -> None:
        """Serve HTTP again after :meth:`kill`."""
        self._dead = False

    def close(self) -> None:
        """Stop serving and close the listening socket (the port then refuses connections)."""
        self._stop.set()
        self._thread.join(5)

    def __enter__(self) -> OpenAIStandIn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- requests ------------------------------------------------------------------------------------------
    @property
    def times(self) -> list[float]:
        """Arrival times (``time.monotonic()``) of the requests, in arrival order."""
        with self._lock:
            return [r.time for r in self.received]

    def _choose(self, prompt: str) -> Reply:
        with self._lock:
            index = len(self.received)
            reply = self._responder(prompt, index) if self._responder is not None else None
            if reply is None:
                reply = self._script.pop(0) if self._script else self._default
            return reply

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length > 0 else b""
        path = handler.path
        try:
            payload = json.loads(raw or b"{}")
        except ValueError:
            payload = {}
        prompt = _prompt_of(path, payload)
        reply = self._choose(prompt) if path in ("/v1/chat/completions", "/v1/completions") else status(404)
        with self._lock:
            self.received.append(Received(time.monotonic(), time.time(), path, prompt, reply))
        if reply.delay > 0:
            self._stop.wait(min(reply.delay, max(0.0, self._deadline - time.monotonic())))
        if reply.kind == "drop":
            handler.close_connection = True
            try:
                handler.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        headers = {"Content-Type": "application/json"}
        if reply.kind == "status":
            code = reply.code
            body = json.dumps({"error": {"message": f"stand-in status {code}", "type": "stand_in",
                                         "code": code}}).encode()
            if reply.retry_after is not None:
                headers["Retry-After"] = reply.retry_after
        elif reply.kind == "malformed":
            code, body = 200, b'{"id": "cmpl-standin", "object": "chat.completion", "choices": [{"index": 0, "mes'
        else:
            code, body = 200, json.dumps(self._completion(path, reply)).encode()
        try:
            handler.send_response(code)
            for key, value in headers.items():
                handler.send_header(key, value)
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
        except OSError:  # the client went away (cancelled or timed out)
            pass

    @staticmethod
    def _completion(path: str, reply: Reply) -> dict[str, Any]:
        usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        if path.endswith("/chat/completions"):
            choice: dict[str, Any] = {"index": 0, "finish_reason": reply.finish_reason, "logprobs": None,
                                      "message": {"role": "assistant", "content": reply.text}}
            kind = "chat.completion"
        else:
            choice = {"index": 0, "finish_reason": reply.finish_reason, "logprobs": None, "text": reply.text}
            kind = "text_completion"
        return {"id": "cmpl-standin", "object": kind, "created": 0, "model": "stand-in", "choices": [choice],
                "usage": usage}
