"""Origin and Host validation (DNS-rebinding protection) on its own."""

from __future__ import annotations

from typing import Any

import pytest
from memory_server.domain.errors import EdgeError
from memory_server.gateway.origins import OriginPolicy, host_name, origin_key, parse_list


def event(
    headers: dict[str, str], domain: str = "abc123.execute-api.eu-west-1.amazonaws.com"
) -> Any:
    return {"headers": headers, "requestContext": {"domainName": domain}}


def refused(policy: OriginPolicy, headers: dict[str, str], **kw: Any) -> str | None:
    try:
        policy.check(event(headers, **kw))
    except EdgeError as error:
        assert error.status == 403 and error.body == {"error": error.code}
        return error.code
    return None


def test_no_origin_header_is_not_a_browser_and_passes() -> None:
    assert refused(OriginPolicy(), {}) is None


def test_the_deployments_own_origins_pass_and_others_are_refused() -> None:
    policy = OriginPolicy(public_base_url="https://memory.example.com")
    own = [
        "https://abc123.execute-api.eu-west-1.amazonaws.com",
        "https://memory.example.com",
        "HTTPS://Memory.Example.com:443",  # the same origin, spelled differently
    ]
    for origin in own:
        assert refused(policy, {"origin": origin}) is None, origin
    foreign = [
        "http://evil.example.com",
        "http://memory.example.com",  # another scheme is another origin
        "https://memory.example.com:8443",
        "https://memory.example.com.evil.example",
        "null",
        "",
        "https://memory.example.com/path",
        "https://user@memory.example.com",
    ]
    for origin in foreign:
        assert refused(policy, {"origin": origin}) == "origin_not_allowed", origin


def test_configured_origins_with_exact_or_any_port() -> None:
    policy = OriginPolicy(allowed_origins=("https://app.example.com", "http://localhost:*"))
    assert refused(policy, {"origin": "https://app.example.com"}) is None
    assert refused(policy, {"origin": "https://app.example.com:444"}) == "origin_not_allowed"
    assert refused(policy, {"origin": "http://localhost:6274"}) is None
    assert refused(policy, {"origin": "http://localhost"}) is None
    assert refused(policy, {"origin": "https://localhost:6274"}) == "origin_not_allowed"
    assert refused(policy, {"origin": "http://localhost.evil.example:6274"}) == (
        "origin_not_allowed"
    )


def test_hosts_are_checked_only_when_configured() -> None:
    assert refused(OriginPolicy(), {"host": "evil.example.com"}) is None
    loopback = OriginPolicy(allowed_hosts=("localhost", "127.0.0.1", "[::1]"))
    for host in ("localhost", "127.0.0.1:8787", "[::1]:8787", "LOCALHOST:1"):
        assert refused(loopback, {"host": host}) is None, host
    for host in ("evil.example.com", "127.0.0.1.evil.example", "localhost:x", "a@localhost"):
        assert refused(loopback, {"host": host}) == "host_not_allowed", host
    assert refused(loopback, {}) == "host_not_allowed"
    # Host first: a rebinding request names the attacker's host and origin.
    both = {"host": "evil.example.com", "origin": "http://evil.example.com"}
    assert refused(loopback, both) == "host_not_allowed"


def test_settings_that_are_not_origins_or_hosts_fail_at_start() -> None:
    for origins in (("app.example.com",), ("ftp://x",), ("https://x/path",), ("https://x:*:1",)):
        with pytest.raises(RuntimeError):
            OriginPolicy(allowed_origins=origins)
    with pytest.raises(RuntimeError):
        OriginPolicy(allowed_hosts=("a/b",))


def test_parsing_helpers() -> None:
    assert parse_list(" a, ,b ,") == ("a", "b")
    assert parse_list(None) == ()
    assert origin_key("http://[::1]:8787") == ("http", "::1", "8787")
    assert origin_key("http://[::1]:*", wildcard=True) == ("http", "::1", "*")
    assert origin_key("http://[::1]:*") is None
    assert host_name("[::1]:80") == "::1"
