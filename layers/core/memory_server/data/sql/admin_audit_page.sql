-- One page of the workspace's audit trail, newest first, before a cursor (an id).
-- Actors' handles and kinds resolve only for current members (principals' RLS), in
-- one look-up each; the id stays.
SELECT a.id, a.occurred_at, a.operation, a.uri, a.memory_id, a.revision, a.writer_id,
       p.handle AS writer, p.kind AS writer_kind,
       a.source, a.request_id, a.details, a.published_at IS NOT NULL AS published
FROM memory.audit_outbox AS a
LEFT JOIN memory.principals AS p ON p.id = a.writer_id
WHERE a.workspace_id = %(workspace_id)s
  AND (%(before)s::bigint IS NULL OR a.id < %(before)s::bigint)
ORDER BY a.id DESC
LIMIT %(limit)s
