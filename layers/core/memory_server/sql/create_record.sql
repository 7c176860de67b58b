-- Create a record, its first revision and its audit row in one statement. No row
-- back means the address was taken concurrently.
-- The audit row names a personal record, or one in a private context, by id only and
-- without its source (memory.audit_discloses, migration 0012).
WITH created AS (
    INSERT INTO memory.memories
        (workspace_id, owner_id, context_key, kind, path, title, body, revision,
         created_by, updated_by, source)
    VALUES (%(workspace_id)s, %(owner_id)s, %(context_key)s, %(kind)s, %(path)s, %(title)s,
            %(body)s, 1, %(principal_id)s, %(principal_id)s, %(source)s)
    ON CONFLICT ON CONSTRAINT memories_address DO NOTHING
    RETURNING *
), history AS (
    INSERT INTO memory.revisions
        (workspace_id, memory_id, revision, operation, owner_id, context_key, kind, path,
         title, body, writer_id, source, request_id)
    SELECT workspace_id, id, revision, %(operation)s, owner_id, context_key, kind, path,
           title, body, updated_by, source, %(request_id)s
    FROM created
), audit AS (
    INSERT INTO memory.audit_outbox
        (workspace_id, memory_id, uri, operation, revision, writer_id, source, request_id)
    SELECT workspace_id, id,
           CASE WHEN memory.audit_discloses(workspace_id, owner_id, context_key)
                THEN %(uri)s ELSE 'memory://record/' || id::text END,
           %(operation)s, revision, updated_by,
           CASE WHEN memory.audit_discloses(workspace_id, owner_id, context_key)
                THEN source END,
           %(request_id)s
    FROM created
)
SELECT id, revision, context_key FROM created
