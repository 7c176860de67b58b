"""A client that keeps one HTTP/1.1 connection open across requests, as MCP hosts do.

Each request leaves in one write (headers and body together), with ``TCP_NODELAY``
set, so whatever waits on a kept-alive connection is the server's doing.
"""

from __future__ import annotations

import http.client
import json
import socket
import statistics
from typing import Any
from urllib.parse import urlsplit


class KeptAlive:
    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.path = parts.path + (f"?{parts.query}" if parts.query else "")
        self.headers = headers or {}
        self.sock = socket.create_connection((self.host, self.port), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.connections = 1

    def request(self, method: str = "GET", body: bytes = b"") -> tuple[int, bytes]:
        lines = [f"{method} {self.path} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        lines += [f"{name}: {value}" for name, value in self.headers.items()]
        if body or method == "POST":
            lines.append(f"Content-Length: {len(body)}")
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        # One response per request: a fresh reader cannot read past this one.
        response = http.client.HTTPResponse(self.sock, method=method)
        response.begin()
        payload = response.read()
        assert not response.will_close, "the server closed the kept-alive connection"
        return response.status, payload

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        """A ``tools/call``; the structured result (tool errors included)."""
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": tool, "arguments": arguments},
            }
        ).encode()
        status, payload = self.request("POST", body)
        assert status == 200, payload
        return dict(json.loads(payload)["result"]["structuredContent"])

    def close(self) -> None:
        self.sock.close()


def median(samples: list[float]) -> float:
    return float(statistics.median(samples))


def mcp_headers(token: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    }
