-- A move in two round trips: the look-up of its destination travels with the change.
--
-- memory_move read the record, then what its destination resolves to, then sent the
-- change, then COMMIT: four round trips, the look-ups planned again at every call. The
-- record must be read first (its namespace, revision and body decide what the move
-- may do), but the destination's look-up need not be: move_record() makes it in the
-- same statement as the change, with cached plans, and the change travels with
-- COMMIT. A destination taken concurrently (the address's unique key) is answered as
-- taken by the function too, so the error never reaches the request transaction.
--
-- Same rule as before: a move fails if its destination already resolves to a record
-- the caller can see from the listening context (p_contexts); the function runs as
-- the caller (SECURITY INVOKER), and change_record() (0017) writes the rows as before.

-- One row: moved, with the new revision; or not, because the destination is taken
-- (no id or revision). No row: the record moved on or left the caller's view.
CREATE FUNCTION move_record(p_id uuid, p_expected_revision integer, p_workspace_id uuid,
                            p_owners uuid[], p_contexts text[], p_owner_id uuid,
                            p_kind text, p_path text, p_title text, p_body text,
                            p_principal_id uuid, p_request_id text, p_uri text)
RETURNS TABLE (id uuid, revision integer, context_key text, moved boolean)
LANGUAGE plpgsql VOLATILE SET search_path = memory, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    moved_id uuid;
    moved_revision integer;
    moved_context text;
BEGIN
    PERFORM 1
    FROM memories AS m
    WHERE m.workspace_id = p_workspace_id
      AND m.owner_id = p_owner_id
      AND m.kind = p_kind
      AND m.path = p_path
      AND m.context_key = ANY (p_contexts);
    IF FOUND THEN
        RETURN QUERY SELECT NULL::uuid, NULL::integer, NULL::text, false;
        RETURN;
    END IF;
    BEGIN
        SELECT c.id, c.revision, c.context_key INTO moved_id, moved_revision, moved_context
        FROM change_record(p_id, p_expected_revision, p_workspace_id, p_owners, p_contexts,
                           p_kind, p_path, p_title, p_body, p_principal_id, NULL, 'move',
                           p_request_id, p_uri) AS c;
    EXCEPTION WHEN unique_violation THEN
        -- Taken concurrently, in the record's own context: answered as taken.
        RETURN QUERY SELECT NULL::uuid, NULL::integer, NULL::text, false;
        RETURN;
    END;
    IF moved_id IS NOT NULL THEN
        RETURN QUERY SELECT moved_id, moved_revision, moved_context, true;
    END IF;
END
$$;

REVOKE ALL ON FUNCTION move_record(uuid, integer, uuid, uuid[], text[], uuid, text, text, text,
                                   text, uuid, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION move_record(uuid, integer, uuid, uuid[], text[], uuid, text, text,
                                      text, text, uuid, text, text) TO memory_runtime;
