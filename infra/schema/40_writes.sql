-- Writes: a record's create, change, delete and move, each with the revision row and
-- the audit outbox row of the committed change, and what an address resolves to.
--
-- Every function runs as the caller (SECURITY INVOKER): row-level security decides
-- what it sees and what it may write, as it would for plain statements; they are
-- functions so that their plans stay cached on the connection (request statements
-- are not prepared, memory_server.data.pool: a create was planned again at every call,
-- 0.41-0.46 ms of its 1.5 ms in the database) and so that a change is one statement
-- with the look-up of the record it is for. The statements create_record,
-- create_record_unless_taken, change_record, change_record_at and move_record (under
-- layers/core/memory_server/data/sql/) call them. What an outbox row may
-- name is audit_discloses (30_audit.sql).
--
-- Current state, re-runnable (applied by memory_server/migrate.py after the numbered
-- migrations).

-- The revision row and the audit outbox row of one committed create or change.
CREATE OR REPLACE FUNCTION record_change(rec memories, p_operation text, p_request_id text,
                                         p_uri text)
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = memory, pg_temp
AS $$
DECLARE
    -- A personal record, or one in a private context, is named by id only and
    -- without its source (audit_discloses, 30_audit.sql).
    discloses constant boolean := audit_discloses(rec.workspace_id, rec.owner_id,
                                                  rec.context_key);
BEGIN
    INSERT INTO revisions
        (workspace_id, memory_id, revision, operation, owner_id, context_key, kind, path,
         title, body, writer_id, source, request_id)
    VALUES (rec.workspace_id, rec.id, rec.revision, p_operation, rec.owner_id, rec.context_key,
            rec.kind, rec.path, rec.title, rec.body, rec.updated_by, rec.source, p_request_id);
    INSERT INTO audit_outbox
        (workspace_id, memory_id, uri, operation, revision, writer_id, source, request_id)
    VALUES (rec.workspace_id, rec.id, audit_uri(discloses, rec.id, p_uri), p_operation,
            rec.revision, rec.updated_by, CASE WHEN discloses THEN rec.source END,
            p_request_id);
