SELECT workspace_id, memory_enabled, principal_id, principal_kind, handle, grants,
       personal_namespace, context_allowed
FROM memory.resolve_caller(%(workspace)s, %(subject)s, %(gate_key)s)
