"""Opaque, signed, expiring cursors bound to who asked and from where (docs/contract.md §6)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import Any

from memory_server.domain.errors import invalid
from memory_server.domain.limits import CURSOR_MAX_CHARS, CURSOR_TTL_S


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _binding_digest(binding: Mapping[str, Any]) -> str:
    canonical = json.dumps(binding, sort_keys=True, separators=(",", ":"))
    return _b64(hashlib.sha256(canonical.encode()).digest()[:16])


def encode_cursor(
    secret: bytes, binding: Mapping[str, Any], position: Any, *, now: float | None = None
) -> str:
    issued = time.time() if now is None else now
    payload = {"b": _binding_digest(binding), "p": position, "e": int(issued) + CURSOR_TTL_S}
    body = json.dumps(payload, separators=(",", ":")).encode()
    signature = hmac.new(secret, body, hashlib.sha256).digest()
    return f"{_b64(body)}.{_b64(signature)}"


def decode_cursor(
    secret: bytes, cursor: object, binding: Mapping[str, Any], *, now: float | None = None
) -> Any:
    """The position stored in ``cursor``, if it was issued to this exact binding."""
    if not isinstance(cursor, str) or cursor.count(".") != 1 or len(cursor) > CURSOR_MAX_CHARS:
        raise invalid("cursor is not valid")
    body_text, signature_text = cursor.split(".")
    try:
        body = _unb64(body_text)
        signature = _unb64(signature_text)
    except ValueError:
        raise invalid("cursor is not valid") from None
    expected = hmac.new(secret, body, hashlib.sha256).digest()
    if not hmac.compare_digest(expected, signature):
        raise invalid("cursor is not valid")
    payload = json.loads(body)
    if payload.get("b") != _binding_digest(binding):
        raise invalid("cursor was issued for another caller, workspace, context, grants or prefix")
    if (time.time() if now is None else now) > payload.get("e", 0):
        raise invalid("cursor has expired; list again from the start")
    return payload.get("p")
