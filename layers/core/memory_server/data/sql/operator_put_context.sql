-- The operator's registration of a private channel or a DM with exactly these members,
-- in one statement (owner role; the admin API goes through memory.admin_register_context,
-- which checks who may change a private context again).
WITH registered AS (
    INSERT INTO memory.contexts (workspace_id, context_key, kind, private)
    VALUES (%(workspace_id)s, %(context_key)s, %(kind)s, true)
    ON CONFLICT (workspace_id, context_key) DO UPDATE SET private = true
    RETURNING workspace_id, context_key
), cleared AS (
    DELETE FROM memory.context_members AS cm
    USING registered AS r
    WHERE cm.workspace_id = r.workspace_id AND cm.context_key = r.context_key
      AND cm.principal_id <> ALL (%(members)s)
)
INSERT INTO memory.context_members (workspace_id, context_key, principal_id)
SELECT r.workspace_id, r.context_key, member
FROM registered AS r, unnest(%(members)s::uuid[]) AS member
ON CONFLICT DO NOTHING
