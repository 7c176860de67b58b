-- The revision of a record still in the caller's view that was current at a time: the
-- latest written at or before it, with its content (none once purged) and its
-- writer's handle and kind (memory.principal_provenance).
SELECT r.memory_id AS id, r.workspace_id, r.owner_id, r.context_key, r.kind, r.path, r.title,
       r.body, r.revision, r.operation, r.created_at, r.source, m.expires_at, m.pinned,
       w.handle AS writer, w.kind AS writer_kind
FROM memory.records_in_view(%(workspace_id)s, %(owners)s, %(contexts)s) AS m
CROSS JOIN LATERAL (
    SELECT *
    FROM memory.revisions AS x
    WHERE x.memory_id = m.id
      AND x.created_at <= %(as_of)s
    ORDER BY x.revision DESC
    LIMIT 1
) AS r
CROSS JOIN LATERAL memory.principal_provenance(r.writer_id) AS w
WHERE m.id = %(id)s
  AND r.body IS NOT NULL
