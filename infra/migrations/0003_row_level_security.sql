-- Row-level security: every tenant table is ENABLE + FORCE, with policies for
-- select, insert, update and delete for the runtime role. The owner role gets an
-- explicit full-access policy (it runs migrations, operator tasks and the
-- SECURITY DEFINER functions below, which apply the predicate themselves).

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['workspaces', 'principals', 'memberships', 'contexts',
                             'context_members', 'memories', 'revisions',
                             'idempotency_keys', 'audit_outbox'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY owner_all ON %I TO memory_owner USING (true) WITH CHECK (true)', t);
    END LOOP;
END
$$;

-- memories: the visibility predicate, and the write/delete predicates.
CREATE POLICY runtime_select ON memories FOR SELECT TO memory_runtime
    USING (can_see(workspace_id, owner_id, context_key));
CREATE POLICY runtime_insert ON memories FOR INSERT TO memory_runtime
    WITH CHECK (can_write(workspace_id, owner_id, context_key));
CREATE POLICY runtime_update ON memories FOR UPDATE TO memory_runtime
    USING (can_see(workspace_id, owner_id, context_key) AND can_write(workspace_id, owner_id, context_key))
    WITH CHECK (can_write(workspace_id, owner_id, context_key));
CREATE POLICY runtime_delete ON memories FOR DELETE TO memory_runtime
    USING (can_see(workspace_id, owner_id, context_key) AND can_delete(workspace_id, owner_id, context_key));

-- revisions: append-only; a delete may only purge bodies of a record it may delete.
CREATE POLICY runtime_select ON revisions FOR SELECT TO memory_runtime
    USING (can_see(workspace_id, owner_id, context_key));
CREATE POLICY runtime_insert ON revisions FOR INSERT TO memory_runtime
    WITH CHECK (can_write(workspace_id, owner_id, context_key));
CREATE POLICY runtime_update ON revisions FOR UPDATE TO memory_runtime
    USING (can_delete(workspace_id, owner_id, context_key))
    WITH CHECK (can_delete(workspace_id, owner_id, context_key) AND body IS NULL);
CREATE POLICY runtime_delete ON revisions FOR DELETE TO memory_runtime
    USING (false);

-- idempotency keys: only the caller's own, in its workspace.
CREATE POLICY runtime_all ON idempotency_keys FOR ALL TO memory_runtime
    USING (in_workspace(workspace_id) AND principal_id = setting_uuid('app.principal_id'))
    WITH CHECK (in_workspace(workspace_id) AND principal_id = setting_uuid('app.principal_id'));

-- audit outbox: written and marked published within the workspace; never deleted.
CREATE POLICY runtime_select ON audit_outbox FOR SELECT TO memory_runtime
    USING (in_workspace(workspace_id));
CREATE POLICY runtime_insert ON audit_outbox FOR INSERT TO memory_runtime
    WITH CHECK (in_workspace(workspace_id));
CREATE POLICY runtime_update ON audit_outbox FOR UPDATE TO memory_runtime
    USING (in_workspace(workspace_id)) WITH CHECK (in_workspace(workspace_id));
CREATE POLICY runtime_delete ON audit_outbox FOR DELETE TO memory_runtime
    USING (false);

-- workspace, membership and context registry: readable within the workspace,
-- changeable only with the admin grant.
CREATE POLICY runtime_select ON workspaces FOR SELECT TO memory_runtime
    USING (in_workspace(id));
CREATE POLICY runtime_insert ON workspaces FOR INSERT TO memory_runtime
    WITH CHECK (false);
CREATE POLICY runtime_update ON workspaces FOR UPDATE TO memory_runtime
    USING (is_admin(id)) WITH CHECK (is_admin(id));
CREATE POLICY runtime_delete ON workspaces FOR DELETE TO memory_runtime
    USING (false);

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['memberships', 'contexts', 'context_members'] LOOP
        EXECUTE format('CREATE POLICY runtime_select ON %I FOR SELECT TO memory_runtime USING (in_workspace(workspace_id))', t);
        EXECUTE format('CREATE POLICY runtime_insert ON %I FOR INSERT TO memory_runtime WITH CHECK (is_admin(workspace_id))', t);
        EXECUTE format('CREATE POLICY runtime_update ON %I FOR UPDATE TO memory_runtime USING (is_admin(workspace_id)) WITH CHECK (is_admin(workspace_id))', t);
        EXECUTE format('CREATE POLICY runtime_delete ON %I FOR DELETE TO memory_runtime USING (is_admin(workspace_id))', t);
    END LOOP;
END
$$;

-- principals: a principal is visible only while it is a member of the current
-- workspace (for provenance handles); principals are managed by the operator.
CREATE POLICY runtime_select ON principals FOR SELECT TO memory_runtime
    USING (EXISTS (SELECT 1 FROM memberships m
                   WHERE m.principal_id = principals.id
                     AND m.workspace_id = setting_uuid('app.workspace_id')));
CREATE POLICY runtime_insert ON principals FOR INSERT TO memory_runtime WITH CHECK (false);
CREATE POLICY runtime_update ON principals FOR UPDATE TO memory_runtime USING (false);
CREATE POLICY runtime_delete ON principals FOR DELETE TO memory_runtime USING (false);
