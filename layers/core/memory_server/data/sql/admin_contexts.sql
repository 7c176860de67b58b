-- The workspace's registered contexts (private channels and DMs), or only the one
-- named (no row: it is not registered), each with its members as subjects (what the
-- admin API answers) and as principal ids (what a change compares), and whether the
-- given principal is one of them. As the runtime role an admin reads the members of
-- the private contexts it is in only (infra/schema/10_visibility.sql); the owner all.
SELECT c.context_key, c.kind, c.private,
       coalesce(array_agg(p.subject ORDER BY p.subject) FILTER (WHERE p.id IS NOT NULL),
                '{}') AS members,
       coalesce(array_agg(cm.principal_id ORDER BY cm.principal_id)
                FILTER (WHERE cm.principal_id IS NOT NULL), '{}') AS member_ids,
       coalesce(bool_or(cm.principal_id = %(principal_id)s::uuid), false) AS caller_in_it
FROM memory.contexts AS c
LEFT JOIN memory.context_members AS cm
       ON cm.workspace_id = c.workspace_id AND cm.context_key = c.context_key
LEFT JOIN memory.principals AS p ON p.id = cm.principal_id
WHERE c.workspace_id = %(workspace_id)s
  AND (%(context_key)s::text IS NULL OR c.context_key = %(context_key)s)
GROUP BY c.context_key, c.kind, c.private
ORDER BY c.context_key
