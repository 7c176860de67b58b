-- Live agent keys of the workspace with their membership grants.
SELECT p.id AS principal_id, p.subject AS client_id, p.handle AS name, p.key_scopes AS scopes,
       m.grants, m.personal_namespace, p.created_at,
       (SELECT c.handle FROM memory.principals AS c WHERE c.id = p.created_by) AS created_by
FROM memory.principals AS p
JOIN memory.memberships AS m ON m.principal_id = p.id AND m.workspace_id = p.workspace_id
WHERE p.workspace_id = %(workspace_id)s AND p.revoked_at IS NULL
ORDER BY p.handle, p.id
