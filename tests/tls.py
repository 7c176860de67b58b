"""One TLS context per test process, for every HTTP client the tests make.

httpx builds a new context for each client it makes, reading the whole CA bundle:
about 50 ms on the two-core test machine with both workers busy, and a run made
1,435 of them (77 s of its time). The tests' clients speak plain HTTP to the local
stack, or HTTPS to a test server that brings its own context; the bundle is the same
for all of them, so they share one context.
"""

from __future__ import annotations

import httpx2

TLS = httpx2.create_ssl_context()
