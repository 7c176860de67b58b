-- Newest-first history of one record (bodies are not part of history entries), each
-- with its writer's handle and kind (memory.principal_provenance).
SELECT r.revision, r.operation, r.kind, r.path, r.owner_id, r.created_at, r.source,
       w.handle AS writer, w.kind AS writer_kind
FROM memory.revisions AS r
CROSS JOIN LATERAL memory.principal_provenance(r.writer_id) AS w
WHERE r.memory_id = %(id)s
  AND r.workspace_id = %(workspace_id)s
  AND r.owner_id = ANY (%(owners)s)
  AND r.context_key = ANY (%(contexts)s)
ORDER BY r.revision DESC
LIMIT %(limit)s
