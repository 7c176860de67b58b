-- Administration: the SECURITY DEFINER entry points the admin API needs beyond what
-- row-level security already allows. Admin writes to memberships, contexts,
-- context_members and workspaces.memory_enabled go through the policies of
-- 10_visibility.sql (with the admin grant); these functions answer what an admin may
-- not read itself, and each checks the admin grant first. Operator tasks (creating
-- workspaces and identities) run as the owner role and need no function.
--
-- Current state, re-runnable (applied by memory_server/migrate.py after the numbered
-- migrations).

-- An identity an admin may add as a member. Principals are global (a handle shows in
-- every workspace), so only the operator (or a verified first sign-in) creates them:
-- an admin adds an identity that exists and may join this workspace; anything else
-- (unknown, erased, revoked, another workspace's key) is the same empty answer.
CREATE OR REPLACE FUNCTION admin_joinable_principal(p_subject text)
RETURNS TABLE (id uuid, kind text)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
BEGIN
    IF NOT coalesce(is_admin(setting_uuid('app.workspace_id')), false) THEN
        RAISE EXCEPTION 'the admin grant is required' USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN QUERY
        SELECT p.id, p.kind FROM principals AS p
        WHERE p.subject = p_subject
          AND p.subject NOT LIKE 'erased:%'
          AND p.revoked_at IS NULL
          AND (p.workspace_id IS NULL OR p.workspace_id = setting_uuid('app.workspace_id'));
END
$$;
REVOKE ALL ON FUNCTION admin_joinable_principal(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION admin_joinable_principal(text) TO memory_runtime;

-- A new agent key's principal, bound to the current workspace (admin grant only).
CREATE OR REPLACE FUNCTION admin_create_agent_key(p_client_id text, p_name text,
                                                  p_scopes text[])
RETURNS uuid
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
DECLARE
    created uuid;
BEGIN
    IF NOT coalesce(is_admin(setting_uuid('app.workspace_id')), false) THEN
        RAISE EXCEPTION 'the admin grant is required' USING ERRCODE = 'insufficient_privilege';
    END IF;
    INSERT INTO principals (kind, subject, handle, workspace_id, key_scopes, created_by)
    VALUES ('service', p_client_id, p_name, setting_uuid('app.workspace_id'), p_scopes,
            setting_uuid('app.principal_id'))
    RETURNING principals.id INTO created;
    RETURN created;
END
$$;
REVOKE ALL ON FUNCTION admin_create_agent_key(text, text, text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION admin_create_agent_key(text, text, text[]) TO memory_runtime;

-- Revoke a key of the current workspace: mark its principal revoked and remove its
-- membership and context memberships, in the caller's transaction. Returns the
-- principal id, or nothing when there is no live key with that client id here.
CREATE OR REPLACE FUNCTION admin_revoke_agent_key(p_client_id text)
RETURNS uuid
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
DECLARE
    ws uuid := setting_uuid('app.workspace_id');
    revoked uuid;
BEGIN
    IF NOT coalesce(is_admin(ws), false) THEN
        RAISE EXCEPTION 'the admin grant is required' USING ERRCODE = 'insufficient_privilege';
    END IF;
    UPDATE principals SET revoked_at = now()
    WHERE subject = p_client_id AND workspace_id = ws AND revoked_at IS NULL
    RETURNING principals.id INTO revoked;
    IF revoked IS NOT NULL THEN
        DELETE FROM memberships WHERE workspace_id = ws AND principal_id = revoked;
        DELETE FROM context_members WHERE workspace_id = ws AND principal_id = revoked;
    END IF;
    RETURN revoked;
END
$$;
REVOKE ALL ON FUNCTION admin_revoke_agent_key(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION admin_revoke_agent_key(text) TO memory_runtime;

-- Which contexts of the workspace hold records, and how many: what an admin needs to
-- export every context. Keys and counts only, never content; shared records not
-- expired only, and no private context the admin is not in.
CREATE OR REPLACE FUNCTION admin_context_usage()
RETURNS TABLE (context_key text, records bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
    SELECT m.context_key::text, count(*)
    FROM memories AS m
    WHERE m.workspace_id = setting_uuid('app.workspace_id')
      AND is_admin(m.workspace_id)
      AND m.owner_id = '00000000-0000-0000-0000-000000000000'
      AND is_live(m.expires_at)
      AND NOT EXISTS (
          SELECT 1 FROM contexts AS c
          WHERE c.workspace_id = m.workspace_id
            AND c.context_key = split_part(m.context_key, '/', 1)
            AND c.private
            AND NOT EXISTS (SELECT 1 FROM context_members AS cm
                            WHERE cm.workspace_id = c.workspace_id
                              AND cm.context_key = c.context_key
                              AND cm.principal_id = setting_uuid('app.principal_id')))
    GROUP BY m.context_key
    ORDER BY m.context_key
$$;
REVOKE ALL ON FUNCTION admin_context_usage() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION admin_context_usage() TO memory_runtime;
