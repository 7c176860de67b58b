-- The briefing's pinned records in the caller's view (memories and notes): personal
-- first, then the nearest context, then the newest; the head of each body (the
-- budget cuts it further) and whether there is more.
SELECT m.id, m.owner_id, m.context_key, m.kind, m.path, m.title, m.revision, m.updated_at,
       left(m.body, %(content_chars)s) AS content,
       char_length(m.body) > %(content_chars)s AS cut
FROM memory.records_in_view(%(workspace_id)s, %(owners)s, %(contexts)s) AS m
WHERE m.pinned
  AND m.kind IN ('memories', 'notes')
ORDER BY m.owner_id = '00000000-0000-0000-0000-000000000000',
         array_position(%(contexts)s, m.context_key::text), m.updated_at DESC, m.id
LIMIT %(limit)s
