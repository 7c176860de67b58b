-- One member of the workspace, locked for a change. A revoked key is no member, even
-- if a membership row of it were left behind.
SELECT p.id AS principal_id, p.kind, p.subject, p.handle, m.grants, m.personal_namespace,
       (p.workspace_id IS NOT NULL) AS agent_key, m.handle_conflict
FROM memory.memberships AS m
JOIN memory.principals AS p ON p.id = m.principal_id
WHERE m.workspace_id = %(workspace_id)s AND p.subject = %(subject)s
  AND p.revoked_at IS NULL
FOR UPDATE OF m
