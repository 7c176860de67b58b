-- Visibility: the one authorization predicate, as SQL, and every row-level-security
-- policy of the schema.
--
-- The predicate functions read the request's transaction-local settings
-- (set_config(..., true)); an unset or reset setting reads as NULL, so a session
-- without them sees nothing. Policies, the search and caller resolution all use them;
-- the application's own statements pass the same values as parameters (the first
-- wall) and row-level security enforces them again (the second).
--
-- Current state, applied after the numbered migrations whenever a file of
-- infra/schema/ changed (memory_server/migrate.py): re-runnable. Every policy of the
-- schema is dropped first and made again from this file, so a policy removed here is
-- removed from the database too. Tables are ENABLE + FORCE ROW LEVEL SECURITY in
-- infra/migrations/.

CREATE OR REPLACE FUNCTION setting_uuid(name text) RETURNS uuid
LANGUAGE sql STABLE PARALLEL SAFE
RETURN NULLIF(current_setting(name, true), '')::uuid;

CREATE OR REPLACE FUNCTION setting_array(name text) RETURNS text[]
LANGUAGE sql STABLE PARALLEL SAFE
RETURN NULLIF(current_setting(name, true), '')::text[];

-- Whose records may the current request see? The workspace's (the nil owner), and its
-- own where it has a personal namespace. The owner rule of can_see and can_write (a
-- write needs the grant of the owner's kind besides) and of the owners a search reads
-- (search_owners, 60_search.sql).
CREATE OR REPLACE FUNCTION sees_owner(owner uuid) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
RETURN owner = '00000000-0000-0000-0000-000000000000'
    OR (owner = setting_uuid('app.principal_id')
        AND current_setting('app.personal', true) = 'on');

-- May the current request see a record with these coordinates?
CREATE OR REPLACE FUNCTION can_see(ws uuid, owner uuid, ctx text) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
RETURN ws = setting_uuid('app.workspace_id')
   AND ctx = ANY (setting_array('app.contexts'))
   AND 'read' = ANY (setting_array('app.grants'))
   AND sees_owner(owner);

-- May the current request create or change a record with these coordinates?
CREATE OR REPLACE FUNCTION can_write(ws uuid, owner uuid, ctx text) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
RETURN ws = setting_uuid('app.workspace_id')
   AND ctx = ANY (setting_array('app.contexts'))
   AND sees_owner(owner)
   AND CASE WHEN owner = '00000000-0000-0000-0000-000000000000' THEN 'write:shared'
            ELSE 'write:personal' END = ANY (setting_array('app.grants'));

CREATE OR REPLACE FUNCTION can_delete(ws uuid, owner uuid, ctx text) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
RETURN can_write(ws, owner, ctx) AND 'delete' = ANY (setting_array('app.grants'));

-- Is a record with this expiry still there? From its expires_at on, a record is
-- outside every view, for every statement and every role but the owner's (the
-- sweeper then purges it: memory.expire_records).
CREATE OR REPLACE FUNCTION is_live(expires timestamptz) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
RETURN expires IS NULL OR expires > now();

-- The same at this instant, for a change or a delete that holds the record's row
-- lock (memory.lock_live): is_live compares with now(), the start of the
-- transaction, which may be long before the lock was granted.
CREATE OR REPLACE FUNCTION held_live(expires timestamptz) RETURNS boolean
LANGUAGE sql VOLATILE PARALLEL SAFE
RETURN expires IS NULL OR expires > clock_timestamp();

-- Has this record expired (and not been purged yet)? For the revisions policy, whose
-- rows do not carry the record's expiry; definer rights, since the caller's own view
-- of memories no longer shows an expired record.
CREATE OR REPLACE FUNCTION record_expired(p_id uuid) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
    SELECT EXISTS (SELECT 1 FROM memories AS m WHERE m.id = p_id AND NOT is_live(m.expires_at))
