-- Retire a live agent key whose app client is gone: revoked, membership removed.
WITH retired AS (
    UPDATE memory.principals SET revoked_at = now()
    WHERE subject = %(client_id)s AND workspace_id IS NOT NULL AND revoked_at IS NULL
    RETURNING id, workspace_id
), members AS (
    DELETE FROM memory.memberships AS m USING retired AS r
    WHERE m.workspace_id = r.workspace_id AND m.principal_id = r.id
), contexts AS (
    DELETE FROM memory.context_members AS c USING retired AS r
    WHERE c.workspace_id = r.workspace_id AND c.principal_id = r.id
)
SELECT id, workspace_id FROM retired
