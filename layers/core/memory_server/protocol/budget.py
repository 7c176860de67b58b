"""The one budget formatter (docs/contract.md §6), in bytes on what is sent.

Everything here cuts UTF-8 only at character boundaries. The domain returns whole
results (:mod:`memory_server.domain.results`); the protocol layer hands :func:`fit_search` and
:func:`fit_list` a :class:`Sizer` built on its exact serializer, and they shrink the
result until the serialized response fits :data:`~memory_server.domain.limits.RESPONSE_MAX_BYTES`.

Sizing is additive, not a re-serialization per probe: a JSON response is the
encoding of its parts, so its size is the size of the result with an empty list
plus what each item adds (once in ``structuredContent``, once escaped inside the
text block) plus one comma between items in each. The fitted response is then
measured whole once; should it still be over (an encoder that escaped what the
parts did not), the same search runs again measuring whole responses.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Protocol

from memory_server.domain.errors import invalid
from memory_server.domain.limits import (
    BRIEF_CONTENT_BYTES,
    MIN_EXCERPT_BYTES,
    RESPONSE_MAX_BYTES,
    SEARCH_EXCERPT_BYTES,
    SEARCH_MAX_HITS,
)
from memory_server.domain.results import TRUST, Brief, ListPage, SearchResult
from memory_server.domain.utf8 import utf8_prefix


class Sizer(Protocol):
    def size(self, structured: dict[str, Any]) -> int:
        """Bytes of the whole response carrying ``structured`` as a tool result."""
        ...

    def fragment(self, value: Any) -> int:
        """Bytes ``value`` adds to that response as one element of a list in it."""
        ...

    def text(self, value: str) -> int:
        """Bytes the characters of ``value`` add to a string of such an element (JSON
        escapes each character on its own, so this is additive)."""
        ...


def jsonrpc_tool_result_size(result: dict[str, Any]) -> int:
    """Conservative size of a ``tools/call`` response carrying ``result``.

    Counts ``structuredContent`` plus the same JSON as a text block, ASCII-escaped
    (the costliest encoding either protocol generation uses), with room for a long
    request id and response metadata. For callers without a request (the Python API);
    the MCP layer sizes with its exact serializer.
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


class ConservativeSizer:
    """:class:`Sizer` for results served outside a JSON-RPC request."""

    def size(self, structured: dict[str, Any]) -> int:
        return jsonrpc_tool_result_size(structured)

    def fragment(self, value: Any) -> int:
        text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
        return len(text) + len(json.dumps(text, ensure_ascii=True)) - 2

    def text(self, value: str) -> int:
        escaped = json.dumps(value, ensure_ascii=True)[1:-1]
        return len(escaped) + len(json.dumps(escaped, ensure_ascii=True)) - 2


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


def fit_leading(count: int, size_of: Callable[[int], int], limit: int = RESPONSE_MAX_BYTES) -> int:
    """How many of ``count`` leading items a response can carry within ``limit``, given
    ``size_of(n)``, the exact size of the whole response with the first ``n`` (for
    protocol results that are not tool results: prompts, completions)."""
    if count == 0:
        return 0
    return largest_fitting(1, count, size_of, limit) or 0


SizeOf = Callable[[dict[str, Any], Sequence[Any]], int]  # (result with [] list, items)


def _additive(sizer: Sizer) -> SizeOf:
    # A fit probes the same items (and the same empty result) many times over; each is
    # sized once. Keyed by identity, holding the object so that its id stays its own.
    sized: dict[int, tuple[Any, int]] = {}

    def once(value: Any, measure: Callable[[Any], int]) -> int:
        hit = sized.get(id(value))
        if hit is None:
            hit = sized[id(value)] = (value, measure(value))
        return hit[1]

    def size_of(empty: dict[str, Any], items: Sequence[Any]) -> int:
        commas = 2 * (len(items) - 1) if items else 0
        fragments = sum(once(item, sizer.fragment) for item in items)
        return once(empty, sizer.size) + fragments + commas

    return size_of


def _whole(sizer: Sizer, key: str) -> SizeOf:
    return lambda empty, items: sizer.size({**empty, key: list(items)})


def _fitted(
    fit: Callable[[SizeOf], dict[str, Any]],
    sizer: Sizer,
    key: str,
    limit: int,
    additive: SizeOf | None = None,
) -> dict[str, Any]:
    try:
        result = fit(additive or _additive(sizer))
        if sizer.size(result) <= limit:
            return result
    except UnicodeEncodeError:  # a part the serializer sends escaped: measure whole
        pass
    return fit(_whole(sizer, key))


