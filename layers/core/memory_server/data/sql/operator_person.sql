-- A person by subject, locked for erasure, with the workspaces they belong to.
SELECT p.id, p.handle,
       coalesce((SELECT array_agg(w.slug ORDER BY w.slug)
                 FROM memory.memberships AS m JOIN memory.workspaces AS w ON w.id = m.workspace_id
                 WHERE m.principal_id = p.id), '{}') AS workspaces,
       coalesce((SELECT array_agg(m.workspace_id)
                 FROM memory.memberships AS m WHERE m.principal_id = p.id), '{}') AS workspace_ids
FROM memory.principals AS p
WHERE p.subject = %(subject)s AND p.kind = 'person'
FOR UPDATE OF p
