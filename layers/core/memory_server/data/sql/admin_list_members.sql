-- Every member of the workspace, agent keys marked, people before services.
SELECT p.id AS principal_id, p.kind, p.subject, p.handle, m.grants, m.personal_namespace,
       (p.workspace_id IS NOT NULL) AS agent_key, m.handle_conflict
FROM memory.memberships AS m
JOIN memory.principals AS p ON p.id = m.principal_id
WHERE m.workspace_id = %(workspace_id)s
ORDER BY p.kind, p.handle, p.id
