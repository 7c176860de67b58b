-- The sweeper's batch: unpublished rows of every workspace older than min_age, locked
-- (SKIP LOCKED) until this transaction marks them. The auditor role may call only
-- this function and audit_mark_published (infra/schema/30_audit.sql).
SELECT id, workspace, memory_id, uri, operation, revision, writer_id, source,
       request_id, occurred_at
FROM memory.audit_claim_unpublished(%(limit)s, %(min_age)s)
