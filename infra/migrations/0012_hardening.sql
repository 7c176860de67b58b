-- Hardening after a security review (docs/security.md, "Hardening"). Each part says
-- which finding it answers; tests/proof/test_hardening.py and
-- tests/integration/test_hardening.py prove them.

-- == Caller resolution: live principals, agent keys only in their own workspace ==========
-- A revoked key, or a key bound to another workspace, resolves to nothing even if a
-- membership row says otherwise.
CREATE OR REPLACE FUNCTION resolve_caller(p_workspace text, p_subject text, p_gate_key text)
RETURNS TABLE (workspace_id uuid, memory_enabled boolean, principal_id uuid,
               principal_kind text, handle text, grants text[],
               personal_namespace boolean, context_allowed boolean)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
    SELECT w.id, w.memory_enabled, p.id, p.kind, p.handle, m.grants, m.personal_namespace,
           CASE
               WHEN p_gate_key IS NULL THEN true
               ELSE COALESCE(
                   (SELECT NOT c.private OR EXISTS (
                               SELECT 1 FROM context_members cm
                               WHERE cm.workspace_id = c.workspace_id
                                 AND cm.context_key = c.context_key
                                 AND cm.principal_id = p.id)
                    FROM contexts c
                    WHERE c.workspace_id = w.id AND c.context_key = p_gate_key),
                   -- Unregistered: an open channel is fine, an unregistered DM is not.
                   p_gate_key NOT LIKE 'dm:%')
           END
    FROM workspaces w
    JOIN memberships m ON m.workspace_id = w.id
    JOIN principals p ON p.id = m.principal_id
    WHERE w.slug = p_workspace AND p.subject = p_subject
      AND p.revoked_at IS NULL
      AND (p.workspace_id IS NULL OR p.workspace_id = w.id)
$$;

-- == Who may be a member at all ==========================================================
-- Enforced for every role, the owner included: never a revoked agent key, another
-- workspace's key, or an erased identity's pseudonym.
CREATE FUNCTION check_member_principal() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
DECLARE
    joining principals%ROWTYPE;
BEGIN
    SELECT * INTO joining FROM principals WHERE id = NEW.principal_id;
    IF FOUND AND (joining.revoked_at IS NOT NULL
                  OR joining.subject LIKE 'erased:%'
                  OR (joining.workspace_id IS NOT NULL
                      AND joining.workspace_id <> NEW.workspace_id)) THEN
        RAISE EXCEPTION 'this principal cannot be a member of this workspace'
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$$;
REVOKE ALL ON FUNCTION check_member_principal() FROM PUBLIC;
CREATE TRIGGER memberships_principal
    BEFORE INSERT OR UPDATE OF workspace_id, principal_id ON memberships
    FOR EACH ROW EXECUTE FUNCTION check_member_principal();

-- == Writing needs reading ================================================================
-- A write or delete grant without read cannot work (a write returns the row it wrote,
-- which the read policy must let through) and has no use (changes name the revision
-- read). Refused for memberships and agent keys from now on; rows made before are
-- not rewritten (NOT VALID), and effective grants drop such writes anyway.
ALTER TABLE memberships ADD CONSTRAINT memberships_write_needs_read CHECK (
    'read' = ANY (grants)
    OR NOT grants && ARRAY['write:personal', 'write:shared', 'delete']::text[]) NOT VALID;
ALTER TABLE principals ADD CONSTRAINT agent_key_write_needs_read CHECK (
    key_scopes IS NULL
    OR 'memory/read' = ANY (key_scopes)
    OR NOT key_scopes && ARRAY['memory/write.personal', 'memory/write.shared',
                               'memory/delete']::text[]) NOT VALID;

-- == Changes re-check membership under a lock erasure also takes ========================
-- Every change transaction first calls lock_membership(): a shared advisory lock on the
-- caller's principal, then a fresh look at its membership. Erasure takes the same lock
-- exclusively before it purges, so a change in flight finishes first (and is purged),
-- and a change that starts later finds no membership and is refused.
CREATE FUNCTION principal_lock_key(p_principal uuid) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ('x' || left(replace(p_principal::text, '-', ''), 16))::bit(64)::bigint;

CREATE FUNCTION lock_membership() RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
DECLARE
    me constant uuid := setting_uuid('app.principal_id');
BEGIN
    PERFORM pg_advisory_xact_lock_shared(principal_lock_key(me));
    PERFORM 1 FROM memberships
    WHERE workspace_id = setting_uuid('app.workspace_id') AND principal_id = me;
    IF NOT FOUND THEN
        -- Mapped to permission_denied by db.translate_errors.
        RAISE EXCEPTION 'the caller is no longer a member of this workspace'
            USING ERRCODE = 'MS403';
    END IF;
    RETURN true;
END
$$;
REVOKE ALL ON FUNCTION lock_membership() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lock_membership() TO memory_runtime;

