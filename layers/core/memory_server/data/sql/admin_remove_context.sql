-- Unregister a context (its members go with it: ON DELETE CASCADE).
DELETE FROM memory.contexts
WHERE workspace_id = %(workspace_id)s AND context_key = %(context_key)s
RETURNING context_key
