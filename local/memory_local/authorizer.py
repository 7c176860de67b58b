"""API Gateway's side of a Lambda REQUEST authorizer (HTTP API, payload 2.0, simple
responses), for the emulator in :mod:`memory_local.gateway`.

The authorizer itself is the deployed code (``memory_server.signin.authorizer``,
called in process as Lambda would call it); this module does what API Gateway does
around it, as the template configures it:

- identity sources ``$request.header.Authorization`` and ``$context.routeKey``: a
  request without an ``Authorization`` header gets 401 without a call;
- the result cache: an allow or deny is kept for ``ttl_s`` under the identity
  sources' values, and reused for every request with the same token on the same route;
- the answer: a failure with the message ``Unauthorized`` is 401
  ``{"message":"Unauthorized"}``; ``isAuthorized: false`` is 403
  ``{"message":"Forbidden"}``; any other failure or a malformed result is 500; an allow
  puts its ``context`` in the event as ``requestContext.authorizer.lambda``.

None of these answers carries ``WWW-Authenticate``: API Gateway adds none.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from memory_server.domain.limits import AUTHORIZER_CACHE_TTL_S

Handler = Callable[[dict[str, Any], Any], Any]


@dataclass(frozen=True)
class Outcome:
    kind: Literal["allow", "deny", "unauthorized", "error"]
    context: dict[str, Any] | None = None
    note: str = ""  # why, for the gateway's log line

    @property
    def status(self) -> int:
        return {"allow": 200, "deny": 403, "unauthorized": 401, "error": 500}[self.kind]


class LambdaAuthorizer:
    def __init__(
        self,
        handler: Handler,
        *,
        ttl_s: float = AUTHORIZER_CACHE_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.handler = handler
        self.ttl_s = ttl_s
        self.clock = clock
        self.invocations = 0  # calls of the function (cache hits are not calls)
        self._cache: dict[tuple[str, str], tuple[float, Outcome]] = {}
        self._lock = threading.Lock()

    def authorize(
        self, event: dict[str, Any], authorization: str | None, context: Any = None
    ) -> Outcome:
        """The outcome for an authorizer ``event`` (payload 2.0) of this request."""
        if not authorization:
            return Outcome("unauthorized", note="no Authorization header (no call)")
        key = (authorization, str(event.get("routeKey", "")))
        now = self.clock()
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None and cached[0] > now:
                return cached[1]
            self.invocations += 1
        outcome = self._call(event, context)
        if outcome.kind in ("allow", "deny") and self.ttl_s > 0:
            with self._lock:
                self._cache[key] = (now + self.ttl_s, outcome)
        return outcome

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()

    def _call(self, event: dict[str, Any], context: Any) -> Outcome:
        try:
            result = self.handler(event, context)
        except Exception as exc:
            if str(exc) == "Unauthorized":
                return Outcome("unauthorized", note=str(getattr(exc, "reason", "")))
            return Outcome("error", note=traceback.format_exc(limit=3))
        if not isinstance(result, dict) or not isinstance(result.get("isAuthorized"), bool):
            return Outcome("error", note=f"malformed authorizer result: {result!r:.200}")
        given = result.get("context")
        if given is not None and not isinstance(given, dict):
            return Outcome("error", note="authorizer context is not an object")
        if not result["isAuthorized"]:
            return Outcome("deny", note="not authorized for this route")
        return Outcome("allow", context=dict(given or {}))
