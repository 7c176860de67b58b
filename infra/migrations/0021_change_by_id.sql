-- change_record_at() takes the record by id too (p_id): a replace or a delete by id runs
-- the same statement as one by path, pinned to the record read first.
DROP FUNCTION change_record_at(uuid, uuid, text[], text, text, integer, text, text, uuid, text,
                               text, text, text);

CREATE FUNCTION change_record_at(p_id uuid, p_workspace_id uuid, p_owner_id uuid,
                                 p_contexts text[], p_kind text, p_path text,
                                 p_expected_revision integer, p_title text, p_body text,
                                 p_principal_id uuid, p_source text, p_operation text,
                                 p_request_id text, p_uri text)
RETURNS TABLE (id uuid, revision integer, context_key text, changed boolean)
LANGUAGE plpgsql VOLATILE SET search_path = memory, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    found_id uuid;
    found_revision integer;
    found_context text;
    done_id uuid;
    done_revision integer;
BEGIN
    IF p_id IS NULL THEN
        SELECT a.id, a.revision, a.context_key INTO found_id, found_revision, found_context
        FROM address_record(p_workspace_id, p_owner_id, p_kind, p_path, p_contexts) AS a;
    ELSE
        SELECT m.id, m.revision, m.context_key INTO found_id, found_revision, found_context
        FROM memories AS m
        WHERE m.id = p_id
          AND m.workspace_id = p_workspace_id
          AND m.owner_id = p_owner_id
          AND m.context_key = ANY (p_contexts);
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
                           p_source, p_operation, p_request_id, p_uri) AS c;
    END IF;
    IF done_id IS NULL THEN
        RETURN QUERY SELECT found_id, NULL::integer, found_context, false;
    ELSE
        RETURN QUERY SELECT done_id, done_revision, found_context, true;
    END IF;
END
$$;

REVOKE ALL ON FUNCTION change_record_at(uuid, uuid, uuid, text[], text, text, integer, text,
                                        text, uuid, text, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION change_record_at(uuid, uuid, uuid, text[], text, text, integer, text,
                                           text, uuid, text, text, text, text) TO memory_runtime;
