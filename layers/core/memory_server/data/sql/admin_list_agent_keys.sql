-- Live agent keys of the workspace with their membership grants, and who made each
-- (handle and kind, as far as principals' RLS shows them).
SELECT p.id AS principal_id, p.subject AS client_id, p.handle AS name, p.key_scopes AS scopes,
       m.grants, m.personal_namespace, p.created_at,
       c.handle AS created_by, c.kind AS created_by_kind
FROM memory.principals AS p
JOIN memory.memberships AS m ON m.principal_id = p.id AND m.workspace_id = p.workspace_id
LEFT JOIN memory.principals AS c ON c.id = p.created_by
WHERE p.workspace_id = %(workspace_id)s AND p.revoked_at IS NULL
ORDER BY p.handle, p.id
