-- Administration: agent keys, admin events in the audit outbox, and the SECURITY
-- DEFINER entry points the admin API needs beyond what RLS already allows (admin
-- writes to memberships, contexts, context_members and workspaces.memory_enabled
-- are allowed by migration 0003 with the admin grant). No new table: every tenant
-- table keeps the row-level security it has, and the runtime role gains no table.

-- Admin changes are audited in the same outbox as record changes, so the existing
-- sweeper delivers them and one paged trail shows both. An admin row carries the
-- nil record id, revision 0, a memory-admin:// URI and what changed in `details`
-- (principal ids, client ids, grants; never content, never a person's name).
ALTER TABLE audit_outbox ADD COLUMN details jsonb;
CREATE INDEX audit_outbox_trail ON audit_outbox (workspace_id, id DESC);

-- Agent keys: a client-credentials app client bound to one workspace is a service
-- principal (subject = client id) with `workspace_id` set, the scopes its app
-- client was given, who created it, and when it was revoked. A revoked key's
-- principal stays (its writes keep their provenance) but never comes back.
ALTER TABLE principals
    ADD COLUMN workspace_id uuid REFERENCES workspaces ON DELETE CASCADE,
    ADD COLUMN key_scopes   text[]
        CHECK (key_scopes <@ ARRAY['memory/read', 'memory/write.personal',
                                   'memory/write.shared', 'memory/delete',
                                   'memory/admin']::text[]),
    ADD COLUMN created_by   uuid,
    ADD COLUMN revoked_at   timestamptz,
    ADD CONSTRAINT agent_key_shape CHECK (
        workspace_id IS NULL OR (kind = 'service' AND key_scopes IS NOT NULL));
-- One live key per name in a workspace.
CREATE UNIQUE INDEX principals_agent_key_name ON principals (workspace_id, handle)
    WHERE workspace_id IS NOT NULL AND revoked_at IS NULL;

-- The principal for a subject, created when missing, for an admin adding a member.
-- The runtime role can neither read principals outside its workspace nor insert
-- any, so this is the one way in. It never changes an existing principal (its
-- handle and kind show in other workspaces too), returns only id and kind, and
-- never hands out an erased identity or a revoked or foreign agent key.
CREATE FUNCTION admin_principal(p_kind text, p_subject text, p_handle text)
RETURNS TABLE (id uuid, kind text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
BEGIN
    IF NOT coalesce(is_admin(setting_uuid('app.workspace_id')), false) THEN
        RAISE EXCEPTION 'the admin grant is required' USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF p_subject LIKE 'erased:%' THEN
        RETURN;
    END IF;
    IF p_kind IS NOT NULL AND p_handle IS NOT NULL THEN
        INSERT INTO principals (kind, subject, handle) VALUES (p_kind, p_subject, p_handle)
        ON CONFLICT (subject) DO NOTHING;
    END IF;
    RETURN QUERY
        SELECT p.id, p.kind FROM principals AS p
        WHERE p.subject = p_subject
          AND p.revoked_at IS NULL
          AND (p.workspace_id IS NULL OR p.workspace_id = setting_uuid('app.workspace_id'));
END
$$;

-- A new agent key's principal, bound to the current workspace (admin grant only).
CREATE FUNCTION admin_create_agent_key(p_client_id text, p_name text, p_scopes text[])
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

-- Revoke a key of the current workspace: mark its principal revoked and remove its
-- membership and context memberships, in the caller's transaction. Returns the
-- principal id, or nothing when there is no live key with that client id here.
CREATE FUNCTION admin_revoke_agent_key(p_client_id text)
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

-- Which contexts of the workspace hold records, and how many: what an admin needs
-- to export every context. Keys and counts only, never content; admin grant only.
CREATE FUNCTION admin_context_usage()
RETURNS TABLE (context_key text, records bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
    SELECT m.context_key::text, count(*)
    FROM memories AS m
    WHERE m.workspace_id = setting_uuid('app.workspace_id')
      AND is_admin(m.workspace_id)
    GROUP BY m.context_key
    ORDER BY m.context_key
$$;

REVOKE ALL ON FUNCTION admin_principal(text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION admin_create_agent_key(text, text, text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION admin_revoke_agent_key(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION admin_context_usage() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION admin_principal(text, text, text) TO memory_runtime;
GRANT EXECUTE ON FUNCTION admin_create_agent_key(text, text, text[]) TO memory_runtime;
GRANT EXECUTE ON FUNCTION admin_revoke_agent_key(text) TO memory_runtime;
GRANT EXECUTE ON FUNCTION admin_context_usage() TO memory_runtime;
