"""Time arguments: RFC 3339 with an offset, in range once in UTC, or invalid_argument."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from memory_server.domain.errors import ToolError
from memory_server.domain.times import check_expiry, parse_time

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2030-01-01T00:00:00Z", datetime(2030, 1, 1, tzinfo=UTC)),
        ("2030-01-01t00:00:00z", datetime(2030, 1, 1, tzinfo=UTC)),  # RFC 3339 allows both
        ("2030-01-01T01:30:00.5+01:30", datetime(2030, 1, 1, 0, 0, 0, 500000, tzinfo=UTC)),
        ("0001-01-01T00:00:00Z", datetime(1, 1, 1, tzinfo=UTC)),
        ("9999-12-31T23:59:59Z", datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)),
    ],
)
def test_rfc_3339_times_are_read_in_utc(raw: str, expected: datetime) -> None:
    assert parse_time(raw, "as_of") == expected


@pytest.mark.parametrize(
    "raw",
    [
        "0001-01-01T00:00:00+14:00",  # before year 1 in UTC: was an OverflowError (a 500)
        "9999-12-31T23:59:59-14:00",  # after year 9999 in UTC
        "2030-01-01T00:00:00",  # no offset
        "2030-01-01T00:00Z",  # no seconds
        "20301231T235959Z",  # ISO 8601's basic format
        "2030-W01-1T00:00:00Z",  # a week date
        "2030-01-01 00:00:00Z",
        "2030-02-30T00:00:00Z",
        "2030-01-01T00:00:00+24:00",
        "２０３０-01-01T00:00:00Z",  # digits, but not ASCII ones
        "2030-01-01T00:00:00Z\n",
    ],
)
def test_anything_else_is_invalid_argument_naming_the_argument(raw: str) -> None:
    with pytest.raises(ToolError) as caught:
        parse_time(raw, "since")
    assert caught.value.code == "invalid_argument" and "since" in caught.value.message


@pytest.mark.parametrize(
    "raw", ["2026-06-01T12:00:00Z", "2020-01-01T00:00:00Z", "2036-06-01T12:00:01Z"]
)
def test_an_expiry_is_ahead_within_ten_years(raw: str) -> None:
    with pytest.raises(ToolError) as caught:
        check_expiry(raw, NOW)
    assert caught.value.code == "invalid_argument" and "expires_at" in caught.value.message
    assert check_expiry("2036-06-01T12:00:00Z", NOW) == datetime(2036, 6, 1, 12, tzinfo=UTC)
