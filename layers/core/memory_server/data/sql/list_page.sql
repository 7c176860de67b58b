-- One page of the caller's view, in (kind, path, context, id) order, after a cursor.
SELECT m.id, m.owner_id, m.context_key, m.kind, m.path, m.title, m.revision, m.updated_at,
       m.expires_at, m.pinned
FROM memory.records_in_view(%(workspace_id)s, %(owners)s, %(contexts)s) AS m
WHERE (%(kind)s::text IS NULL OR m.kind = %(kind)s::text)
  AND m.path >= %(path_low)s AND m.path < %(path_high)s
  AND (m.kind, m.path, m.context_key, m.id)
      > (%(after_kind)s::text, %(after_path)s::text, %(after_context)s::text, %(after_id)s::uuid)
ORDER BY m.kind, m.path, m.context_key, m.id
LIMIT %(limit)s
