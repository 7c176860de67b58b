-- Plans kept for the session, for the two functions every change calls.
--
-- A SQL-language function with a SET clause (or SECURITY DEFINER) is never inlined,
-- and its statement is parsed and planned again each time a request's statement
-- calls it: the requests send plain statements, not prepared ones (db.py). Measured
-- on the local stack: resolve_caller() took 0.47-0.53 ms a call, 0.10-0.12 ms as
-- PL/pgSQL, whose plans are cached on the connection; every request resolves its
-- caller once, and every change calls audit_discloses() for its audit row.
--
-- Same signatures, rows and rules as in 0012; only the language changes.

CREATE OR REPLACE FUNCTION resolve_caller(p_workspace text, p_subject text, p_gate_key text)
RETURNS TABLE (workspace_id uuid, memory_enabled boolean, principal_id uuid,
               principal_kind text, handle text, grants text[],
               personal_namespace boolean, context_allowed boolean)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
BEGIN
    RETURN QUERY
    SELECT w.id, w.memory_enabled, p.id, p.kind, p.handle, m.grants, m.personal_namespace,
           CASE
               WHEN p_gate_key IS NULL THEN true
               ELSE COALESCE(
                   (SELECT NOT c.private OR EXISTS (
                               SELECT 1 FROM context_members AS cm
                               WHERE cm.workspace_id = c.workspace_id
                                 AND cm.context_key = c.context_key
                                 AND cm.principal_id = p.id)
                    FROM contexts AS c
                    WHERE c.workspace_id = w.id AND c.context_key = p_gate_key),
                   -- Unregistered: an open channel is fine, an unregistered DM is not.
                   p_gate_key NOT LIKE 'dm:%')
           END
    FROM workspaces AS w
    JOIN memberships AS m ON m.workspace_id = w.id
    JOIN principals AS p ON p.id = m.principal_id
    WHERE w.slug = p_workspace AND p.subject = p_subject
      AND p.revoked_at IS NULL
      AND (p.workspace_id IS NULL OR p.workspace_id = w.id);
END
$$;

CREATE OR REPLACE FUNCTION audit_discloses(ws uuid, owner uuid, ctx text) RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
BEGIN
    RETURN owner = '00000000-0000-0000-0000-000000000000'
       AND NOT EXISTS (SELECT 1 FROM contexts AS c
                       WHERE c.workspace_id = ws
                         AND c.context_key = split_part(ctx, '/', 1)
                         AND c.private);
END
$$;