$$;
REVOKE ALL ON FUNCTION record_expired(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION record_expired(uuid) TO memory_runtime;

-- The first wall: the records a request statement's own parameters allow (the
-- caller's workspace, visible owners and visible contexts, records not expired),
-- stated once for every statement that reads memories; row-level security (can_see,
-- is_live) applies the same view again from the settings. Plain SQL without settings
-- of its own, so that the planner inlines it and the indexes on
-- (workspace_id, owner_id, ...) serve as before.
CREATE OR REPLACE FUNCTION records_in_view(p_workspace_id uuid, p_owners uuid[],
                                           p_contexts text[])
RETURNS SETOF memory.memories
LANGUAGE sql STABLE
AS $$
    SELECT *
    FROM memory.memories AS m
    WHERE m.workspace_id = p_workspace_id
      AND m.owner_id = ANY (p_owners)
      AND m.context_key = ANY (p_contexts)
      AND memory.is_live(m.expires_at)
$$;
REVOKE ALL ON FUNCTION records_in_view(uuid, uuid[], text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION records_in_view(uuid, uuid[], text[]) TO memory_runtime;

CREATE OR REPLACE FUNCTION in_workspace(ws uuid) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
RETURN ws = setting_uuid('app.workspace_id');

CREATE OR REPLACE FUNCTION is_admin(ws uuid) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
RETURN ws = setting_uuid('app.workspace_id') AND 'admin' = ANY (setting_array('app.grants'));

-- Is this principal a member of the current workspace? For the principals policy,
-- which must not depend on what the caller may read of memberships.
CREATE OR REPLACE FUNCTION is_workspace_member(p_principal uuid) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
    SELECT EXISTS (SELECT 1 FROM memberships AS m
                   WHERE m.principal_id = p_principal
                     AND m.workspace_id = setting_uuid('app.workspace_id'))
$$;
REVOKE ALL ON FUNCTION is_workspace_member(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION is_workspace_member(uuid) TO memory_runtime;

-- Is the caller one of the members of this registered context? For the
-- context_members policy, which must not read context_members under its own policy.
CREATE OR REPLACE FUNCTION is_context_member(ws uuid, ctx text) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
    SELECT EXISTS (SELECT 1 FROM context_members AS cm
                   WHERE cm.workspace_id = ws AND cm.context_key = ctx
                     AND cm.principal_id = setting_uuid('app.principal_id'))
$$;
REVOKE ALL ON FUNCTION is_context_member(uuid, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION is_context_member(uuid, text) TO memory_runtime;

-- Is this principal a live agent key made in the current workspace? The only
-- identities an admin adds directly; everyone else joins by accepting an invitation
-- (accept_invitation, 70_admin.sql).
CREATE OR REPLACE FUNCTION is_workspace_key(p_principal uuid) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
    SELECT EXISTS (SELECT 1 FROM principals AS p
                   WHERE p.id = p_principal
                     AND p.workspace_id = setting_uuid('app.workspace_id')
                     AND p.revoked_at IS NULL)
$$;
REVOKE ALL ON FUNCTION is_workspace_key(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION is_workspace_key(uuid) TO memory_runtime;

-- -- Policies ----------------------------------------------------------------------------
-- Every tenant table: a full-access policy for the owner role (it runs migrations,
-- operator tasks and the SECURITY DEFINER functions, which apply the predicate
-- themselves). The context registry changes only through the admin functions of
-- 70_admin.sql, which know who may change a private context: the runtime role may
-- not write it directly (nor, since 0003_invitations.sql, hold the privilege to).
DO $$
DECLARE
    p record;
    t text;
BEGIN
    FOR p IN SELECT tablename, policyname FROM pg_policies WHERE schemaname = 'memory' LOOP
        EXECUTE format('DROP POLICY %I ON %I', p.policyname, p.tablename);
    END LOOP;
    FOREACH t IN ARRAY ARRAY['workspaces', 'principals', 'memberships', 'contexts',
                             'context_members', 'memories', 'revisions',
                             'idempotency_keys', 'audit_outbox'] LOOP
        EXECUTE format('CREATE POLICY owner_all ON %I TO memory_owner USING (true) WITH CHECK (true)', t);
        CONTINUE WHEN t NOT IN ('contexts', 'context_members');
        EXECUTE format('CREATE POLICY runtime_insert ON %I FOR INSERT TO memory_runtime WITH CHECK (false)', t);
        EXECUTE format('CREATE POLICY runtime_update ON %I FOR UPDATE TO memory_runtime USING (false)', t);
        EXECUTE format('CREATE POLICY runtime_delete ON %I FOR DELETE TO memory_runtime USING (false)', t);
    END LOOP;
END
$$;

-- Memberships change only with the admin grant; an admin adds directly only the
-- workspace's own agent keys (a person, or another workspace's service, joins by
-- accepting an invitation: accept_invitation, 70_admin.sql).
CREATE POLICY runtime_insert ON memberships FOR INSERT TO memory_runtime
    WITH CHECK (is_admin(workspace_id) AND is_workspace_key(principal_id));
CREATE POLICY runtime_update ON memberships FOR UPDATE TO memory_runtime
    USING (is_admin(workspace_id)) WITH CHECK (is_admin(workspace_id));
CREATE POLICY runtime_delete ON memberships FOR DELETE TO memory_runtime
    USING (is_admin(workspace_id));

-- memories: the visibility predicate, and the write/delete predicates; every row a
-- request writes names the caller as its writer. An expired record is in no view.
CREATE POLICY runtime_select ON memories FOR SELECT TO memory_runtime
    USING (can_see(workspace_id, owner_id, context_key) AND is_live(expires_at));
CREATE POLICY runtime_insert ON memories FOR INSERT TO memory_runtime
    WITH CHECK (can_write(workspace_id, owner_id, context_key)
                AND created_by = setting_uuid('app.principal_id')
                AND updated_by = setting_uuid('app.principal_id'));
CREATE POLICY runtime_update ON memories FOR UPDATE TO memory_runtime
    USING (can_see(workspace_id, owner_id, context_key) AND is_live(expires_at)
           AND can_write(workspace_id, owner_id, context_key))
    WITH CHECK (can_write(workspace_id, owner_id, context_key)
                AND updated_by = setting_uuid('app.principal_id'));
CREATE POLICY runtime_delete ON memories FOR DELETE TO memory_runtime
    USING (can_see(workspace_id, owner_id, context_key) AND is_live(expires_at)
           AND can_delete(workspace_id, owner_id, context_key));

-- revisions: append-only; a delete may only purge bodies of a record it may delete.
-- The revisions of an expired record are out of view with it.
CREATE POLICY runtime_select ON revisions FOR SELECT TO memory_runtime
    USING (can_see(workspace_id, owner_id, context_key) AND NOT record_expired(memory_id));
CREATE POLICY runtime_insert ON revisions FOR INSERT TO memory_runtime
    WITH CHECK (can_write(workspace_id, owner_id, context_key)
                AND writer_id = setting_uuid('app.principal_id'));
CREATE POLICY runtime_update ON revisions FOR UPDATE TO memory_runtime
    USING (can_delete(workspace_id, owner_id, context_key))
    WITH CHECK (can_delete(workspace_id, owner_id, context_key) AND body IS NULL);
CREATE POLICY runtime_delete ON revisions FOR DELETE TO memory_runtime
    USING (false);

-- idempotency keys: only the caller's own, in its workspace.
CREATE POLICY runtime_all ON idempotency_keys FOR ALL TO memory_runtime
    USING (in_workspace(workspace_id) AND principal_id = setting_uuid('app.principal_id'))
    WITH CHECK (in_workspace(workspace_id) AND principal_id = setting_uuid('app.principal_id'));

-- audit outbox: a request writes, reads back and marks its own rows; an admin reads
-- the trail; never deleted.
CREATE POLICY runtime_select ON audit_outbox FOR SELECT TO memory_runtime
    USING (in_workspace(workspace_id)
           AND (writer_id = setting_uuid('app.principal_id') OR is_admin(workspace_id)));
CREATE POLICY runtime_insert ON audit_outbox FOR INSERT TO memory_runtime
    WITH CHECK (in_workspace(workspace_id) AND writer_id = setting_uuid('app.principal_id'));
CREATE POLICY runtime_update ON audit_outbox FOR UPDATE TO memory_runtime
    USING (in_workspace(workspace_id) AND writer_id = setting_uuid('app.principal_id'))
    WITH CHECK (in_workspace(workspace_id) AND writer_id = setting_uuid('app.principal_id'));
CREATE POLICY runtime_delete ON audit_outbox FOR DELETE TO memory_runtime
    USING (false);

-- workspaces: readable within the workspace, its memory feature changeable by an admin.
CREATE POLICY runtime_select ON workspaces FOR SELECT TO memory_runtime
    USING (in_workspace(id));
CREATE POLICY runtime_insert ON workspaces FOR INSERT TO memory_runtime
    WITH CHECK (false);
CREATE POLICY runtime_update ON workspaces FOR UPDATE TO memory_runtime
    USING (is_admin(id)) WITH CHECK (is_admin(id));
CREATE POLICY runtime_delete ON workspaces FOR DELETE TO memory_runtime
    USING (false);

-- Memberships and the context registry: a member sees its own rows; an admin all the
-- memberships and every registered context of the workspace, but the members of a
-- private context only where it is one of them itself (who is in a DM or a private
-- channel is its members' business).
CREATE POLICY runtime_select ON memberships FOR SELECT TO memory_runtime
    USING (in_workspace(workspace_id)
           AND (principal_id = setting_uuid('app.principal_id') OR is_admin(workspace_id)));
CREATE POLICY runtime_select ON context_members FOR SELECT TO memory_runtime
    USING (in_workspace(workspace_id)
           AND (principal_id = setting_uuid('app.principal_id')
                OR (is_admin(workspace_id) AND is_context_member(workspace_id, context_key))));
CREATE POLICY runtime_select ON contexts FOR SELECT TO memory_runtime
    USING (in_workspace(workspace_id)
           AND (is_admin(workspace_id)
                OR EXISTS (SELECT 1 FROM context_members AS cm
                           WHERE cm.workspace_id = contexts.workspace_id
                             AND cm.context_key = contexts.context_key
                             AND cm.principal_id = setting_uuid('app.principal_id'))));

-- principals: a principal is visible only while it is a member of the current
-- workspace (for provenance handles); principals are managed by the operator.
CREATE POLICY runtime_select ON principals FOR SELECT TO memory_runtime
    USING (is_workspace_member(id));
CREATE POLICY runtime_insert ON principals FOR INSERT TO memory_runtime WITH CHECK (false);
CREATE POLICY runtime_update ON principals FOR UPDATE TO memory_runtime USING (false);
CREATE POLICY runtime_delete ON principals FOR DELETE TO memory_runtime USING (false);
