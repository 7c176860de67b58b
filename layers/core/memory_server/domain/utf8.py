"""Cutting text to a number of UTF-8 bytes without splitting a character: titles,
descriptions, excerpts and a read's byte window."""

from __future__ import annotations

from memory_server.domain.errors import invalid


def utf8_prefix(text: str, max_bytes: int) -> tuple[str, bool]:
    """The longest prefix of ``text`` within ``max_bytes`` UTF-8 bytes, and whether it was cut."""
    encoded = text.encode("utf-8")
    if len(encoded) <= max_bytes:
        return text, False
    cut = max(max_bytes, 0)
    # Step back over continuation bytes (10xxxxxx) to land on a character start.
    while cut > 0 and (encoded[cut] & 0xC0) == 0x80:
        cut -= 1
    return encoded[:cut].decode("utf-8"), True


def utf8_window(text: str, offset: int, max_bytes: int) -> tuple[str, int | None]:
    """Bytes ``[offset, offset + max_bytes)`` of ``text``, cut back to a character boundary.

    Returns the chunk and the offset to continue from (``None`` at the end).
    """
    encoded = text.encode("utf-8")
    if offset > len(encoded):
        raise invalid(f"offset {offset} is beyond the end of the content ({len(encoded)} bytes)")
    if offset < len(encoded) and (encoded[offset] & 0xC0) == 0x80:
        raise invalid("offset must fall on a UTF-8 character boundary (use next_offset)")
    end = min(offset + max_bytes, len(encoded))
    while end < len(encoded) and end > offset and (encoded[end] & 0xC0) == 0x80:
        end -= 1
    if end == offset and offset < len(encoded):
        raise invalid("max_bytes is smaller than the next character")
    chunk = encoded[offset:end].decode("utf-8")
    return chunk, (end if end < len(encoded) else None)
