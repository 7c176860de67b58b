-- The record an address resolves to from the listening context: the one in the
-- nearest context (contexts are ordered from the listening context up), as every
-- change by path finds it (memory.address_record, inlined).
SELECT a.id, a.workspace_id, a.owner_id, a.context_key, a.kind, a.path, a.title, a.body,
       a.revision, a.created_at, a.updated_at, a.source, a.expires_at, a.pinned,
       memory.principal_handle(a.created_by) AS created_by,
       memory.principal_handle(a.updated_by) AS updated_by
FROM memory.address_record(%(workspace_id)s, %(owner_id)s, %(kind)s, %(path)s, %(contexts)s) AS a
