"""Short signed values the front door hands out and takes back: its state at the pool,
the authorization codes it gives metadata-document clients, its refresh tokens.

``seal(key, purpose, payload)`` is the payload (JSON, base64url) and an HMAC-SHA256 over
the purpose and the payload; :func:`unseal` gives the payload back only if the mac is
right, the purpose the same and its ``exp`` (epoch seconds) not passed. Signed, not
encrypted: nothing sealed is secret from the one who holds it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from typing import Any


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(key: bytes, purpose: str, body: str) -> str:
    return _b64(hmac.new(key, f"memory-server {purpose}\n{body}".encode(), hashlib.sha256).digest())


def seal(key: bytes, purpose: str, payload: dict[str, Any], ttl_s: float) -> str:
    body = _b64(
        json.dumps({**payload, "exp": int(time.time() + ttl_s)}, separators=(",", ":")).encode()
    )
    return f"{body}.{_mac(key, purpose, body)}"


def unseal(key: bytes, purpose: str, value: str, now: float | None = None) -> dict[str, Any] | None:
    body, dot, mac = value.partition(".")
    if not dot or not hmac.compare_digest(mac.encode(), _mac(key, purpose, body).encode()):
        return None
    try:
        payload = json.loads(_unb64(body))
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return None
    if not isinstance(payload, dict) or not isinstance(payload.get("exp"), int):
        return None
    if payload["exp"] < (time.time() if now is None else now):
        return None
    return payload
