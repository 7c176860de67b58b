"""Times in arguments: RFC 3339 with an offset, compared and answered in UTC."""

from __future__ import annotations

from datetime import UTC, datetime

from memory_server.domain.errors import invalid
from memory_server.domain.limits import EXPIRY_MAX_YEARS


def parse_time(raw: str, argument: str) -> datetime:
    """An RFC 3339 time (``2026-12-31T23:59:59Z`` or with an offset), in UTC."""
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        raise invalid(f"{argument} must be an RFC 3339 time, like 2026-12-31T23:59:59Z") from None
    if moment.tzinfo is None or "T" not in raw.upper():
        raise invalid(f"{argument} must be an RFC 3339 time with its offset (Z for UTC)")
    return moment.astimezone(UTC)


def check_expiry(raw: str, now: datetime) -> datetime:
    """A new expiry: a time after ``now`` and at most EXPIRY_MAX_YEARS ahead."""
    moment = parse_time(raw, "expires_at")
    if moment <= now:
        raise invalid("expires_at must be in the future (null removes an expiry)")
    try:
        latest = now.replace(year=now.year + EXPIRY_MAX_YEARS)
    except ValueError:  # 29 February, in a year that has none
        latest = now.replace(year=now.year + EXPIRY_MAX_YEARS, day=28)
    if moment > latest:
        raise invalid(f"expires_at may be at most {EXPIRY_MAX_YEARS} years ahead")
    return moment
