-- One visible record by its immutable id, with who created and last changed it
-- (handle and kind, one look-up each: memory.principal_provenance).
SELECT m.id, m.workspace_id, m.owner_id, m.context_key, m.kind, m.path, m.title, m.body,
       m.revision, m.created_at, m.updated_at, m.source, m.expires_at, m.pinned,
       c.handle AS created_by, c.kind AS created_by_kind,
       u.handle AS updated_by, u.kind AS updated_by_kind
FROM memory.records_in_view(%(workspace_id)s, %(owners)s, %(contexts)s) AS m
CROSS JOIN LATERAL memory.principal_provenance(m.created_by) AS c
CROSS JOIN LATERAL memory.principal_provenance(m.updated_by) AS u
WHERE m.id = %(id)s
