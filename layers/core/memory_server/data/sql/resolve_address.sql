-- The record an address resolves to from the listening context: the one in the
-- nearest context (contexts are ordered from the listening context up), as every
-- change by path finds it (memory.address_record, inlined); with who created and last
-- changed it (handle and kind, one look-up each: memory.principal_provenance).
SELECT a.id, a.workspace_id, a.owner_id, a.context_key, a.kind, a.path, a.title, a.body,
       a.revision, a.created_at, a.updated_at, a.source, a.expires_at, a.pinned,
       c.handle AS created_by, c.kind AS created_by_kind,
       u.handle AS updated_by, u.kind AS updated_by_kind
FROM memory.address_record(%(workspace_id)s, %(owner_id)s, %(kind)s, %(path)s, %(contexts)s) AS a
CROSS JOIN LATERAL memory.principal_provenance(a.created_by) AS c
CROSS JOIN LATERAL memory.principal_provenance(a.updated_by) AS u
