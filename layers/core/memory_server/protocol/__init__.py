"""MCP over HTTP: a thin JSON-RPC dispatcher on the official protocol types.

Built on ``mcp_types`` (the SDK's wire types) rather than the SDK server itself:
importing any ``mcp.*`` module costs about 0.8 s at cold start, ``mcp_types`` about
a third of that (see docs/endpoint.md). The official client and the conformance
suite are what prove the wire behaviour.
"""
