-- The delete as PL/pgSQL, so its plans stay cached on the connection; a delete by
-- path as one statement.
--
-- sql/delete_record.sql was one statement of four data-modifying CTEs (remove the
-- row, purge the bodies of its revisions, write the tombstone revision and the audit
-- row), parsed and planned again at every call, row-level security included:
-- measured, 0.3 ms to parse and 1.8 ms to plan against 1.1 ms to run. Inside a
-- function each statement is planned once per connection (as the create and the
-- change, 0017). Same rows, same order of effects (the bodies are purged before the
-- tombstone is written, which has none), same audit rule (audit_discloses, 0012),
-- same result columns. The functions run as the caller (SECURITY INVOKER): every row
-- they touch passes the runtime role's policies, as the statement's did.
--
-- delete_record_at() does for a delete by path what replace_record_at() (0021) does
-- for a replace: what the address resolves to, then the conditional delete, one
-- round trip. A delete by record id keeps its two steps (the record's namespace, and
-- so the grant it needs, is known once it is found).

-- No row back: the record moved on (a conflict) or left the caller's view.
CREATE FUNCTION delete_record(p_id uuid, p_expected_revision integer, p_workspace_id uuid,
                              p_owners uuid[], p_contexts text[], p_principal_id uuid,
                              p_request_id text, p_uri text)
RETURNS TABLE (id uuid, revision integer)
LANGUAGE plpgsql VOLATILE SET search_path = memory, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    gone memories;
BEGIN
    DELETE FROM memories AS m
    WHERE m.id = p_id
      AND m.revision = p_expected_revision
      AND m.workspace_id = p_workspace_id
      AND m.owner_id = ANY (p_owners)
      AND m.context_key = ANY (p_contexts)
    RETURNING m.* INTO gone;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    UPDATE revisions AS r SET title = NULL, body = NULL WHERE r.memory_id = gone.id;
    INSERT INTO revisions
        (workspace_id, memory_id, revision, operation, owner_id, context_key, kind, path,
         title, body, writer_id, source, request_id)
    VALUES (gone.workspace_id, gone.id, gone.revision + 1, 'delete', gone.owner_id,
            gone.context_key, gone.kind, gone.path, NULL, NULL, p_principal_id, NULL,
            p_request_id);
    INSERT INTO audit_outbox
        (workspace_id, memory_id, uri, operation, revision, writer_id, source, request_id)
    VALUES (gone.workspace_id, gone.id,
            CASE WHEN audit_discloses(gone.workspace_id, gone.owner_id, gone.context_key)
                 THEN p_uri ELSE 'memory://record/' || gone.id::text END,
            'delete', gone.revision + 1, p_principal_id, NULL, p_request_id);
    RETURN QUERY SELECT gone.id, gone.revision;
END
$$;

-- No row: nothing visible at the address. One row: deleted (changed), with the
-- revision it had; or not, with the revision the record is at (a conflict), or with
-- no revision when it moved on or left the view between the look-up and the delete.
CREATE FUNCTION delete_record_at(p_workspace_id uuid, p_owner_id uuid, p_contexts text[],
                                 p_kind text, p_path text, p_expected_revision integer,
                                 p_principal_id uuid, p_request_id text, p_uri text)
RETURNS TABLE (id uuid, revision integer, changed boolean)
LANGUAGE plpgsql VOLATILE SET search_path = memory, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    found_id uuid;
    found_revision integer;
BEGIN
    SELECT m.id, m.revision INTO found_id, found_revision
    FROM memories AS m
    WHERE m.workspace_id = p_workspace_id
      AND m.owner_id = p_owner_id
      AND m.kind = p_kind
      AND m.path = p_path
      AND m.context_key = ANY (p_contexts)
    ORDER BY array_position(p_contexts, m.context_key::text)
    LIMIT 1;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF found_revision <> p_expected_revision THEN
        RETURN QUERY SELECT found_id, found_revision, false;
        RETURN;
    END IF;
    RETURN QUERY
        SELECT d.id, d.revision, true
        FROM delete_record(found_id, p_expected_revision, p_workspace_id, ARRAY[p_owner_id],
                           p_contexts, p_principal_id, p_request_id, p_uri) AS d;
    IF NOT FOUND THEN
        RETURN QUERY SELECT found_id, NULL::integer, false;
    END IF;
END
$$;

REVOKE ALL ON FUNCTION delete_record(uuid, integer, uuid, uuid[], text[], uuid, text, text)
    FROM PUBLIC;
REVOKE ALL ON FUNCTION delete_record_at(uuid, uuid, text[], text, text, integer, uuid, text,
                                        text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION delete_record(uuid, integer, uuid, uuid[], text[], uuid, text, text)
    TO memory_runtime;
GRANT EXECUTE ON FUNCTION delete_record_at(uuid, uuid, text[], text, text, integer, uuid, text,
                                           text) TO memory_runtime;
