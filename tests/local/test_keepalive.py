"""No stall on a kept-alive connection: each response leaves the emulator at once.

MCP clients keep their HTTP connection open. A response written in two small sends
without ``TCP_NODELAY`` waits, after the first, for the client's delayed ACK
(~40 ms on Linux) before the second leaves: every call on the connection then
costs ~40 ms whatever the handler took. The echo handler here answers in well
under a millisecond, so anything near that is the stall.
"""

from __future__ import annotations

from memory_local.gateway import ApiGateway

from bench.timing import durations_ms
from tests.kept_alive import KeptAlive, median


def test_one_kept_alive_client_is_not_held_back(gateway: ApiGateway) -> None:
    client = KeptAlive(gateway.resource_metadata_url("acme"))
    try:
        assert client.request()[0] == 200  # warm
        samples = durations_ms(lambda: client.request(), 60)
    finally:
        client.close()
    assert client.connections == 1
    assert median(samples) < 10, f"p50 {median(samples):.1f} ms on one kept-alive connection"


def test_a_post_with_a_body_is_not_held_back(gateway: ApiGateway, alice_token: str) -> None:
    client = KeptAlive(gateway.mcp_url("acme"), {"Authorization": f"Bearer {alice_token}"})
    try:
        assert client.request("POST", b'{"jsonrpc":"2.0","id":1}')[0] == 200
        samples = durations_ms(lambda: client.request("POST", b'{"jsonrpc":"2.0","id":1}'), 60)
    finally:
        client.close()
    assert median(samples) < 10, f"p50 {median(samples):.1f} ms on one kept-alive connection"
