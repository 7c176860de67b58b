-- The record an address resolves to from the listening context: the one in the
-- nearest context (contexts are ordered from the listening context up), as every
-- change by path finds it (memory.address_record, inlined).
SELECT m.id, m.workspace_id, m.owner_id, m.context_key, m.kind, m.path, m.title, m.body,
       m.revision, m.created_at, m.updated_at, m.source,
       memory.principal_handle(m.created_by) AS created_by,
       memory.principal_handle(m.updated_by) AS updated_by
FROM memory.address_record(%(workspace_id)s, %(owner_id)s, %(kind)s, %(path)s, %(contexts)s) AS a
JOIN memory.memories AS m ON m.id = a.id
