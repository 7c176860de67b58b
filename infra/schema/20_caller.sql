-- The caller: who is calling, in which workspace, and may they listen from this
-- context; who may be a member at all; the membership lock every change takes; and
-- the provenance (handle and kind) a read shows.
--
-- Most of these run as the owner (SECURITY DEFINER): the runtime role cannot read
-- principals or memberships outside what its policies allow, and these answer only
-- the narrow question they are asked. Several are PL/pgSQL although one statement
-- would do: requests send plain statements, not prepared ones (memory_server.data.pool),
-- and a SECURITY DEFINER SQL function is planned again at every call, while PL/pgSQL keeps
-- its plans on the connection (measured: resolve_caller 0.47-0.53 ms as SQL,
-- 0.10-0.12 ms as PL/pgSQL).
--
-- Current state, re-runnable (applied by memory_server/migrate.py after the numbered
-- migrations).

-- Returns no row unless the subject is a member of the workspace, so a missing
-- workspace and a foreign one look the same; a revoked agent key, or a key bound to
-- another workspace, resolves to nothing even if a membership row says otherwise.
-- p_gate_key is the registered key that gates the listening context (the channel of
-- a thread, or the DM).
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
REVOKE ALL ON FUNCTION resolve_caller(text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION resolve_caller(text, text, text) TO memory_runtime;

-- Who may be a member at all, enforced for every role, the owner included: never a
-- revoked agent key, another workspace's key, or an erased identity's pseudonym.
CREATE OR REPLACE FUNCTION check_member_principal() RETURNS trigger
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
CREATE OR REPLACE TRIGGER memberships_principal
    BEFORE INSERT OR UPDATE OF workspace_id, principal_id ON memberships
    FOR EACH ROW EXECUTE FUNCTION check_member_principal();

-- Changes re-check membership under a lock erasure also takes. Every change
-- transaction first calls lock_membership(): its membership row, read afresh and
-- locked FOR KEY SHARE (many changes at once share it; a grant change does not wait
-- for them). Erasure locks every membership row of the person FOR UPDATE before it
-- purges (sql/operator_lock_person.sql), so a change in flight finishes first (and
-- is purged), and a change that starts later waits, then finds the row gone and is
-- refused; removing a member likewise waits for its changes in flight. A row lock,
-- not an advisory lock: it ends with the transaction and RDS Proxy lists no row lock
-- among what pins a connection (docs/deploy.md, "Connection pinning").
DROP FUNCTION IF EXISTS principal_lock_key(uuid);

CREATE OR REPLACE FUNCTION lock_membership() RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
BEGIN
    PERFORM 1 FROM memberships
    WHERE workspace_id = setting_uuid('app.workspace_id')
      AND principal_id = setting_uuid('app.principal_id')
    FOR KEY SHARE;
    IF NOT FOUND THEN
        -- Mapped to permission_denied by db.translate_errors.
        RAISE EXCEPTION 'the caller is no longer a member of this workspace' USING ERRCODE = 'MS403';
    END IF;
    RETURN true;
END
$$;
REVOKE ALL ON FUNCTION lock_membership() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lock_membership() TO memory_runtime;

-- A writer as provenance shows it (created_by, updated_by, a revision's writer, an
-- invitation's inviter): its handle and its kind ('person', or 'service' for an agent
-- key, bot or CI job) if it is a member of the current workspace, both NULL for
-- anyone else (exactly what the principals policy lets the caller see). One look-up
-- for both, called in a FROM list (LATERAL) so that a row pays one call per writer.
-- Answered as the definer: under the policy every look-up cost a PL/pgSQL call, its
-- query and a SECURITY DEFINER call (measured on the 1,000,000-record benchmark: a
-- read by path 0.85-1.2 ms at p50 with its two handles, 0.5-0.8 ms without).
CREATE OR REPLACE FUNCTION principal_provenance(p_id uuid, OUT handle text, OUT kind text)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
BEGIN
    SELECT p.handle, p.kind INTO handle, kind
    FROM principals AS p
    WHERE p.id = p_id
      AND EXISTS (SELECT 1 FROM memberships AS m
                  WHERE m.principal_id = p_id
                    AND m.workspace_id = setting_uuid('app.workspace_id'));
END
$$;
REVOKE ALL ON FUNCTION principal_provenance(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION principal_provenance(uuid) TO memory_runtime;

-- The handle alone, as the statements of the release before principal_provenance ask
-- for it: the schema version did not change with the kind, so that release's warm
-- containers (while an update replaces them) and a rollback to it serve from these
-- files. This release's statements do not call it.
CREATE OR REPLACE FUNCTION principal_handle(p_id uuid) RETURNS text
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
BEGIN
    RETURN (SELECT p.handle FROM principals AS p
            WHERE p.id = p_id
              AND EXISTS (SELECT 1 FROM memberships AS m
                          WHERE m.principal_id = p_id
                            AND m.workspace_id = setting_uuid('app.workspace_id')));
END
$$;
REVOKE ALL ON FUNCTION principal_handle(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION principal_handle(uuid) TO memory_runtime;
