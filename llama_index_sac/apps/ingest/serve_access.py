"""Who may ask ``llama-sac serve``: the checks every request passes before it is routed, in this order.

1. ``Host`` is the address listened on or a name allowed (:meth:`ServeSettings.host_names`), with the server's port
   when a port is given: else 421. A page the user visits cannot then reach the server through a name that it
   controls and rebinds to 127.0.0.1 (DNS rebinding).
2. ``Origin``, when a browser sends one, is the server's own (an allowed name on the server's port, or any port of a
   name in ``allow_hosts``, the name a proxy serves): else 403. ``Sec-Fetch-Site: cross-site`` is refused too.
3. The bearer token (``Authorization: Bearer TOKEN``, compared in constant time), when one is set: else 401.

``POST /query`` must then say ``Content-Type: application/json`` (a ``charset`` of UTF-8 allowed): else 415. A web
page can send only form and plain-text bodies without a CORS preflight, which this server never answers.
"""

from __future__ import annotations

import hmac
from email.message import Message
from http import HTTPStatus
from urllib.parse import urlsplit

from llama_index_sac.apps.ingest.serve_settings import ServeSettings

__all__ = ["Refusal", "check_access", "check_content_type"]

Refusal = tuple[HTTPStatus, str]


def _split_host(value: str) -> tuple[str, int | None] | None:
    """``(name, port)`` of a Host value (``name``, ``name:port``, ``[v6]``, ``[v6]:port``); ``None`` when malformed."""
    try:
        parts = urlsplit("//" + value)
        name, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not name or parts.username is not None or parts.path or parts.query or parts.fragment:
        return None
    return name.rstrip("."), port


def check_access(settings: ServeSettings, port: int, headers: Message) -> Refusal | None:
    """The refusal of a request whose headers fail the checks of the module docstring, or ``None``.

    Args:
        settings: the server's settings.
        port: the port the server listens on (the real one when ``settings.port`` is 0).
        headers: the request's headers.
    """
    names = settings.host_names()
    hosts = headers.get_all("Host") or []
    if len(hosts) != 1:
        return HTTPStatus.BAD_REQUEST, "exactly one Host header is required"
    host = _split_host(hosts[0].strip())
    if host is None or host[0] not in names or host[1] not in (None, port):
        return HTTPStatus.MISDIRECTED_REQUEST, (f"Host {hosts[0][:100]!r} is not this server's: use "
                                                f"{settings.host}:{port}, or allow the name with --allow-host")
    origins = headers.get_all("Origin") or []
    if origins:
        origin = urlsplit(origins[0].strip()) if len(origins) == 1 else None
        try:
            origin_port = None if origin is None else origin.port or {"http": 80, "https": 443}.get(origin.scheme)
        except ValueError:
            origin_port = None
        name = origin.hostname.rstrip(".") if origin is not None and origin.hostname else ""
        own = origin is not None and origin.scheme in ("http", "https") and name in names and (
            origin_port == port or name in settings.allow_hosts)
        if not own:
            return HTTPStatus.FORBIDDEN, f"cross-origin requests are refused (Origin {origins[0][:100]!r})"
    if (headers.get("Sec-Fetch-Site") or "").strip().lower() == "cross-site":
        return HTTPStatus.FORBIDDEN, "cross-origin requests are refused (Sec-Fetch-Site: cross-site)"
    if settings.token is not None:
        given = (headers.get("Authorization") or "").strip()
        scheme, _, token = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode("utf-8", "replace"),
                                                                 settings.token.encode("ascii")):
            return HTTPStatus.UNAUTHORIZED, "a valid bearer token is required (Authorization: Bearer TOKEN)"
    return None


def check_content_type(value: str | None) -> Refusal | None:
    """The refusal (415) of a ``POST /query`` whose Content-Type is not JSON in UTF-8, or ``None``."""
    media, *params = (value or "").split(";")
    charset = [p.split("=", 1)[1].strip().strip('"').lower() for p in params
               if p.strip().lower().startswith("charset=")]
    if media.strip().lower() != "application/json" or any(c not in ("utf-8", "utf8") for c in charset):
        shown = "none" if value is None else repr(value[:100])
        return HTTPStatus.UNSUPPORTED_MEDIA_TYPE, (f"Content-Type must be application/json (got {shown})")
    return None
