-- Registered contexts (private channels and DMs) with their members.
SELECT c.context_key, c.kind, c.private,
       coalesce(array_agg(p.subject ORDER BY p.subject) FILTER (WHERE p.id IS NOT NULL),
                '{}') AS members
FROM memory.contexts AS c
LEFT JOIN memory.context_members AS cm
       ON cm.workspace_id = c.workspace_id AND cm.context_key = c.context_key
LEFT JOIN memory.principals AS p ON p.id = cm.principal_id
WHERE c.workspace_id = %(workspace_id)s
GROUP BY c.context_key, c.kind, c.private
ORDER BY c.context_key
