-- One visible record by its immutable id.
SELECT m.id, m.workspace_id, m.owner_id, m.context_key, m.kind, m.path, m.title, m.body,
       m.revision, m.created_at, m.updated_at, m.source, m.expires_at, m.pinned,
       memory.principal_handle(m.created_by) AS created_by,
       memory.principal_handle(m.updated_by) AS updated_by
FROM memory.records_in_view(%(workspace_id)s, %(owners)s, %(contexts)s) AS m
WHERE m.id = %(id)s
