"""Times in arguments: RFC 3339 with an offset, compared and answered in UTC."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from memory_server.domain.errors import invalid
from memory_server.domain.limits import EXPIRY_MAX_YEARS

# RFC 3339's date-time (section 5.6), ASCII digits only: Python's own ISO parser also
# takes week dates, the basic format without separators and a missing offset or
# seconds, none of which the contract's "RFC 3339" admits.
_RFC3339 = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:[Zz]|[+-][0-9]{2}:[0-9]{2})"
)


def parse_time(raw: str, argument: str) -> datetime:
    """An RFC 3339 time (``2026-12-31T23:59:59Z`` or with an offset), in UTC."""
    if _RFC3339.fullmatch(raw) is None:
        raise invalid(
            f"{argument} must be an RFC 3339 time with its offset, like 2026-12-31T23:59:59Z"
        )
    try:
        # An offset can carry a valid date out of the years 1-9999 once in UTC.
        return datetime.fromisoformat(raw.upper()).astimezone(UTC)
    except (ValueError, OverflowError):
        raise invalid(
            f"{argument} is not a valid date and time in the years 1 to 9999 (UTC)"
        ) from None


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
