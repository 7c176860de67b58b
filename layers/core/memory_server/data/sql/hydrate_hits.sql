-- Hydrate ranked hits through the RLS-protected table, with bounded excerpts around
-- any of the query's words or phrases (the excerpt's bounds come from limits).
SELECT m.id, m.workspace_id, m.owner_id, m.context_key, m.kind, m.path, m.title, m.revision,
       m.updated_at,
       ts_headline('english', left(m.body, %(source_chars)s),
                   memory.search_excerpt_query(%(words)s, %(phrases)s),
                   %(headline_options)s) AS excerpt
FROM memory.memories AS m
WHERE m.id = ANY (%(ids)s)
  AND m.workspace_id = %(workspace_id)s
  AND m.owner_id = ANY (%(owners)s)
  AND m.context_key = ANY (%(contexts)s)
