-- Search-index maintenance, the two SECURITY DEFINER entry points, and the runtime
-- role's privileges (least privilege: nothing on search_documents or migrations).

-- Access lexemes: hex and a '~' prefix, which the English parser never produces, so
-- no text a user writes can collide with them.
CREATE FUNCTION access_lexeme(tag text, value text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN '~' || tag || md5(value);

CREATE FUNCTION sync_search_document() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM search_documents WHERE memory_id = OLD.id;
        RETURN NULL;
    END IF;
    INSERT INTO search_documents AS d
        (memory_id, workspace_id, owner_id, context_key, kind, updated_at, document)
    VALUES (NEW.id, NEW.workspace_id, NEW.owner_id, NEW.context_key, NEW.kind, NEW.updated_at,
            NEW.search_vector || array_to_tsvector(ARRAY[
                access_lexeme('w', NEW.workspace_id::text),
                access_lexeme('c', NEW.workspace_id::text || NEW.context_key),
                access_lexeme('o', NEW.owner_id::text)]))
    ON CONFLICT (memory_id) DO UPDATE
        SET kind = EXCLUDED.kind, updated_at = EXCLUDED.updated_at, document = EXCLUDED.document;
    RETURN NULL;
END
$$;

CREATE TRIGGER memories_search_document
    AFTER INSERT OR UPDATE OR DELETE ON memories
    FOR EACH ROW EXECUTE FUNCTION sync_search_document();

-- Candidate search. Runs as the owner over search_documents and applies the
-- visibility predicate itself, twice: as access lexemes inside the GIN probe (so the
-- index returns only the caller's view) and as can_see() on the columns. Ranking is
-- bounded: at most p_window of the most recently updated matches are ranked.
CREATE FUNCTION search_candidates(p_query text, p_owners uuid[], p_kinds text[],
                                  p_window integer, p_limit integer)
RETURNS TABLE (memory_id uuid, score real)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
    WITH q AS (
        SELECT websearch_to_tsquery('english', p_query) AS text_query,
               (SELECT ('''' || access_lexeme('w', setting_uuid('app.workspace_id')::text) || '''')::tsquery)
               && (SELECT string_agg('''' || access_lexeme('c', setting_uuid('app.workspace_id')::text || c) || '''', ' | ')
                   FROM unnest(setting_array('app.contexts')) AS c)::tsquery
               && (SELECT string_agg('''' || access_lexeme('o', o::text) || '''', ' | ')
                   FROM unnest(p_owners) AS o)::tsquery AS access_query
    ), matches AS (
        SELECT d.memory_id, d.document
        FROM search_documents d, q
        WHERE d.document @@ (q.text_query && q.access_query)
          AND can_see(d.workspace_id, d.owner_id, d.context_key)
          AND d.owner_id = ANY (p_owners)
          AND d.kind = ANY (p_kinds)
        ORDER BY d.updated_at DESC
        LIMIT p_window
    )
    SELECT m.memory_id, ts_rank_cd(m.document, q.text_query) AS score
    FROM matches m, q
    ORDER BY score DESC, m.memory_id
    LIMIT p_limit
$$;

-- Who is calling, in which workspace, and may they listen from this context?
-- Returns no row unless the subject is a member of the workspace, so a missing
-- workspace and a foreign one look the same. p_context_keys are the registered
-- keys that gate the listening context (the channel of a thread, or the DM).
CREATE FUNCTION resolve_caller(p_workspace text, p_subject text, p_gate_key text)
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
$$;

REVOKE ALL ON FUNCTION search_candidates(text, uuid[], text[], integer, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION resolve_caller(text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION sync_search_document() FROM PUBLIC;

GRANT USAGE ON SCHEMA memory TO memory_runtime;
GRANT EXECUTE ON FUNCTION search_candidates(text, uuid[], text[], integer, integer) TO memory_runtime;
GRANT EXECUTE ON FUNCTION resolve_caller(text, text, text) TO memory_runtime;
GRANT SELECT ON workspaces, principals TO memory_runtime;
GRANT UPDATE (memory_enabled) ON workspaces TO memory_runtime;
GRANT SELECT, INSERT, UPDATE, DELETE ON memberships, contexts, context_members TO memory_runtime;
GRANT SELECT, INSERT, DELETE ON memories TO memory_runtime;
GRANT UPDATE (title, body, revision, path, kind, updated_at, updated_by, source) ON memories TO memory_runtime;
GRANT SELECT, INSERT ON revisions TO memory_runtime;
GRANT UPDATE (title, body) ON revisions TO memory_runtime;
GRANT SELECT, INSERT, UPDATE ON idempotency_keys TO memory_runtime;
GRANT SELECT, INSERT ON audit_outbox TO memory_runtime;
GRANT UPDATE (published_at) ON audit_outbox TO memory_runtime;
