-- One immutable revision of a record that is still in the caller's view, with its
-- writer's handle and kind (memory.principal_provenance).
SELECT r.memory_id AS id, r.workspace_id, r.owner_id, r.context_key, r.kind, r.path, r.title,
       r.body, r.revision, r.operation, r.created_at, r.source, m.expires_at, m.pinned,
       w.handle AS writer, w.kind AS writer_kind
FROM memory.revisions AS r
JOIN memory.records_in_view(%(workspace_id)s, %(owners)s, %(contexts)s) AS m
  ON m.id = r.memory_id
CROSS JOIN LATERAL memory.principal_provenance(r.writer_id) AS w
WHERE r.memory_id = %(id)s
  AND r.revision = %(revision)s::integer
  AND r.body IS NOT NULL
