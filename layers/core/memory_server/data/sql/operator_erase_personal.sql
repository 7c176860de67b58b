-- Purge a person's personal namespace everywhere: current records (their search
-- documents follow by trigger), every revision (tombstones included: a path can be
-- personal too), their idempotency keys and results, and the paths in the audit
-- rows of their personal records (only the owner writes there), which keep
-- who/when/operation under the record id.
WITH records AS (
    DELETE FROM memory.memories WHERE owner_id = %(principal_id)s RETURNING id
), history AS (
    DELETE FROM memory.revisions WHERE owner_id = %(principal_id)s RETURNING memory_id
), keys AS (
    DELETE FROM memory.idempotency_keys WHERE principal_id = %(principal_id)s RETURNING 1
), events AS (
    UPDATE memory.audit_outbox
    SET uri = 'memory://record/' || memory_id::text, source = NULL
    WHERE writer_id = %(principal_id)s AND uri LIKE 'memory://me/%%'
    RETURNING 1
)
SELECT (SELECT count(*) FROM records) AS personal_records,
       (SELECT count(*) FROM history) AS personal_revisions,
       (SELECT count(*) FROM keys) AS idempotency_keys,
       (SELECT count(*) FROM events) AS audit_paths_redacted
