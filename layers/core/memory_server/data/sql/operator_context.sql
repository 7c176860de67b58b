-- A registered context with the ids of its members (no row: it is not registered).
SELECT c.kind, c.private,
       coalesce(array_agg(cm.principal_id ORDER BY cm.principal_id)
                FILTER (WHERE cm.principal_id IS NOT NULL), '{}') AS members
FROM memory.contexts AS c
LEFT JOIN memory.context_members AS cm
       ON cm.workspace_id = c.workspace_id AND cm.context_key = c.context_key
WHERE c.workspace_id = %(workspace_id)s AND c.context_key = %(context_key)s
GROUP BY c.kind, c.private
