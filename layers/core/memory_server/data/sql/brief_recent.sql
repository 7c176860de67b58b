-- The briefing's recent changes: memories and notes in the caller's view that are not
-- pinned, changed after a time (or the latest), newest first; no bodies.
SELECT m.id, m.owner_id, m.context_key, m.kind, m.path, m.title, m.revision, m.updated_at,
       memory.principal_handle(m.updated_by) AS updated_by
FROM memory.records_in_view(%(workspace_id)s, %(owners)s, %(contexts)s) AS m
WHERE NOT m.pinned
  AND m.kind IN ('memories', 'notes')
  AND (%(since)s::timestamptz IS NULL OR m.updated_at > %(since)s::timestamptz)
ORDER BY m.updated_at DESC, m.id
LIMIT %(limit)s
