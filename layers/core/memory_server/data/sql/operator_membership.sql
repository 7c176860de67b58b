-- A principal and its membership of the workspace, if it has one (the caller holds
-- the workspace's row lock, which serialises changes of its members).
SELECT p.id, p.kind, p.workspace_id, p.revoked_at, m.grants, m.personal_namespace
FROM memory.principals AS p
LEFT JOIN memory.memberships AS m
       ON m.principal_id = p.id AND m.workspace_id = %(workspace_id)s
WHERE p.id = %(principal_id)s