def fit_search(
    found: SearchResult, sizer: Sizer, limit: int = RESPONSE_MAX_BYTES
) -> dict[str, Any]:
    """The search result as sent: hits with excerpts, shrunk to fit ``limit``.

    Excerpts are first cut to ``SEARCH_EXCERPT_BYTES`` (the per-excerpt rule, not a
    truncation). If the response is still too big, all excerpts shrink to one common
    byte cap, the largest that fits; below ``MIN_EXCERPT_BYTES`` the lowest-ranked hit
    is dropped instead. ``truncated`` is set whenever either happened.
    """
    hits = found.hits[:SEARCH_MAX_HITS]
    base = [utf8_prefix(hit.excerpt, SEARCH_EXCERPT_BYTES)[0] for hit in hits]
    made: dict[tuple[int, str], dict[str, Any]] = {}
    hit_of: dict[int, int] = {}  # id(item) -> its hit

    def item(i: int, cap: int) -> dict[str, Any]:
        # One object per distinct excerpt, so the sizer measures each once.
        excerpt = utf8_prefix(base[i], cap)[0]
        key = (i, excerpt)
        if key not in made:
            made[key] = {**hits[i].summary, "excerpt": excerpt}
            hit_of[id(made[key])] = i
        return made[key]

    def chosen(n: int, cap: int) -> list[dict[str, Any]]:
        return [item(i, cap) for i in range(n)]

    def result(items: list[dict[str, Any]], truncated: bool) -> dict[str, Any]:
        return {"hits": items, "truncated": truncated, "recall": found.recall, "trust": TRUST}

    def fit(size_of: SizeOf) -> dict[str, Any]:
        count = len(hits)
        first = chosen(count, SEARCH_EXCERPT_BYTES)
        over = count < len(found.hits)
        if size_of(result([], over), first) <= limit:
            return result(first, over)
        empty = result([], True)
        while count > 0:
            sized = partial(lambda n, cap: size_of(empty, chosen(n, cap)), count)
            cap = largest_fitting(MIN_EXCERPT_BYTES, SEARCH_EXCERPT_BYTES, sized, limit)
            if cap is not None:
                return result(chosen(count, cap), True)
            count -= 1
        if size_of(empty, []) > limit:
            raise invalid("the response cannot fit the byte budget")
        return empty

    # Additive sizing as for any list, but a hit whose excerpt is cut again is not
    # serialized again: it adds what its summary with an empty excerpt adds, plus
    # what the excerpt's characters add (a fit probes each hit at 5-6 lengths).
    bare: dict[int, int] = {}
    texts: dict[str, int] = {}
    empties = _additive(sizer)

    def item_size(value: dict[str, Any]) -> int:
        i = hit_of[id(value)]
        if i not in bare:
            bare[i] = sizer.fragment({**hits[i].summary, "excerpt": ""})
        excerpt = value["excerpt"]
        if excerpt not in texts:
            texts[excerpt] = sizer.text(excerpt)
        return bare[i] + texts[excerpt]

    def additive(empty: dict[str, Any], items: Sequence[Any]) -> int:
        commas = 2 * (len(items) - 1) if items else 0
        return empties(empty, []) + sum(item_size(value) for value in items) + commas

    return _fitted(fit, sizer, "hits", limit, additive)


def fit_list(page: ListPage, sizer: Sizer, limit: int = RESPONSE_MAX_BYTES) -> dict[str, Any]:
    """The list page as sent: as many leading items as fit ``limit``, and the cursor
    after the last one sent."""

    def result(n: int, items: list[dict[str, Any]]) -> dict[str, Any]:
        return {"items": items, "next_cursor": page.next_cursor(n), "trust": TRUST}

    def fit(size_of: SizeOf) -> dict[str, Any]:
        def sized(n: int) -> int:
            return size_of(result(n, []), page.items[:n])

        fitting = largest_fitting(1, len(page.items), sized, limit) if page.items else None
        n = fitting or 0
        return result(n, page.items[:n])

    return _fitted(fit, sizer, "items", limit)


def fit_brief(brief: Brief, sizer: Sizer) -> dict[str, Any]:
    """The briefing as a tool result, within ``brief.max_bytes`` on the bytes sent."""
    return brief_within(brief, sizer.size)


def brief_within(brief: Brief, size: Callable[[dict[str, Any]], int]) -> dict[str, Any]:
    """The briefing within ``brief.max_bytes`` of a response whose exact size, carrying
    a briefing, ``size`` measures (a tool result, or the prompt memory-briefing).

    Whole if it fits. Otherwise every pinned record's content is cut to one common
    byte cap, the largest that fits; if even ``MIN_EXCERPT_BYTES`` of each does not,
    items are dropped from the end (skills, then recent changes, then pinned
    records) until the rest fits, and their contents then get the largest cap that
    fits. ``truncated`` says the budget cut something; an item's own ``truncated``
    that its content does not go on to its end.
    """
    limit = brief.max_bytes
    heads = [utf8_prefix(p.content, BRIEF_CONTENT_BYTES) for p in brief.pinned]
    longest = max((len(text.encode("utf-8")) for text, _ in heads), default=0)
    items = len(brief.pinned) + len(brief.recent) + len(brief.skills)

    def result(n: int, cap: int) -> dict[str, Any]:
        """The first ``n`` items (pinned, recent, skills in order), contents at ``cap``."""
        pinned, cut_any = [], False
        for record, (head, short) in zip(brief.pinned[:n], heads, strict=False):
            content, cut = utf8_prefix(head, cap)
            cut_any = cut_any or cut
            pinned.append(
                {**record.summary, "content": content, "truncated": record.cut or short or cut}
            )
        rest = n - len(pinned)
        recent = brief.recent[:rest]
        skills = brief.skills[: rest - len(recent)]
        return {
            "pinned": pinned,
            "recent": recent,
            "skills": skills,
            "truncated": cut_any or n < items,
            "trust": TRUST,
        }

    if size(result(items, longest)) <= limit:
        return result(items, longest)
    floor = min(MIN_EXCERPT_BYTES, longest)
    n = items
    if size(result(n, floor)) > limit:
        fitting = largest_fitting(0, items, lambda k: size(result(k, floor)), limit)
        if fitting is None:
            raise invalid("the briefing cannot fit max_bytes")
        n = fitting
    cap = largest_fitting(floor, longest, lambda c: size(result(n, c)), limit)
    return result(n, floor if cap is None else cap)
