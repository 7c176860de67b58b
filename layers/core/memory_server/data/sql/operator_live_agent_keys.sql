-- Every live agent key, with its workspace (for the dev stack's restart check).
SELECT w.slug, p.subject AS client_id
FROM memory.principals AS p
JOIN memory.workspaces AS w ON w.id = p.workspace_id
WHERE p.revoked_at IS NULL
ORDER BY w.slug, p.subject
