-- The record an address resolves to from the listening context: the one in the
-- nearest context (contexts are ordered from the listening context up).
SELECT m.id, m.workspace_id, m.owner_id, m.context_key, m.kind, m.path, m.title, m.body,
       m.revision, m.created_at, m.updated_at, m.source,
       memory.principal_handle(m.created_by) AS created_by,
       memory.principal_handle(m.updated_by) AS updated_by
FROM memory.memories AS m
WHERE m.workspace_id = %(workspace_id)s
  AND m.owner_id = %(owner_id)s
  AND m.kind = %(kind)s
  AND m.path = %(path)s
  AND m.context_key = ANY (%(contexts)s)
ORDER BY array_position(%(contexts)s, m.context_key::text)
LIMIT 1