-- == Idempotency keys are bound to the listening context ================================
-- The same key from another context is another request: it never replays a result
-- (and so an id) from a context the caller does not hear now. Keys stored before this
-- migration belong to no context ('') and replay nowhere.
ALTER TABLE idempotency_keys ADD COLUMN context_key text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE idempotency_keys ALTER COLUMN context_key DROP DEFAULT;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
ALTER TABLE idempotency_keys
    ADD PRIMARY KEY (workspace_id, principal_id, context_key, target, idempotency_key);

-- == Personal records and private contexts stay out of admin-visible names ==============
-- May a record's address and source appear in the audit trail an admin pages and in
-- the events on the audit bus? Only for a shared record outside any registered
-- private context (a thread follows its channel). Otherwise the outbox row names the
-- record by id (memory://record/{id}) and carries no source.
CREATE FUNCTION audit_discloses(ws uuid, owner uuid, ctx text) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
    SELECT owner = '00000000-0000-0000-0000-000000000000'
       AND NOT EXISTS (SELECT 1 FROM contexts AS c
                       WHERE c.workspace_id = ws
                         AND c.context_key = split_part(ctx, '/', 1)
                         AND c.private)
$$;
REVOKE ALL ON FUNCTION audit_discloses(uuid, uuid, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION audit_discloses(uuid, uuid, text) TO memory_runtime;

-- Rows written before: the revision each row announced knows owner and context.
UPDATE audit_outbox AS a
SET uri = 'memory://record/' || a.memory_id::text, source = NULL
FROM revisions AS r
WHERE r.memory_id = a.memory_id AND r.revision = a.revision
  AND a.memory_id <> '00000000-0000-0000-0000-000000000000'
  AND a.uri NOT LIKE 'memory://record/%'
  AND NOT audit_discloses(r.workspace_id, r.owner_id, r.context_key);

-- Usage an admin sees: shared records only, and no private context the admin is not in.
CREATE OR REPLACE FUNCTION admin_context_usage()
RETURNS TABLE (context_key text, records bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
    SELECT m.context_key::text, count(*)
    FROM memories AS m
    WHERE m.workspace_id = setting_uuid('app.workspace_id')
      AND is_admin(m.workspace_id)
      AND m.owner_id = '00000000-0000-0000-0000-000000000000'
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

-- == Admins no longer create principals ==================================================
-- Principals are global (a handle shows in every workspace), so only the operator (or
-- a verified first sign-in) creates them. An admin adds an identity that exists and
-- may join this workspace; anything else (unknown, erased, revoked, another
-- workspace's key) is the same empty answer.
DROP FUNCTION admin_principal(text, text, text);
CREATE FUNCTION admin_joinable_principal(p_subject text)
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

-- == The second wall, as narrow as the first =============================================
-- Is this principal a member of the current workspace? For the principals policy,
-- which must not depend on what the caller may read of memberships.
CREATE FUNCTION is_workspace_member(p_principal uuid) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
    SELECT EXISTS (SELECT 1 FROM memberships AS m
                   WHERE m.principal_id = p_principal
                     AND m.workspace_id = setting_uuid('app.workspace_id'))
$$;
REVOKE ALL ON FUNCTION is_workspace_member(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION is_workspace_member(uuid) TO memory_runtime;

DROP POLICY runtime_select ON principals;
CREATE POLICY runtime_select ON principals FOR SELECT TO memory_runtime
    USING (is_workspace_member(id));

-- Records and history: every row a request writes names the caller as its writer.
DROP POLICY runtime_insert ON memories;
CREATE POLICY runtime_insert ON memories FOR INSERT TO memory_runtime
    WITH CHECK (can_write(workspace_id, owner_id, context_key)
                AND created_by = setting_uuid('app.principal_id')
                AND updated_by = setting_uuid('app.principal_id'));
DROP POLICY runtime_update ON memories;
CREATE POLICY runtime_update ON memories FOR UPDATE TO memory_runtime
    USING (can_see(workspace_id, owner_id, context_key)
           AND can_write(workspace_id, owner_id, context_key))
    WITH CHECK (can_write(workspace_id, owner_id, context_key)
                AND updated_by = setting_uuid('app.principal_id'));
DROP POLICY runtime_insert ON revisions;
CREATE POLICY runtime_insert ON revisions FOR INSERT TO memory_runtime
    WITH CHECK (can_write(workspace_id, owner_id, context_key)
                AND writer_id = setting_uuid('app.principal_id'));

-- Audit rows: a request writes, reads back and marks its own; an admin reads the trail.
DROP POLICY runtime_select ON audit_outbox;
CREATE POLICY runtime_select ON audit_outbox FOR SELECT TO memory_runtime
    USING (in_workspace(workspace_id)
           AND (writer_id = setting_uuid('app.principal_id') OR is_admin(workspace_id)));
DROP POLICY runtime_insert ON audit_outbox;
CREATE POLICY runtime_insert ON audit_outbox FOR INSERT TO memory_runtime
    WITH CHECK (in_workspace(workspace_id) AND writer_id = setting_uuid('app.principal_id'));
DROP POLICY runtime_update ON audit_outbox;
CREATE POLICY runtime_update ON audit_outbox FOR UPDATE TO memory_runtime
    USING (in_workspace(workspace_id) AND writer_id = setting_uuid('app.principal_id'))
    WITH CHECK (in_workspace(workspace_id) AND writer_id = setting_uuid('app.principal_id'));

-- Memberships and the context registry: a member sees its own rows, an admin all of
-- the workspace's; only admins change them (as before).
DROP POLICY runtime_select ON memberships;
CREATE POLICY runtime_select ON memberships FOR SELECT TO memory_runtime
    USING (in_workspace(workspace_id)
           AND (principal_id = setting_uuid('app.principal_id') OR is_admin(workspace_id)));
DROP POLICY runtime_select ON context_members;
CREATE POLICY runtime_select ON context_members FOR SELECT TO memory_runtime
    USING (in_workspace(workspace_id)
           AND (principal_id = setting_uuid('app.principal_id') OR is_admin(workspace_id)));
DROP POLICY runtime_select ON contexts;
CREATE POLICY runtime_select ON contexts FOR SELECT TO memory_runtime
    USING (in_workspace(workspace_id)
           AND (is_admin(workspace_id)
                OR EXISTS (SELECT 1 FROM context_members AS cm
                           WHERE cm.workspace_id = contexts.workspace_id
                             AND cm.context_key = contexts.context_key
                             AND cm.principal_id = setting_uuid('app.principal_id'))));

-- Only the columns the code changes.
REVOKE UPDATE ON memberships, contexts, context_members FROM memory_runtime;
GRANT UPDATE (grants, personal_namespace) ON memberships TO memory_runtime;
GRANT UPDATE (private) ON contexts TO memory_runtime;

-- == Over-long words in the search index =================================================
-- A lexeme holds at most 2046 bytes. The text parser keeps words up to that, and the
-- cell prefix (17 bytes) then pushed a long one past the limit: the write failed, and
-- failed again on every retry. Lexemes longer than what fits beside the prefix are now
-- cut to fit (at a character boundary), in documents and in queries alike, so the
-- record is stored, found by its other words, and found by the long word too.
CREATE FUNCTION fit_lexeme(lexeme text, room integer) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
    fitted text := left(lexeme, room);
BEGIN
    WHILE octet_length(fitted) > room LOOP
        -- Drop at least a quarter of the excess in characters (at most 4 bytes each).
        fitted := left(fitted, -greatest(1, (octet_length(fitted) - room + 3) / 4));
    END LOOP;
    RETURN fitted;
END
$$;

CREATE FUNCTION quoted_lexeme(lexeme text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN '''' || replace(replace(lexeme, '\', '\\'), '''', '''''') || '''';

-- doc with every lexeme longer than room bytes cut to fit (positions and weights kept).
CREATE FUNCTION fitted_tsvector(doc tsvector, room integer) RETURNS tsvector
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = memory, pg_temp
AS $$
DECLARE
    long text[];
BEGIN
    SELECT array_agg(u.lexeme) INTO long FROM unnest(doc) AS u WHERE octet_length(u.lexeme) > room;
    IF long IS NULL THEN
        RETURN doc;
    END IF;
    RETURN ts_delete(doc, long) || (
        SELECT string_agg(quoted_lexeme(fit_lexeme(u.lexeme, room)) || coalesce(':' || (
                   SELECT string_agg(x.p::text || x.w, ',' ORDER BY x.ord)
                   FROM unnest(u.positions, u.weights) WITH ORDINALITY AS x (p, w, ord)), ''),
               ' ')::tsvector
        FROM unnest(doc) AS u
        WHERE octet_length(u.lexeme) > room);
END
$$;

-- q with every lexeme longer than room bytes cut the same way (the structure kept).
CREATE FUNCTION fitted_tsquery(q tsquery, room integer) RETURNS tsquery
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = memory, pg_temp
AS $$
DECLARE
    lexeme text;
BEGIN
    IF octet_length(q::text) <= room THEN
        RETURN q;  -- nothing in it can be too long
    END IF;
    FOR lexeme IN
        SELECT DISTINCT replace(m[1], '''''', '''')
        FROM regexp_matches(q::text, '''((?:[^'']|'''')*)''', 'g') AS m
        WHERE octet_length(replace(m[1], '''''', '''')) > room
    LOOP
        q := ts_rewrite(q, quoted_lexeme(lexeme)::tsquery,
                        quoted_lexeme(fit_lexeme(lexeme, room))::tsquery);
    END LOOP;
    RETURN q;
END
$$;

-- The two prefixing functions of migration 0008, now fitting each lexeme first.
CREATE OR REPLACE FUNCTION prefixed_tsvector(prefix text, doc tsvector) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN regexp_replace(fitted_tsvector(doc, 2046 - octet_length(prefix))::text,
                      '''((?:[^'']|'''')*)''', '''' || prefix || '\1''', 'g')::tsvector;

CREATE OR REPLACE FUNCTION prefixed_tsquery(prefix text, query tsquery) RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN regexp_replace(fitted_tsquery(query, 2046 - octet_length(prefix))::text,
                      '''((?:[^'']|'''')*)''', '''' || prefix || '\1''', 'g')::tsquery;
