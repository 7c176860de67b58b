-- Hydrate ranked hits through the RLS-protected table, with bounded excerpts around
-- any of the query's words or phrases (the excerpt's bounds come from limits).
SELECT m.id, m.workspace_id, m.owner_id, m.context_key, m.kind, m.path, m.title, m.revision,
       m.updated_at,
       ts_headline('english', left(m.body, %(source_chars)s),
                   memory.search_excerpt_query(%(words)s, %(phrases)s),
                   %(headline_options)s) AS excerpt
FROM memory.records_in_view(%(workspace_id)s, %(owners)s, %(contexts)s) AS m
WHERE m.id = ANY (%(ids)s)
