-- Conditional change (replace, merge or move) of a visible record at the expected
-- revision, with its revision and audit rows, in one statement. No row back means the
-- record moved on (a conflict) or left the caller's view.
-- The audit row names a personal record, or one in a private context, by id only and
-- without its source (memory.audit_discloses, migration 0012).
WITH changed AS (
    UPDATE memory.memories
    SET kind = %(kind)s, path = %(path)s, title = %(title)s, body = %(body)s,
        revision = revision + 1, updated_at = now(), updated_by = %(principal_id)s,
        source = %(source)s
    WHERE id = %(id)s
      AND revision = %(expected_revision)s
      AND workspace_id = %(workspace_id)s
      AND owner_id = ANY (%(owners)s)
      AND context_key = ANY (%(contexts)s)
    RETURNING *
), history AS (
    INSERT INTO memory.revisions
        (workspace_id, memory_id, revision, operation, owner_id, context_key, kind, path,
         title, body, writer_id, source, request_id)
    SELECT workspace_id, id, revision, %(operation)s, owner_id, context_key, kind, path,
           title, body, updated_by, source, %(request_id)s
    FROM changed
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
    FROM changed
)
SELECT id, revision, context_key FROM changed
