-- Administration: the SECURITY DEFINER entry points the admin API needs beyond what
-- row-level security already allows. Admin writes to memberships and
-- workspaces.memory_enabled go through the policies of 10_visibility.sql (with the
-- admin grant); these functions answer what an admin may not read itself, change the
-- context registry under the rules of private contexts, and hold the invitations; each
-- checks the admin grant first (but accept_invitation, the invitee's own). Operator
-- tasks (creating workspaces and identities) run as the owner role and need no
-- function. The rules these functions enforce again are memory_server/admin/rules.py's.
--
-- Current state, re-runnable (applied by memory_server/migrate.py after the numbered
-- migrations).

-- Every admin function's first step: the request must hold the admin grant in its
-- workspace (an error otherwise, which the admin API answers as 403).
CREATE OR REPLACE FUNCTION require_admin() RETURNS void
LANGUAGE plpgsql STABLE SET search_path = memory, pg_temp
AS $$
BEGIN
    IF NOT coalesce(is_admin(setting_uuid('app.workspace_id')), false) THEN
        RAISE EXCEPTION 'the admin grant is required' USING ERRCODE = 'insufficient_privilege';
    END IF;
END
$$;
REVOKE ALL ON FUNCTION require_admin() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION require_admin() TO memory_runtime;

-- An identity an admin may add as a member directly: a live agent key made in this
-- workspace. Everyone else (a person, another workspace's service) is invited and
-- joins by accepting; an unknown, erased, revoked, foreign or known identity is the
-- same empty answer here, so the admin API is no oracle.
CREATE OR REPLACE FUNCTION admin_joinable_principal(p_subject text)
RETURNS TABLE (id uuid, kind text)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
BEGIN
    PERFORM require_admin();
    RETURN QUERY
        SELECT p.id, p.kind FROM principals AS p
        WHERE p.subject = p_subject
          AND p.revoked_at IS NULL
          AND p.workspace_id = setting_uuid('app.workspace_id');
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
    PERFORM require_admin();
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
    PERFORM require_admin();
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

-- -- Private channels and DMs ------------------------------------------------------------
-- Rules (memory_server/admin/rules.py decides them first, with the same facts):
-- only a private context's own members change its member list or unregister it (an
-- admin outside it gets insufficient_privilege), unless nobody is in it and it holds
-- nothing; a DM's participants are fixed when it is registered; a private context that
-- holds records is never unregistered (that would open a channel to every member); an
-- admin outside a private context may still delete it wholesale, never read it.

-- What a change of a registered context needs to know, as the current request's
-- admin may not read it (members and records of a private context it is not in). No
-- names and no counts: whether the caller is in it, whether anyone is, whether it or
-- its threads hold any record (in any namespace).
CREATE OR REPLACE FUNCTION context_state(ws uuid, p_key text, me uuid)
RETURNS TABLE (registered boolean, private boolean, caller_in_it boolean, has_members boolean,
               holds_records boolean)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
    SELECT c.context_key IS NOT NULL,
           coalesce(c.private, false),
           EXISTS (SELECT 1 FROM context_members AS cm
                   WHERE cm.workspace_id = ws AND cm.context_key = p_key
                     AND cm.principal_id = me),
           EXISTS (SELECT 1 FROM context_members AS cm
                   WHERE cm.workspace_id = ws AND cm.context_key = p_key),
           EXISTS (SELECT 1 FROM memories AS m
                   WHERE m.workspace_id = ws AND split_part(m.context_key, '/', 1) = p_key)
    FROM (SELECT 1) AS one
    LEFT JOIN contexts AS c ON c.workspace_id = ws AND c.context_key = p_key
$$;
REVOKE ALL ON FUNCTION context_state(uuid, text, uuid) FROM PUBLIC;

CREATE OR REPLACE FUNCTION admin_context_state(p_key text)
RETURNS TABLE (registered boolean, private boolean, caller_in_it boolean, has_members boolean,
               holds_records boolean)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
BEGIN
    PERFORM require_admin();
    RETURN QUERY SELECT * FROM context_state(setting_uuid('app.workspace_id'), p_key,
                                             setting_uuid('app.principal_id'));
END
$$;
REVOKE ALL ON FUNCTION admin_context_state(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION admin_context_state(text) TO memory_runtime;

-- The registered context locked for a change, with its state; refuses an admin
-- outside a private context that anyone is in or that holds records.
CREATE OR REPLACE FUNCTION lock_private_context(ws uuid, p_key text, me uuid)
RETURNS TABLE (registered boolean, private boolean, caller_in_it boolean, has_members boolean,
               holds_records boolean)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
DECLARE
    found record;
BEGIN
    PERFORM 1 FROM contexts AS c WHERE c.workspace_id = ws AND c.context_key = p_key FOR UPDATE;
    SELECT * INTO found FROM context_state(ws, p_key, me);
    IF found.private AND NOT found.caller_in_it
       AND (found.has_members OR found.holds_records) THEN
        RAISE EXCEPTION 'only the members of a private context change its members'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN QUERY SELECT found.registered, found.private, found.caller_in_it,
                        found.has_members, found.holds_records;
END
$$;
REVOKE ALL ON FUNCTION lock_private_context(uuid, text, uuid) FROM PUBLIC;

-- The kind of a registrable context key: a channel or a DM, never a thread.
CREATE OR REPLACE FUNCTION registrable_kind(p_key text) RETURNS text
LANGUAGE plpgsql IMMUTABLE SET search_path = memory, pg_temp
AS $$
BEGIN
    IF position('/' IN p_key) > 0 OR p_key !~ '^(channel|dm):.' THEN
        RAISE EXCEPTION 'only channels and DMs are registered' USING ERRCODE = 'check_violation';
    END IF;
    RETURN split_part(p_key, ':', 1);
END
$$;
REVOKE ALL ON FUNCTION registrable_kind(text) FROM PUBLIC;

-- Register a private channel or a DM with exactly these members (members of the
-- workspace), or change a private channel's members.
CREATE OR REPLACE FUNCTION admin_register_context(p_key text, p_members uuid[])
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
DECLARE
    ws constant uuid := setting_uuid('app.workspace_id');
    kind constant text := registrable_kind(p_key);
    now_ record;
    current_members uuid[];
BEGIN
    PERFORM require_admin();
    IF EXISTS (SELECT 1 FROM unnest(p_members) AS given (id)
               WHERE NOT EXISTS (SELECT 1 FROM memberships AS m
                                 WHERE m.workspace_id = ws AND m.principal_id = given.id)) THEN
        RAISE EXCEPTION 'a context''s members are members of the workspace'
            USING ERRCODE = 'check_violation';
    END IF;
    SELECT * INTO now_ FROM lock_private_context(ws, p_key, setting_uuid('app.principal_id'));
    IF now_.private THEN
        SELECT coalesce(array_agg(cm.principal_id ORDER BY cm.principal_id), '{}')
        INTO current_members
        FROM context_members AS cm WHERE cm.workspace_id = ws AND cm.context_key = p_key;
        IF kind = 'dm' AND (now_.has_members OR now_.holds_records)
           AND current_members <> (SELECT coalesce(array_agg(DISTINCT m ORDER BY m), '{}')
                                   FROM unnest(p_members) AS m) THEN
            RAISE EXCEPTION 'a DM''s participants are fixed when it is registered'
                USING ERRCODE = 'check_violation';
        END IF;
    ELSIF kind = 'dm' AND now_.holds_records THEN
        RAISE EXCEPTION 'this DM holds records of an earlier registration: delete them first'
            USING ERRCODE = 'check_violation';
    END IF;
    INSERT INTO contexts (workspace_id, context_key, kind, private)
    VALUES (ws, p_key, kind, true)
    ON CONFLICT (workspace_id, context_key) DO UPDATE SET private = true;
    DELETE FROM context_members AS cm
    WHERE cm.workspace_id = ws AND cm.context_key = p_key AND cm.principal_id <> ALL (p_members);
    INSERT INTO context_members (workspace_id, context_key, principal_id)
    SELECT ws, p_key, member FROM unnest(p_members) AS member
    ON CONFLICT DO NOTHING;
END
$$;
REVOKE ALL ON FUNCTION admin_register_context(text, uuid[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION admin_register_context(text, uuid[]) TO memory_runtime;

-- Unregister a context: false when it is not registered. A private one only by its
-- members, and never while it holds records.
CREATE OR REPLACE FUNCTION admin_unregister_context(p_key text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
DECLARE
    ws constant uuid := setting_uuid('app.workspace_id');
    now_ record;
BEGIN
    PERFORM require_admin();
    SELECT * INTO now_ FROM lock_private_context(ws, p_key, setting_uuid('app.principal_id'));
    IF NOT now_.registered THEN
        RETURN false;
    END IF;
    IF now_.private AND now_.holds_records THEN
        RAISE EXCEPTION 'a private context that holds records is not unregistered'
            USING ERRCODE = 'check_violation';
    END IF;
    DELETE FROM contexts WHERE workspace_id = ws AND context_key = p_key;
    RETURN true;
END
$$;
REVOKE ALL ON FUNCTION admin_unregister_context(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION admin_unregister_context(text) TO memory_runtime;

-- Delete a private context wholesale, by any admin (in it or not), never reading it:
-- every record of it and its threads, in every namespace, is deleted as memory_delete
-- deletes (the bodies of all its revisions purged, a tombstone revision and an audit
-- row naming the record by id only), the idempotency keys used from it go, and so do
-- its members: it stays registered, private and nobody's (so nothing written to it
-- afterwards lands in an open channel). A DM that is not registered may be deleted
-- too (its records were left by an earlier registration). No row: not a private
-- context or a DM.
CREATE OR REPLACE FUNCTION admin_delete_context(p_key text, p_request_id text)
RETURNS TABLE (records_deleted bigint, revisions_purged bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
DECLARE
    ws constant uuid := setting_uuid('app.workspace_id');
    me constant uuid := setting_uuid('app.principal_id');
    kind constant text := registrable_kind(p_key);
    is_private boolean;
    gone memories;
    deleted bigint := 0;
    purged bigint := 0;
BEGIN
    PERFORM require_admin();
    SELECT c.private INTO is_private FROM contexts AS c
    WHERE c.workspace_id = ws AND c.context_key = p_key FOR UPDATE;
    IF NOT coalesce(is_private, kind = 'dm') THEN
        RETURN;
    END IF;
    DELETE FROM context_members WHERE workspace_id = ws AND context_key = p_key;
    DELETE FROM idempotency_keys AS k
    WHERE k.workspace_id = ws AND split_part(k.context_key, '/', 1) = p_key;
    -- Each record purged as memory_delete purges one (purge_record, 40_writes.sql);
    -- in a private context the audit row names it by id only.
    FOR gone IN
        DELETE FROM memories AS m
        WHERE m.workspace_id = ws AND split_part(m.context_key, '/', 1) = p_key
        RETURNING m.*
    LOOP
        purged := purged + purge_record(gone, 'delete', me, p_request_id,
                                        'memory://record/' || gone.id::text);
        deleted := deleted + 1;
    END LOOP;
    RETURN QUERY SELECT deleted, purged;
END
$$;
REVOKE ALL ON FUNCTION admin_delete_context(text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION admin_delete_context(text, text) TO memory_runtime;

-- A membership's end ends the member's place in the workspace's private contexts, on
-- every path (an admin's removal, a key's revocation, an operator's change): the
-- runtime role cannot delete context_members itself.
CREATE OR REPLACE FUNCTION membership_ended() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
BEGIN
    DELETE FROM context_members
    WHERE workspace_id = OLD.workspace_id AND principal_id = OLD.principal_id;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION membership_ended() FROM PUBLIC;
CREATE OR REPLACE TRIGGER memberships_ended AFTER DELETE ON memberships
    FOR EACH ROW EXECUTE FUNCTION membership_ended();

-- -- Invitations ----------------------------------------------------------------------------
-- A person, or another workspace's service, becomes a member only by accepting an
-- invitation with its own token. Inviting answers alike whoever the subject is (known,
-- unknown, another workspace's): nothing here looks at principals.

-- Invite a subject (a pending invitation for it is replaced: new grants, new expiry,
-- same id). Expired invitations of the workspace go first. No row: the workspace
-- already holds p_max pending invitations for other subjects. The inviter is shown by
-- handle and kind (principal_provenance); the kind was added to the result, and a
-- result type is not replaced in place.
DROP FUNCTION IF EXISTS admin_invite(text, text[], boolean, interval, integer);
CREATE OR REPLACE FUNCTION admin_invite(p_subject text, p_grants text[], p_personal boolean,
                                        p_ttl interval, p_max integer)
RETURNS TABLE (id uuid, subject text, grants text[], personal_namespace boolean,
               invited_by text, invited_by_kind text, created_at timestamptz,
               expires_at timestamptz)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    ws constant uuid := setting_uuid('app.workspace_id');
    me constant uuid := setting_uuid('app.principal_id');
BEGIN
    PERFORM require_admin();
    DELETE FROM invitations AS i WHERE i.workspace_id = ws AND i.expires_at <= now();
    IF (SELECT count(*) FROM invitations AS i
        WHERE i.workspace_id = ws AND i.subject <> p_subject) >= p_max THEN
        RETURN;
    END IF;
    RETURN QUERY
    WITH made AS (
        INSERT INTO invitations AS i
            (workspace_id, subject, grants, personal_namespace, invited_by, expires_at)
        VALUES (ws, p_subject, p_grants, p_personal, me, now() + p_ttl)
        ON CONFLICT (workspace_id, subject) DO UPDATE
            SET grants = EXCLUDED.grants, personal_namespace = EXCLUDED.personal_namespace,
                invited_by = EXCLUDED.invited_by, created_at = now(),
                expires_at = EXCLUDED.expires_at
        RETURNING i.id, i.subject, i.grants, i.personal_namespace, i.invited_by,
                  i.created_at, i.expires_at
    )
    SELECT made.id, made.subject, made.grants, made.personal_namespace, w.handle, w.kind,
           made.created_at, made.expires_at
    FROM made
    CROSS JOIN LATERAL principal_provenance(made.invited_by) AS w;
END
$$;
REVOKE ALL ON FUNCTION admin_invite(text, text[], boolean, interval, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION admin_invite(text, text[], boolean, interval, integer)
    TO memory_runtime;

-- The workspace's pending invitations, oldest first, each with its inviter's handle
-- and kind (added to the result, so the function is made again).
DROP FUNCTION IF EXISTS admin_invitations();
CREATE OR REPLACE FUNCTION admin_invitations()
RETURNS TABLE (id uuid, subject text, grants text[], personal_namespace boolean,
               invited_by text, invited_by_kind text, created_at timestamptz,
               expires_at timestamptz)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
BEGIN
    PERFORM require_admin();
    RETURN QUERY
    SELECT i.id, i.subject, i.grants, i.personal_namespace, w.handle, w.kind,
           i.created_at, i.expires_at
    FROM invitations AS i
    CROSS JOIN LATERAL principal_provenance(i.invited_by) AS w
    WHERE i.workspace_id = setting_uuid('app.workspace_id') AND i.expires_at > now()
    ORDER BY i.created_at, i.id;
END
$$;
REVOKE ALL ON FUNCTION admin_invitations() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION admin_invitations() TO memory_runtime;

-- Withdraw a pending invitation: false when there is none with that id here.
CREATE OR REPLACE FUNCTION admin_revoke_invitation(p_id uuid)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
BEGIN
    PERFORM require_admin();
    DELETE FROM invitations AS i
    WHERE i.id = p_id AND i.workspace_id = setting_uuid('app.workspace_id');
    RETURN FOUND;
END
$$;
REVOKE ALL ON FUNCTION admin_revoke_invitation(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION admin_revoke_invitation(uuid) TO memory_runtime;

-- The invitee accepts, with the identity of its own verified token (p_subject; a
-- person's, or a service's when p_person is false). Called before the invitee is a
-- member, so it reads no request settings. Only an unexpired invitation of that
-- subject in that workspace is accepted, and only by an identity that may join
-- (check_member_principal's rule, 20_caller.sql): no row for anything else, alike.
-- A person new to the service becomes an identity here, with the handle it chose
-- ('handle_required' when it gave none). The membership holds the invitation's
-- grants; it is audited as member.add by the invitee, and the invitation goes.
CREATE OR REPLACE FUNCTION accept_invitation(p_workspace text, p_invitation uuid,
                                             p_subject text, p_person boolean,
                                             p_handle text, p_request_id text)
RETURNS TABLE (outcome text, principal_id uuid, kind text, handle text, grants text[],
               personal_namespace boolean)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
DECLARE
    ws uuid;
    invited invitations%ROWTYPE;
    joining principals%ROWTYPE;
    personal boolean;
BEGIN
    -- The workspace's row lock first, as every admin change takes it.
    SELECT w.id INTO ws FROM workspaces AS w WHERE w.slug = p_workspace FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT * INTO invited FROM invitations AS i
    WHERE i.workspace_id = ws AND i.id = p_invitation AND i.subject = p_subject
      AND i.expires_at > now()
    FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT * INTO joining FROM principals AS p WHERE p.subject = p_subject;
    IF NOT FOUND THEN
        IF NOT p_person THEN
            RETURN;
        END IF;
        IF p_handle IS NULL THEN
            RETURN QUERY SELECT 'handle_required'::text, NULL::uuid, NULL::text, NULL::text,
                                NULL::text[], NULL::boolean;
            RETURN;
        END IF;
        INSERT INTO principals (kind, subject, handle) VALUES ('person', p_subject, p_handle)
        RETURNING * INTO joining;
    END IF;
    IF (joining.kind = 'person') IS DISTINCT FROM p_person
       OR joining.revoked_at IS NOT NULL
       OR joining.subject LIKE 'erased:%'
       OR (joining.workspace_id IS NOT NULL AND joining.workspace_id <> ws) THEN
        RETURN;
    END IF;
    personal := joining.kind = 'person' OR coalesce(invited.personal_namespace, false);
    INSERT INTO memberships (workspace_id, principal_id, grants, personal_namespace)
    VALUES (ws, joining.id, invited.grants, personal)
    -- Already a member: nothing to add. A handle another member holds is refused
    -- (memberships_handle, 25_handles.sql), never skipped as if the invitee had joined.
    ON CONFLICT ON CONSTRAINT memberships_pkey DO NOTHING;
    IF FOUND THEN
        INSERT INTO audit_outbox
            (workspace_id, memory_id, uri, operation, revision, writer_id, source, request_id,
             details)
        VALUES (ws, '00000000-0000-0000-0000-000000000000',
                'memory-admin://members/' || joining.id::text, 'member.add', 0, joining.id,
                'admin-api', p_request_id,
                jsonb_build_object('principal_id', joining.id::text,
                                   'grants', to_jsonb(invited.grants),
                                   'personal_namespace', personal,
                                   'invitation_id', invited.id::text));
    END IF;
    DELETE FROM invitations AS i WHERE i.id = invited.id;
    RETURN QUERY
    SELECT 'accepted'::text, m.principal_id, joining.kind, joining.handle, m.grants,
           m.personal_namespace
    FROM memberships AS m WHERE m.workspace_id = ws AND m.principal_id = joining.id;
END
$$;
REVOKE ALL ON FUNCTION accept_invitation(text, uuid, text, boolean, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION accept_invitation(text, uuid, text, boolean, text, text)
    TO memory_runtime;
