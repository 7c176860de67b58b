"""A call's deadline: every MCP call and admin action has one, and the database's
statement timeout is set from what remains of it."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from memory_server.domain.errors import ToolError
from memory_server.domain.limits import DEADLINE_S


@dataclass(frozen=True, slots=True)
class Deadline:
    """A per-call deadline; the database statement timeout is kept under it."""

    expires_at: float = field(default_factory=lambda: time.monotonic() + DEADLINE_S)

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.monotonic() + seconds)

    def remaining_ms(self) -> int:
        remaining = int((self.expires_at - time.monotonic()) * 1000)
        if remaining <= 0:
            raise ToolError("timeout", "the call ran out of time before it finished")
        return remaining
