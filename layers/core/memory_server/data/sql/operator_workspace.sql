-- One workspace by slug, locked for deletion, with what deleting it removes.
SELECT w.id, w.slug,
       (SELECT count(*) FROM memory.memories AS r WHERE r.workspace_id = w.id) AS records,
       (SELECT count(*) FROM memory.revisions AS r WHERE r.workspace_id = w.id) AS revisions,
       (SELECT count(*) FROM memory.memberships AS m WHERE m.workspace_id = w.id) AS members,
       (SELECT count(*) FROM memory.contexts AS c WHERE c.workspace_id = w.id) AS contexts,
       (SELECT count(*) FROM memory.audit_outbox AS a WHERE a.workspace_id = w.id) AS audit_events,
       (SELECT coalesce(array_agg(p.subject ORDER BY p.subject), '{}')
        FROM memory.principals AS p
        WHERE p.workspace_id = w.id AND p.revoked_at IS NULL) AS agent_clients
FROM memory.workspaces AS w
WHERE w.slug = %(slug)s
FOR UPDATE OF w