END
$$;
REVOKE ALL ON FUNCTION record_change(memories, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION record_change(memories, text, text, text) TO memory_runtime;

-- No row back: the address was taken concurrently. An expired record still holding
-- the address (not purged yet) is purged first: its path is free from its expiry on.
DROP FUNCTION IF EXISTS create_record(uuid, uuid, text, text, text, text, text, uuid, text, text,
                                      text, text);
CREATE OR REPLACE FUNCTION create_record(p_workspace_id uuid, p_owner_id uuid, p_context_key text,
                                         p_kind text, p_path text, p_title text, p_body text,
                                         p_principal_id uuid, p_source text, p_operation text,
                                         p_request_id text, p_uri text, p_expires_at timestamptz,
                                         p_pinned boolean)
RETURNS TABLE (id uuid, revision integer, context_key text)
LANGUAGE plpgsql VOLATILE SET search_path = memory, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    rec memories;  -- the record created
BEGIN
    FOR attempt IN 1..2 LOOP
        INSERT INTO memories
            (workspace_id, owner_id, context_key, kind, path, title, body, revision,
             created_by, updated_by, source, expires_at, pinned)
        VALUES (p_workspace_id, p_owner_id, p_context_key, p_kind, p_path, p_title, p_body, 1,
                p_principal_id, p_principal_id, p_source, p_expires_at,
                coalesce(p_pinned, false))
        ON CONFLICT ON CONSTRAINT memories_address DO NOTHING
        RETURNING * INTO rec;
        IF FOUND THEN  -- its address was not taken concurrently
            PERFORM record_change(rec, p_operation, p_request_id, p_uri);
            RETURN QUERY SELECT rec.id, rec.revision, rec.context_key::text;
            RETURN;
        END IF;
        EXIT WHEN attempt = 2
             OR NOT expire_address(p_workspace_id, p_owner_id, p_context_key, p_kind, p_path);
    END LOOP;
END
$$;
REVOKE ALL ON FUNCTION create_record(uuid, uuid, text, text, text, text, text, uuid, text, text,
                                     text, text, timestamptz, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION create_record(uuid, uuid, text, text, text, text, text, uuid, text, text,
                                        text, text, timestamptz, boolean) TO memory_runtime;

-- Lock a record in the caller's view for a change or a delete, and say whether it is
-- still live once held: the expiry is judged by the clock under the lock
-- (held_live), since a change that waited for the row past the record's expiry must
-- change nothing. FOR UPDATE: a delete needs it, and a change loses nothing by it
-- (no foreign key points at memories).
CREATE OR REPLACE FUNCTION lock_live(p_id uuid, p_workspace_id uuid, p_owners uuid[],
                                     p_contexts text[])
RETURNS boolean
LANGUAGE plpgsql VOLATILE SET search_path = memory, pg_temp
AS $$
DECLARE
    held timestamptz;  -- its expiry, read under the row lock
BEGIN
    SELECT m.expires_at INTO held
    FROM memories AS m
    WHERE m.id = p_id
      AND m.workspace_id = p_workspace_id
      AND m.owner_id = ANY (p_owners)
      AND m.context_key = ANY (p_contexts)
      AND is_live(m.expires_at)
    FOR UPDATE;
    RETURN FOUND AND held_live(held);
END
$$;
REVOKE ALL ON FUNCTION lock_live(uuid, uuid, uuid[], text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION lock_live(uuid, uuid, uuid[], text[]) TO memory_runtime;

-- No row back: the record moved on (a conflict) or left the caller's view. Expiry:
-- with p_keep_expiry the record's stays, else it becomes p_expires_at (NULL: never).
-- Pinned: NULL leaves it.
--
-- The row is locked first (lock_live): a change that waited for the row (behind
-- another writer) past the record's expiry would otherwise judge it by its
-- transaction's start, now(), and commit to a record every reader already finds
-- gone, or bring it back, with its history, by removing the expiry.
DROP FUNCTION IF EXISTS change_record(uuid, integer, uuid, uuid[], text[], text, text, text, text,
                                      uuid, text, text, text, text);
CREATE OR REPLACE FUNCTION change_record(p_id uuid, p_expected_revision integer,
                                         p_workspace_id uuid, p_owners uuid[],
                                         p_contexts text[], p_kind text, p_path text,
                                         p_title text, p_body text, p_principal_id uuid,
                                         p_source text, p_operation text, p_request_id text,
                                         p_uri text, p_expires_at timestamptz,
                                         p_keep_expiry boolean, p_pinned boolean)
RETURNS TABLE (id uuid, revision integer, context_key text)
LANGUAGE plpgsql VOLATILE SET search_path = memory, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    rec memories;  -- the record as changed
BEGIN
    IF NOT lock_live(p_id, p_workspace_id, p_owners, p_contexts) THEN
        RETURN;
    END IF;
    UPDATE memories AS m
    SET kind = p_kind, path = p_path, title = p_title, body = p_body,
        revision = m.revision + 1, updated_at = now(), updated_by = p_principal_id,
        source = p_source,
        expires_at = CASE WHEN p_keep_expiry THEN m.expires_at ELSE p_expires_at END,
        pinned = coalesce(p_pinned, m.pinned)
    WHERE m.id = p_id
      AND m.revision = p_expected_revision  -- a conflict otherwise
      AND m.workspace_id = p_workspace_id
      AND m.owner_id = ANY (p_owners)
      AND m.context_key = ANY (p_contexts)
      AND is_live(m.expires_at)
    RETURNING m.* INTO rec;
    IF FOUND THEN  -- at the expected revision and in the caller's view
        PERFORM record_change(rec, p_operation, p_request_id, p_uri);
        RETURN QUERY SELECT rec.id, rec.revision, rec.context_key::text;
    END IF;
END
$$;
REVOKE ALL ON FUNCTION change_record(uuid, integer, uuid, uuid[], text[], text, text, text, text,
                                     uuid, text, text, text, text, timestamptz, boolean, boolean)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION change_record(uuid, integer, uuid, uuid[], text[], text, text, text,
                                        text, uuid, text, text, text, text, timestamptz, boolean,
                                        boolean) TO memory_runtime;

-- The record an address resolves to: the nearest visible one (contexts nearest
-- first). The one definition of it: a read by path (sql/resolve_address.sql) and every
-- change by path call it. Plain SQL, so that it is inlined into the statements that
-- call it.
-- Its result type was (id, revision, context_key) before it became the whole row.
DROP FUNCTION IF EXISTS address_record(uuid, uuid, text, text, text[]);
CREATE OR REPLACE FUNCTION address_record(p_workspace_id uuid, p_owner_id uuid, p_kind text,
                                          p_path text, p_contexts text[])
RETURNS SETOF memory.memories
LANGUAGE sql STABLE
AS $$
    SELECT m.*
    FROM memory.memories AS m
    WHERE m.workspace_id = p_workspace_id
      AND m.owner_id = p_owner_id
      AND m.kind = p_kind
      AND m.path = p_path
      AND m.context_key = ANY (p_contexts)
      AND memory.is_live(m.expires_at)
    ORDER BY array_position(p_contexts, m.context_key::text)
    LIMIT 1
$$;
REVOKE ALL ON FUNCTION address_record(uuid, uuid, text, text, text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION address_record(uuid, uuid, text, text, text[]) TO memory_runtime;

-- One row: the created record (created), or the revision of the record the address
-- is taken by (not created; no id). No row: the insert met the address's unique key
-- (created concurrently).
DROP FUNCTION IF EXISTS create_record_unless_taken(uuid, uuid, text[], text, text, text, text,
                                                   text, uuid, text, text, text, text);
CREATE OR REPLACE FUNCTION create_record_unless_taken(p_workspace_id uuid, p_owner_id uuid,
                                                      p_contexts text[], p_context_key text,
                                                      p_kind text, p_path text, p_title text,
                                                      p_body text, p_principal_id uuid,
                                                      p_source text, p_operation text,
                                                      p_request_id text, p_uri text,
                                                      p_expires_at timestamptz,
                                                      p_pinned boolean)
RETURNS TABLE (id uuid, revision integer, context_key text, created boolean)
LANGUAGE plpgsql VOLATILE SET search_path = memory, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    taken integer;  -- the revision of the record the address resolves to
BEGIN
    SELECT a.revision INTO taken
    FROM address_record(p_workspace_id, p_owner_id, p_kind, p_path, p_contexts) AS a;
    IF FOUND THEN
        RETURN QUERY SELECT NULL::uuid, taken, NULL::text, false;
        RETURN;
    END IF;
    RETURN QUERY
        SELECT c.id, c.revision, c.context_key, true
        FROM create_record(p_workspace_id, p_owner_id, p_context_key, p_kind, p_path, p_title,
                           p_body, p_principal_id, p_source, p_operation, p_request_id,
                           p_uri, p_expires_at, p_pinned) AS c;
END
$$;
REVOKE ALL ON FUNCTION create_record_unless_taken(uuid, uuid, text[], text, text, text, text, text,
                                                  uuid, text, text, text, text, timestamptz,
                                                  boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION create_record_unless_taken(uuid, uuid, text[], text, text, text, text,
                                                     text, uuid, text, text, text, text,
                                                     timestamptz, boolean) TO memory_runtime;

-- What every purge leaves of a record that is gone (deleted, or expired): no content
-- in any revision, a tombstone revision with the operation and its writer (the nil
-- UUID: the server itself), and the audit outbox row. Runs with the rights of its
-- caller: delete_record's (row-level security: the delete grant), the sweeper's, or
-- an admin's deleting a context wholesale (70_admin.sql). Returns how many revisions
-- had content to purge.
DROP FUNCTION IF EXISTS purge_record(memories, text, uuid, text, text);
CREATE OR REPLACE FUNCTION purge_record(gone memories, p_operation text, p_writer_id uuid,
                                        p_request_id text, p_uri text)
RETURNS integer
LANGUAGE plpgsql VOLATILE SET search_path = memory, pg_temp
AS $$
DECLARE
    purged integer;
BEGIN
    UPDATE revisions AS r SET title = NULL, body = NULL
    WHERE r.memory_id = gone.id AND (r.title IS NOT NULL OR r.body IS NOT NULL);
    GET DIAGNOSTICS purged = ROW_COUNT;
    INSERT INTO revisions
        (workspace_id, memory_id, revision, operation, owner_id, context_key, kind, path,
         title, body, writer_id, source, request_id)
    VALUES (gone.workspace_id, gone.id, gone.revision + 1, p_operation, gone.owner_id,
            gone.context_key, gone.kind, gone.path, NULL, NULL, p_writer_id, NULL,
            p_request_id);
    INSERT INTO audit_outbox
        (workspace_id, memory_id, uri, operation, revision, writer_id, source, request_id)
    VALUES (gone.workspace_id, gone.id,
            audit_uri(audit_discloses(gone.workspace_id, gone.owner_id, gone.context_key),
                      gone.id, p_uri),
            p_operation, gone.revision + 1, p_writer_id, NULL, p_request_id);
    RETURN purged;
END
$$;
REVOKE ALL ON FUNCTION purge_record(memories, text, uuid, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION purge_record(memories, text, uuid, text, text) TO memory_runtime;

-- No row back: the record moved on (a conflict) or left the caller's view. Like a
-- change, a delete judges the expiry by the clock once it holds the row: a record
-- that expired while the delete waited is the sweeper's to purge (as 'expire').
CREATE OR REPLACE FUNCTION delete_record(p_id uuid, p_expected_revision integer,
                                         p_workspace_id uuid, p_owners uuid[], p_contexts text[],
                                         p_principal_id uuid, p_request_id text, p_uri text)
RETURNS TABLE (id uuid, revision integer)
LANGUAGE plpgsql VOLATILE SET search_path = memory, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    gone memories;
BEGIN
    IF NOT lock_live(p_id, p_workspace_id, p_owners, p_contexts) THEN
        RETURN;
    END IF;
    DELETE FROM memories AS m
    WHERE m.id = p_id
      AND m.revision = p_expected_revision
      AND m.workspace_id = p_workspace_id
      AND m.owner_id = ANY (p_owners)
      AND m.context_key = ANY (p_contexts)
      AND is_live(m.expires_at)
    RETURNING m.* INTO gone;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    PERFORM purge_record(gone, 'delete', p_principal_id, p_request_id, p_uri);
    RETURN QUERY SELECT gone.id, gone.revision;
END
$$;
REVOKE ALL ON FUNCTION delete_record(uuid, integer, uuid, uuid[], text[], uuid, text, text)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION delete_record(uuid, integer, uuid, uuid[], text[], uuid, text, text)
    TO memory_runtime;

-- The address of an expired record for the audit trail: its workspace path, which
-- purge_record replaces by its id wherever audit_discloses does not allow it (a
-- personal record, a private context).
CREATE OR REPLACE FUNCTION expired_uri(gone memories) RETURNS text
LANGUAGE sql IMMUTABLE
RETURN 'memory://workspace/' || gone.kind || '/' || gone.path;

-- The sweeper's purge: up to p_limit expired records, oldest expiry first, each
-- purged like a delete with operation 'expire' (a record locked by a change in
-- flight is left for the next run). Returns how many were purged.
CREATE OR REPLACE FUNCTION expire_records(p_limit integer) RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
DECLARE
    gone memories;
    purged integer := 0;
BEGIN
    FOR gone IN
        DELETE FROM memories AS m
        WHERE m.id IN (SELECT e.id FROM memories AS e
                       WHERE e.expires_at <= now()
                       ORDER BY e.expires_at
                       LIMIT p_limit
                       FOR UPDATE SKIP LOCKED)
          AND m.expires_at <= now()
        RETURNING m.*
    LOOP
        PERFORM purge_record(gone, 'expire', '00000000-0000-0000-0000-000000000000', NULL,
                             expired_uri(gone));
        purged := purged + 1;
    END LOOP;
    RETURN purged;
END
$$;
REVOKE ALL ON FUNCTION expire_records(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION expire_records(integer) TO memory_auditor;

-- A create or a move met an address's unique key: if the record holding it has
-- expired, purge it now (as the sweeper would) so that the address is free, and say
-- so. Only in the request's workspace, and only where the request may write: it
-- answers nothing about any other address.
CREATE OR REPLACE FUNCTION expire_address(p_workspace_id uuid, p_owner_id uuid,
                                          p_context_key text, p_kind text, p_path text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
DECLARE
    gone memories;
BEGIN
    IF NOT can_write(p_workspace_id, p_owner_id, p_context_key) THEN
        RETURN false;
    END IF;
    DELETE FROM memories AS m
    WHERE m.workspace_id = p_workspace_id AND m.owner_id = p_owner_id AND m.kind = p_kind
      AND m.path = p_path AND m.context_key = p_context_key
      AND m.expires_at <= now()
    RETURNING m.* INTO gone;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM purge_record(gone, 'expire', '00000000-0000-0000-0000-000000000000', NULL,
                         expired_uri(gone));
    RETURN true;
END
$$;
REVOKE ALL ON FUNCTION expire_address(uuid, uuid, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION expire_address(uuid, uuid, text, text, text) TO memory_runtime;

-- A replace (any operation but 'delete': title, body and source are the new ones) or
-- a delete (they are ignored), at the expected revision, of the record p_id names (a
-- change by record id: the code read the record first, for its kind and namespace)
-- or else of the record the path address resolves to from p_contexts: the same
-- revision check and change either way. No row: nothing visible there. One row:
-- changed, with the new revision (a delete: the revision it had); or not, with the
-- revision the record is at (a conflict), or with no revision when it moved on or
-- left the view between the look-up and the change. Expiry and pin as change_record.
DROP FUNCTION IF EXISTS change_record_at(uuid, uuid, uuid, text[], text, text, integer, text,
                                         text, uuid, text, text, text, text);
CREATE OR REPLACE FUNCTION change_record_at(p_id uuid, p_workspace_id uuid, p_owner_id uuid,
                                            p_contexts text[], p_kind text, p_path text,
                                            p_expected_revision integer, p_title text,
                                            p_body text, p_principal_id uuid, p_source text,
                                            p_operation text, p_request_id text, p_uri text,
                                            p_expires_at timestamptz, p_keep_expiry boolean,
                                            p_pinned boolean)
RETURNS TABLE (id uuid, revision integer, context_key text, changed boolean)
LANGUAGE plpgsql VOLATILE SET search_path = memory, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    found_id uuid;  -- found_*: the record the change is for
    found_revision integer;
    found_context text;
    done_id uuid;  -- done_*: what the change did
    done_revision integer;
BEGIN
    IF p_id IS NULL THEN
        SELECT a.id, a.revision, a.context_key INTO found_id, found_revision, found_context
        FROM address_record(p_workspace_id, p_owner_id, p_kind, p_path, p_contexts) AS a;
    ELSE
        SELECT m.id, m.revision, m.context_key INTO found_id, found_revision, found_context
        FROM records_in_view(p_workspace_id, ARRAY[p_owner_id], p_contexts) AS m
        WHERE m.id = p_id;
    END IF;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF found_revision <> p_expected_revision THEN
        RETURN QUERY SELECT found_id, found_revision, found_context, false;
        RETURN;
    END IF;
    IF p_operation = 'delete' THEN
        SELECT d.id, d.revision INTO done_id, done_revision
        FROM delete_record(found_id, p_expected_revision, p_workspace_id, ARRAY[p_owner_id],
                           p_contexts, p_principal_id, p_request_id, p_uri) AS d;
    ELSE
        SELECT c.id, c.revision INTO done_id, done_revision
        FROM change_record(found_id, p_expected_revision, p_workspace_id, ARRAY[p_owner_id],
                           p_contexts, p_kind, p_path, p_title, p_body, p_principal_id,
                           p_source, p_operation, p_request_id, p_uri, p_expires_at,
                           p_keep_expiry, p_pinned) AS c;
    END IF;
    IF done_id IS NULL THEN
        RETURN QUERY SELECT found_id, NULL::integer, found_context, false;
    ELSE
        RETURN QUERY SELECT done_id, done_revision, found_context, true;
    END IF;
END
$$;
REVOKE ALL ON FUNCTION change_record_at(uuid, uuid, uuid, text[], text, text, integer, text,
                                        text, uuid, text, text, text, text, timestamptz, boolean,
                                        boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION change_record_at(uuid, uuid, uuid, text[], text, text, integer, text,
                                           text, uuid, text, text, text, text, timestamptz,
                                           boolean, boolean) TO memory_runtime;

-- One row: moved, with the new revision; or not, because the destination is taken
-- (no id or revision). No row: the record moved on or left the caller's view. The
-- record keeps its expiry and pin. A destination held by an expired record that is
-- not purged yet is free: that record is purged first.
CREATE OR REPLACE FUNCTION move_record(p_id uuid, p_expected_revision integer,
                                       p_workspace_id uuid, p_owners uuid[], p_contexts text[],
                                       p_owner_id uuid, p_kind text, p_path text, p_title text,
                                       p_body text, p_principal_id uuid, p_request_id text,
                                       p_uri text)
RETURNS TABLE (id uuid, revision integer, context_key text, moved boolean)
LANGUAGE plpgsql VOLATILE SET search_path = memory, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    moved_id uuid;
    moved_revision integer;
    moved_context text;
BEGIN
    PERFORM FROM address_record(p_workspace_id, p_owner_id, p_kind, p_path, p_contexts);
    IF FOUND THEN
        RETURN QUERY SELECT NULL::uuid, NULL::integer, NULL::text, false;
        RETURN;
    END IF;
    FOR attempt IN 1..2 LOOP
        BEGIN
            SELECT c.id, c.revision, c.context_key INTO moved_id, moved_revision, moved_context
            FROM change_record(p_id, p_expected_revision, p_workspace_id, p_owners, p_contexts,
                               p_kind, p_path, p_title, p_body, p_principal_id, NULL, 'move',
                               p_request_id, p_uri, NULL, true, NULL) AS c;
            EXIT;
        EXCEPTION WHEN unique_violation THEN
            -- Taken in the record's own context: by an expired record (purged, then
            -- moved again), or concurrently (answered as taken).
            SELECT m.context_key INTO moved_context FROM memories AS m WHERE m.id = p_id;
            IF attempt = 2
               OR NOT expire_address(p_workspace_id, p_owner_id, moved_context, p_kind, p_path)
            THEN
                RETURN QUERY SELECT NULL::uuid, NULL::integer, NULL::text, false;
                RETURN;
            END IF;
        END;
    END LOOP;
    IF moved_id IS NOT NULL THEN
        RETURN QUERY SELECT moved_id, moved_revision, moved_context, true;
    END IF;
END
$$;
REVOKE ALL ON FUNCTION move_record(uuid, integer, uuid, uuid[], text[], uuid, text, text, text,
                                   text, uuid, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION move_record(uuid, integer, uuid, uuid[], text[], uuid, text, text, text,
                                      text, uuid, text, text) TO memory_runtime;
