-- These requests' unpublished audit rows, locked so the sweeper skips them meanwhile.
SELECT a.id, a.memory_id, a.uri, a.operation, a.revision, a.writer_id, a.source,
       a.request_id, a.occurred_at
FROM memory.audit_outbox AS a
WHERE a.workspace_id = %(workspace_id)s
  AND a.request_id = ANY (%(request_ids)s)
  AND a.published_at IS NULL
ORDER BY a.id
FOR UPDATE SKIP LOCKED
