"""The options of ``llama-sac serve``: where it listens, who may ask (:class:`ServeSettings`), and the rule that a
server reachable beyond loopback requires a bearer token.

A token is read from ``--token`` or the environment variable :data:`TOKEN_ENV` (preferred: a command line is visible
to every local user in ``ps``). It must be 16 to 256 printable ASCII characters without spaces, so that it fits an
``Authorization: Bearer`` header as it is.
"""

from __future__ import annotations

import ipaddress

from llama_index.core.bridge.pydantic import BaseModel, Field, field_validator, model_validator

__all__ = ["TOKEN_ENV", "ServeSettings", "is_loopback", "is_wildcard"]

#: The environment variable that holds the bearer token.
TOKEN_ENV = "LLAMA_SAC_SERVE_TOKEN"
_TOKEN_CHARS = frozenset(chr(c) for c in range(0x21, 0x7F))


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or a name) is this machine's loopback: ``localhost`` or a loopback address."""
    address = _address(host)
    return host.lower().rstrip(".") == "localhost" if address is None else address.is_loopback


def is_wildcard(host: str) -> bool:
    """Whether ``host`` is an address that listens on every interface (``0.0.0.0``, ``::``)."""
    address = _address(host)
    return address is not None and address.is_unspecified


class ServeSettings(BaseModel):
    """Where ``llama-sac serve`` listens and what it accepts.

    Raises:
        ValueError (pydantic ``ValidationError``): a bad value; a host beyond loopback without a token; a wildcard
            host (``0.0.0.0``) without ``allow_hosts``.
    """

    host: str = Field(default="127.0.0.1", min_length=1, max_length=253,
                      description="Address to listen on (loopback by default: nothing else reaches it; any other "
                      "address requires a token).")
    port: int = Field(default=8765, ge=0, le=65535, description="Port (0: a free one, printed).")
    allow_hosts: list[str] = Field(default_factory=list, description="Host names (or addresses) clients may use in "
                                   "the Host header besides the address listened on (e.g. the name a reverse proxy "
                                   "forwards); any other Host is refused (DNS rebinding).")
    token: str | None = Field(default=None, repr=False, description="Bearer token every request must carry "
                              "(Authorization: Bearer TOKEN); required beyond loopback.")
    max_connections: int = Field(default=64, ge=1, le=4096, description="Connections served at once (one thread "
                                 "each); more are answered 503 at once.")
    read_timeout: float = Field(default=10.0, gt=0, le=3600, description="Seconds a connection may take to send "
                                "a request (its line, headers and body) or stay idle between requests.")
    access_log: bool = Field(default=True, description="One line per request on stderr: time, client, method, path, "
                             "status, milliseconds.")
    log_questions: bool = Field(default=False, description="Add each question's text to its access-log line (off: "
                                "questions can be confidential).")

    @field_validator("allow_hosts")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        out = []
        for name in value:
            clean = name.strip().lower().rstrip(".")
            if not clean or len(clean) > 253 or any(c.isspace() or c in "/@?#" for c in clean):
                raise ValueError(f"not a host name: {name[:100]!r}")
            out.append(clean.strip("[]"))
        return out

    @field_validator("token")
    @classmethod
    def _token(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not 16 <= len(value) <= 256 or not set(value) <= _TOKEN_CHARS:
            raise ValueError("the token must be 16 to 256 printable ASCII characters without spaces "
                             "(e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))')")
        return value

    @model_validator(mode="after")
    def _beyond_loopback(self) -> ServeSettings:
        if not is_loopback(self.host) and self.token is None:
            raise ValueError(f"listening on {self.host} (beyond loopback) requires a token: set {TOKEN_ENV} (or "
                             "--token) and send it as Authorization: Bearer TOKEN")
        if is_wildcard(self.host) and not self.allow_hosts:
            raise ValueError(f"listening on {self.host} (every interface): name the host names or addresses clients "
                             "use with --allow-host")
        return self

    def host_names(self) -> frozenset[str]:
        """The names a request's Host may carry: the address listened on, ``allow_hosts`` and, on loopback,
        ``localhost``, ``127.0.0.1`` and ``::1`` (lower case, IPv6 without brackets)."""
        names = {self.host.lower().strip("[]").rstrip("."), *self.allow_hosts}
        if is_loopback(self.host):
            names |= {"localhost", "127.0.0.1", "::1"}
        return frozenset(names)
