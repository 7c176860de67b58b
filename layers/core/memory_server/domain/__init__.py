"""The domain's rules and types: addresses, listening contexts, callers and grants,
content rules, limits, the error model, results. Pure: no I/O, and nothing of the
server above it is imported here."""
