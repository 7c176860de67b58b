-- One page of the workspace's audit trail, newest first, before a cursor (an id).
-- Actor handles resolve only for current members (principals' RLS); the id stays.
SELECT a.id, a.occurred_at, a.operation, a.uri, a.memory_id, a.revision, a.writer_id,
       (SELECT p.handle FROM memory.principals AS p WHERE p.id = a.writer_id) AS writer,
       a.source, a.request_id, a.details, a.published_at IS NOT NULL AS published
FROM memory.audit_outbox AS a
WHERE a.workspace_id = %(workspace_id)s
  AND (%(before)s::bigint IS NULL OR a.id < %(before)s::bigint)
ORDER BY a.id DESC
LIMIT %(limit)s
