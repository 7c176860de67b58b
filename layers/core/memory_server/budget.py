"""Budgets (docs/contract.md §6), counted in bytes on what is actually sent.

Everything here cuts UTF-8 only at character boundaries. The search and list
formatters shrink a result until the serialized response, measured by a
``ResponseSizer`` supplied by the protocol layer, fits the byte limit.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from .errors import invalid

SEARCH_MAX_HITS = 8
SEARCH_EXCERPT_BYTES = 500
RESPONSE_MAX_BYTES = 8192
LIST_MAX_ITEMS = 50
TITLE_MAX_BYTES = 200
DEFAULT_DEADLINE_S = 3.0
# Below this an excerpt carries too little to be worth a hit's slot; drop hits instead.
MIN_EXCERPT_BYTES = 48

ResponseSizer = Callable[[dict[str, Any]], int]


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


def jsonrpc_tool_result_size(result: dict[str, Any]) -> int:
    """Conservative size of a ``tools/call`` response carrying ``result``.

    Counts ``structuredContent`` plus the same JSON as a text block, ASCII-escaped
    (the costliest encoding either protocol generation uses), with room for a long
    request id and response metadata. The MCP layer passes its exact serializer.
    """
    structured = json.dumps(result, ensure_ascii=True, separators=(",", ":"))
    envelope = {
        "jsonrpc": "2.0",
        "id": "x" * 64,
        "result": {
            "content": [{"type": "text", "text": structured}],
            "structuredContent": result,
            "isError": False,
            "_meta": {"x" * 32: "x" * 96},
        },
    }
    return len(json.dumps(envelope, ensure_ascii=True, separators=(",", ":")).encode())


def largest_fitting(low: int, high: int, size_of: Callable[[int], int], limit: int) -> int | None:
    """The largest ``n`` in ``[low, high]`` with ``size_of(n) <= limit``, for a size that
    grows with ``n``; ``None`` when even ``low`` does not fit.

    Interpolation, not plain bisection: a response's size grows nearly linearly with
    the bytes or items it holds, so each guess lands at or next to the answer: a
    search that must shrink 8 full excerpts is sized 5-6 times in all instead of about
    11 (each time about 0.1 ms).
    """
    size_low = size_of(low)
    if size_low > limit:
        return None
    size_high = size_of(high)
    if size_high <= limit:
        return high
    while low < high:
        # size_low <= limit < size_high: guess where the limit falls, strictly above low
        # and at most high, so every step narrows the range.
        guess = low + (limit - size_low) * (high - low) // max(size_high - size_low, 1)
        guess = min(max(guess, low + 1), high)
        size = size_of(guess)
        if size <= limit:
            low, size_low = guess, size
        else:
            high, size_high = guess - 1, size
    return low


def fit_search_hits(
    hits: Sequence[dict[str, Any]],
    excerpts: Sequence[str],
    make_result: Callable[[list[dict[str, Any]], bool], dict[str, Any]],
    sizer: ResponseSizer,
    limit: int = RESPONSE_MAX_BYTES,
) -> dict[str, Any]:
    """Attach excerpts to ``hits`` and shrink until the serialized response fits ``limit``.

    Excerpts are first cut to ``SEARCH_EXCERPT_BYTES`` (the per-excerpt rule, not a
    truncation). If the response is still too big, all excerpts shrink to one common
    byte cap, the largest that fits; below ``MIN_EXCERPT_BYTES`` the lowest-ranked hit
    is dropped instead. ``truncated`` is set whenever either happened.
    """
    base = [utf8_prefix(e, SEARCH_EXCERPT_BYTES)[0] for e in excerpts]
    count = min(len(hits), SEARCH_MAX_HITS)

    def build(n: int, cap: int, truncated: bool) -> dict[str, Any]:
        chosen = [{**hits[i], "excerpt": utf8_prefix(base[i], cap)[0]} for i in range(n)]
        return make_result(chosen, truncated)

    result = build(count, SEARCH_EXCERPT_BYTES, count < len(hits))
    if sizer(result) <= limit:
        return result

    def shrunk_size(n: int, cap: int) -> int:
        return sizer(build(n, cap, True))

    while count > 0:
        sized = partial(shrunk_size, count)
        cap = largest_fitting(MIN_EXCERPT_BYTES, SEARCH_EXCERPT_BYTES, sized, limit)
        if cap is not None:
            return build(count, cap, True)
        count -= 1
    result = build(0, 0, True)
    if sizer(result) > limit:
        raise invalid("the response cannot fit the byte budget")
    return result


def fit_list_items(
    items: Sequence[dict[str, Any]],
    make_result: Callable[[list[dict[str, Any]]], dict[str, Any]],
    sizer: ResponseSizer,
    limit: int = RESPONSE_MAX_BYTES,
) -> int:
    """How many leading ``items`` fit the response budget (at least one if any fit)."""
    if not items:
        return 0
    fitting = largest_fitting(1, len(items), lambda n: sizer(make_result(list(items[:n]))), limit)
    return fitting or 0
