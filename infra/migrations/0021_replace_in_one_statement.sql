-- A replace by path as one statement: the record the address resolves to, then the
-- conditional change.
--
-- memory_write replacing a record read the record its address resolves to
-- (sql/resolve_address.sql, planned again at every call, row-level security
-- included) in one round trip, and sent change_record() (0017) with COMMIT in a
-- second. For a path address everything the code checks between the two is known
-- before the call (the namespace, hence the owner and the write grant; the kind, hence
-- the content rules), so the two become one statement with cached plans (as the
-- create, 0020). A replace by record id keeps the two steps: its kind, and so its
-- content rules, are known only once the record is found.
--
-- Same rule as before: the record replaced is the nearest one the caller can see at
-- the address in the given contexts (nearest first), and only at the expected
-- revision. The function runs as the caller (SECURITY INVOKER); change_record()
-- writes the rows as before.

-- No row: nothing visible at the address. One row: changed, with the new revision;
-- or not changed, with the revision the record is at (a conflict), or with no
-- revision when it moved on or left the view between the look-up and the change.
CREATE FUNCTION replace_record_at(p_workspace_id uuid, p_owner_id uuid, p_contexts text[],
                                  p_kind text, p_path text, p_expected_revision integer,
                                  p_title text, p_body text, p_principal_id uuid,
                                  p_source text, p_operation text, p_request_id text,
                                  p_uri text)
RETURNS TABLE (id uuid, revision integer, context_key text, changed boolean)
LANGUAGE plpgsql VOLATILE SET search_path = memory, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    found_id uuid;
    found_revision integer;
    found_context text;
BEGIN
    SELECT m.id, m.revision, m.context_key INTO found_id, found_revision, found_context
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
        RETURN QUERY SELECT found_id, found_revision, found_context, false;
        RETURN;
    END IF;
    RETURN QUERY
        SELECT c.id, c.revision, c.context_key, true
        FROM change_record(found_id, p_expected_revision, p_workspace_id, ARRAY[p_owner_id],
                           p_contexts, p_kind, p_path, p_title, p_body, p_principal_id,
                           p_source, p_operation, p_request_id, p_uri) AS c;
    IF NOT FOUND THEN
        RETURN QUERY SELECT found_id, NULL::integer, found_context, false;
    END IF;
END
$$;

REVOKE ALL ON FUNCTION replace_record_at(uuid, uuid, text[], text, text, integer, text, text,
                                         uuid, text, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION replace_record_at(uuid, uuid, text[], text, text, integer, text, text,
                                            uuid, text, text, text, text) TO memory_runtime;
