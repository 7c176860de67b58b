"""Which web origins and hosts may reach the service (docs/contract.md §1).

The Streamable HTTP transport requires servers to validate ``Origin`` against DNS
rebinding: a page on another site must not be able to drive the endpoint from a
user's browser. A request that carries an ``Origin`` must come from one of the
deployment's own origins (``PUBLIC_BASE_URL`` and the domain the request arrived
on) or from an origin in ``ALLOWED_ORIGINS``; a request without one (any non-browser
client) is not affected. ``ALLOWED_HOSTS``, when set, also pins the ``Host`` header:
``make dev`` sets it to the loopback names, since a loopback server is what a
rebinding attack reaches. In AWS, API Gateway only delivers requests for its own
domains, so the template leaves it unset.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from memory_server.domain.errors import EdgeError
from memory_server.gateway.events import request_headers

ANY_PORT = "*"
_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_key(value: str, *, wildcard: bool = False) -> tuple[str, str, str] | None:
    """``(scheme, host, port)`` of an origin, normalized (lowercase, default port
    dropped), or ``None`` when ``value`` is not a plain ``scheme://host[:port]``.
    With ``wildcard``, the port may be ``*`` (any port)."""
    text = value.strip()
    if wildcard and text.endswith(":" + ANY_PORT):
        text, port_text = text[: -len(ANY_PORT) - 1], ANY_PORT
    else:
        port_text = ""
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return None
    if (
        parts.scheme not in _DEFAULT_PORTS
        or not parts.hostname
        or parts.username is not None
        or parts.password is not None
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
        or (port_text and port is not None)
    ):
        return None
    if not port_text and port is not None and port != _DEFAULT_PORTS[parts.scheme]:
        port_text = str(port)
    return parts.scheme, parts.hostname.lower(), port_text


def host_name(value: str) -> str | None:
    """The host name of a ``Host`` header (port and IPv6 brackets removed), lowercase."""
    try:
        parts = urlsplit(f"//{value.strip()}")
        parts.port  # noqa: B018 - raises for a malformed port
    except ValueError:
        return None
    if not parts.hostname or parts.username is not None or parts.path:
        return None
    return parts.hostname.lower()


def parse_list(value: str | None) -> tuple[str, ...]:
    """A comma-separated setting as a tuple of its non-empty, trimmed entries."""
    return tuple(item.strip() for item in (value or "").split(",") if item.strip())


def origin_not_allowed() -> EdgeError:
    return EdgeError(403, "origin_not_allowed", body={"error": "origin_not_allowed"})


def host_not_allowed() -> EdgeError:
    return EdgeError(403, "host_not_allowed", body={"error": "host_not_allowed"})


@dataclass(frozen=True, slots=True)
class OriginPolicy:
    """The deployment's own origins plus ``allowed_origins``; ``allowed_hosts``
    (empty: not checked) for the ``Host`` header."""

    allowed_origins: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()
    public_base_url: str | None = None

    def __post_init__(self) -> None:
        for origin in self.allowed_origins:
            if origin_key(origin, wildcard=True) is None:
                raise RuntimeError(
                    f"ALLOWED_ORIGINS: not an origin (scheme://host[:port]): {origin}"
                )
        for host in self.allowed_hosts:
            if host_name(host) is None:
                raise RuntimeError(f"ALLOWED_HOSTS: not a host name: {host}")

    def check(self, event: Mapping[str, Any]) -> None:
        """Raise a 403 ``EdgeError`` for a request from a foreign origin or host."""
        headers = request_headers(event)
        if self.allowed_hosts:
            host = headers.get("host")
            allowed = {host_name(name) for name in self.allowed_hosts}
            if host is None or host_name(host) not in allowed:
                raise host_not_allowed()
        origin = headers.get("origin")
        if origin is not None and not self.allows(origin, event):
            raise origin_not_allowed()

    def allows(self, origin: str, event: Mapping[str, Any]) -> bool:
        key = origin_key(origin)
        if key is None:  # "null" (sandboxed pages, file:), or anything malformed
            return False
        scheme, host, port = key
        own = [f"https://{event.get('requestContext', {}).get('domainName', '')}"]
        if self.public_base_url:
            base = urlsplit(self.public_base_url)
            own.append(f"{base.scheme}://{base.netloc}")
        if key in {origin_key(value) for value in own}:
            return True
        for entry in self.allowed_origins:
            allowed = origin_key(entry, wildcard=True)
            if allowed is not None and allowed in ((scheme, host, port), (scheme, host, ANY_PORT)):
                return True
        return False
