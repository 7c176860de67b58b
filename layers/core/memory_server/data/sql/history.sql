-- Newest-first history of one record (bodies are not part of history entries).
SELECT r.revision, r.operation, r.kind, r.path, r.owner_id, r.created_at, r.source,
       memory.principal_handle(r.writer_id) AS writer
FROM memory.revisions AS r
WHERE r.memory_id = %(id)s
  AND r.workspace_id = %(workspace_id)s
  AND r.owner_id = ANY (%(owners)s)
  AND r.context_key = ANY (%(contexts)s)
ORDER BY r.revision DESC
LIMIT %(limit)s
