-- The create and the conditional change as PL/pgSQL, so their plans stay cached on
-- the connection.
--
-- Request statements are not prepared (db.py), so each create or change was parsed
-- and planned again, row-level security included: 0.41-0.46 ms of a create's
-- 1.5 ms in the database. Inside a function a statement is planned once per
-- connection. The functions run as the caller (SECURITY INVOKER): every row they
-- write passes the runtime role's policies, as the plain statements did. Same rows,
-- same audit rule (audit_discloses, 0012/0016), same result columns;
-- sql/create_record.sql and sql/change_record.sql call them.

-- The revision row and the audit outbox row of one committed create or change.
CREATE FUNCTION record_change(rec memories, p_operation text, p_request_id text, p_uri text)
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = memory, pg_temp
AS $$
DECLARE
    -- A personal record, or one in a private context, is named by id only and
    -- without its source (0012).
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
    VALUES (rec.workspace_id, rec.id,
            CASE WHEN discloses THEN p_uri ELSE 'memory://record/' || rec.id::text END,
            p_operation, rec.revision, rec.updated_by,
            CASE WHEN discloses THEN rec.source END, p_request_id);
END
$$;

-- No row back: the address was taken concurrently.
CREATE FUNCTION create_record(p_workspace_id uuid, p_owner_id uuid, p_context_key text,
                              p_kind text, p_path text, p_title text, p_body text,
                              p_principal_id uuid, p_source text, p_operation text,
                              p_request_id text, p_uri text)
RETURNS TABLE (id uuid, revision integer, context_key text)
LANGUAGE plpgsql VOLATILE SET search_path = memory, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    rec memories;
BEGIN
    INSERT INTO memories
        (workspace_id, owner_id, context_key, kind, path, title, body, revision,
         created_by, updated_by, source)
    VALUES (p_workspace_id, p_owner_id, p_context_key, p_kind, p_path, p_title, p_body, 1,
            p_principal_id, p_principal_id, p_source)
    ON CONFLICT ON CONSTRAINT memories_address DO NOTHING
    RETURNING * INTO rec;
    IF FOUND THEN
        PERFORM record_change(rec, p_operation, p_request_id, p_uri);
        RETURN QUERY SELECT rec.id, rec.revision, rec.context_key::text;
    END IF;
END
$$;

-- No row back: the record moved on (a conflict) or left the caller's view.
CREATE FUNCTION change_record(p_id uuid, p_expected_revision integer, p_workspace_id uuid,
                              p_owners uuid[], p_contexts text[], p_kind text, p_path text,
                              p_title text, p_body text, p_principal_id uuid, p_source text,
                              p_operation text, p_request_id text, p_uri text)
RETURNS TABLE (id uuid, revision integer, context_key text)
LANGUAGE plpgsql VOLATILE SET search_path = memory, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    rec memories;
BEGIN
    UPDATE memories AS m
    SET kind = p_kind, path = p_path, title = p_title, body = p_body,
        revision = m.revision + 1, updated_at = now(), updated_by = p_principal_id,
        source = p_source
    WHERE m.id = p_id
      AND m.revision = p_expected_revision
      AND m.workspace_id = p_workspace_id
      AND m.owner_id = ANY (p_owners)
      AND m.context_key = ANY (p_contexts)
    RETURNING m.* INTO rec;
    IF FOUND THEN
        PERFORM record_change(rec, p_operation, p_request_id, p_uri);
        RETURN QUERY SELECT rec.id, rec.revision, rec.context_key::text;
    END IF;
END
$$;

REVOKE ALL ON FUNCTION record_change(memories, text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION create_record(uuid, uuid, text, text, text, text, text, uuid, text, text,
                                     text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION change_record(uuid, integer, uuid, uuid[], text[], text, text, text, text,
                                     uuid, text, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION record_change(memories, text, text, text) TO memory_runtime;
GRANT EXECUTE ON FUNCTION create_record(uuid, uuid, text, text, text, text, text, uuid, text, text,
                                        text, text) TO memory_runtime;
GRANT EXECUTE ON FUNCTION change_record(uuid, integer, uuid, uuid[], text[], text, text, text,
                                        text, uuid, text, text, text, text) TO memory_runtime;
