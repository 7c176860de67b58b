"""Local development and test support (never shipped in the Lambda layer)."""
