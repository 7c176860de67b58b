-- Every workspace with its size: members, admins, live agent keys, records.
SELECT w.id, w.slug, w.memory_enabled, w.created_at,
       (SELECT count(*) FROM memory.memberships AS m WHERE m.workspace_id = w.id) AS members,
       (SELECT count(*) FROM memory.memberships AS m
        WHERE m.workspace_id = w.id AND 'admin' = ANY (m.grants)) AS admins,
       (SELECT count(*) FROM memory.principals AS p
        WHERE p.workspace_id = w.id AND p.revoked_at IS NULL) AS agent_keys,
       (SELECT count(*) FROM memory.memories AS r
        WHERE r.workspace_id = w.id AND memory.is_live(r.expires_at)) AS records
FROM memory.workspaces AS w
ORDER BY w.slug
