"""The edge: the service assembled once per process from its environment, and the
route every API Gateway event takes first (metadata, admin API, MCP endpoint)."""
