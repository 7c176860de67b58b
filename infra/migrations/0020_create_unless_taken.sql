-- A create as one statement: whatever the address already resolves to, then the
-- insert.
--
-- memory_write's create read the record the address resolves to from the listening
-- context (sql/resolve_address.sql) in one round trip, and sent create_record()
-- (0017) with COMMIT in a second. The read was planned again at every call (request
-- statements are not prepared, db.py), row-level security included: about 0.35 ms
-- of its 0.47 ms in the database. Inside a function its plan stays cached on the
-- connection, and the create needs one round trip instead of two.
--
-- Same rule as before: a create conflicts with the nearest record the caller can
-- see at the address in the listening context or above it (p_contexts, nearest
-- first); the function runs as the caller (SECURITY INVOKER), so row-level security
-- decides what it sees, and create_record() writes the rows as before.

-- One row: the created record (created), or the revision of the record the address
-- is taken by (not created; no id, so nothing outside the answer is disclosed). No
-- row: the insert met the address's unique key (created concurrently).
CREATE FUNCTION create_record_unless_taken(p_workspace_id uuid, p_owner_id uuid,
                                           p_contexts text[], p_context_key text,
                                           p_kind text, p_path text, p_title text,
                                           p_body text, p_principal_id uuid, p_source text,
                                           p_operation text, p_request_id text, p_uri text)
RETURNS TABLE (id uuid, revision integer, context_key text, created boolean)
LANGUAGE plpgsql VOLATILE SET search_path = memory, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    taken integer;
BEGIN
    SELECT m.revision INTO taken
    FROM memories AS m
    WHERE m.workspace_id = p_workspace_id
      AND m.owner_id = p_owner_id
      AND m.kind = p_kind
      AND m.path = p_path
      AND m.context_key = ANY (p_contexts)
    ORDER BY array_position(p_contexts, m.context_key::text)
    LIMIT 1;
    IF FOUND THEN
        RETURN QUERY SELECT NULL::uuid, taken, NULL::text, false;
        RETURN;
    END IF;
    RETURN QUERY
        SELECT c.id, c.revision, c.context_key, true
        FROM create_record(p_workspace_id, p_owner_id, p_context_key, p_kind, p_path, p_title,
                           p_body, p_principal_id, p_source, p_operation, p_request_id,
                           p_uri) AS c;
END
$$;

REVOKE ALL ON FUNCTION create_record_unless_taken(uuid, uuid, text[], text, text, text, text,
                                                  text, uuid, text, text, text, text)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION create_record_unless_taken(uuid, uuid, text[], text, text, text, text,
                                                     text, uuid, text, text, text, text)
    TO memory_runtime;
