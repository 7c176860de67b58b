-- Conditional delete: remove the current row, purge every revision body, keep a
-- tombstone revision (who/when/operation) and the audit row, in one statement.
-- The audit row names a personal record, or one in a private context, by id only and
-- without its source (memory.audit_discloses, migration 0012).
WITH gone AS (
    DELETE FROM memory.memories
    WHERE id = %(id)s
      AND revision = %(expected_revision)s
      AND workspace_id = %(workspace_id)s
      AND owner_id = ANY (%(owners)s)
      AND context_key = ANY (%(contexts)s)
    RETURNING *
), purged AS (
    UPDATE memory.revisions AS r SET title = NULL, body = NULL
    FROM gone
    WHERE r.memory_id = gone.id
), tombstone AS (
    INSERT INTO memory.revisions
        (workspace_id, memory_id, revision, operation, owner_id, context_key, kind, path,
         title, body, writer_id, source, request_id)
    SELECT workspace_id, id, revision + 1, 'delete', owner_id, context_key, kind, path,
           NULL, NULL, %(principal_id)s, NULL, %(request_id)s
    FROM gone
), audit AS (
    INSERT INTO memory.audit_outbox
        (workspace_id, memory_id, uri, operation, revision, writer_id, source, request_id)
    SELECT workspace_id, id,
           CASE WHEN memory.audit_discloses(workspace_id, owner_id, context_key)
                THEN %(uri)s ELSE 'memory://record/' || id::text END,
           'delete', revision + 1, %(principal_id)s, NULL,
           %(request_id)s
    FROM gone
)
SELECT id, revision FROM gone
