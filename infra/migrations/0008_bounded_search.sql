-- Search index v3: the reader's view and recency inside the GIN probe.
--
-- Measured on 1M records (200k in one workspace, docs/performance.md): with only the
-- terms in the index, a term matching 10% of the workspace fetched all 19,858 of its
-- matches from ~17,000 heap pages, discarded 58% of them on owner and context, and
-- sorted the rest on updated_at to find the 1,000 newest: 40-90 ms. Now each
-- document also carries access lexemes (owner, context, kind) and recency lexemes
-- (day and 32-day block of updated_at), all scoped to the workspace, so one probe
-- returns only what the reader may see from the newest stretch of time that holds a
-- full ranking window. The heap is touched for at most about one window of rows.
--
-- Access lexemes are '<scope> <tag>:<value>': the space after the scope cannot occur
-- in a lexeme the text parser produces, so no written text can collide with them.

CREATE FUNCTION search_day(ts timestamptz) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN floor(extract(epoch FROM ts) / 86400)::bigint;

CREATE FUNCTION access_lexeme(ws uuid, tag text, value text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN search_scope(ws) || ' ' || tag || ':' || value;

CREATE FUNCTION access_tsvector(ws uuid, owner uuid, ctx text, kind text, updated timestamptz)
RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN array_to_tsvector(ARRAY[
    access_lexeme(ws, 'o', owner::text),
    access_lexeme(ws, 'c', ctx),
    access_lexeme(ws, 'k', kind),
    access_lexeme(ws, 'd', search_day(updated)::text),
    access_lexeme(ws, 'b', (search_day(updated) / 32)::text)]);

-- Any one of the given lexemes, as a tsquery (NULL for none).
CREATE FUNCTION any_lexeme(lexemes text[]) RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (SELECT string_agg('''' || replace(replace(l, '\', '\\'), '''', '''''') || '''', ' | ')
        FROM unnest(lexemes) AS l)::tsquery;

-- Records updated in recency stage 0..4 or later (NULL for stage 5: any time). Each
-- stage is a contiguous stretch from its start up to tomorrow, so the newest matches
-- of a stage are the newest matches overall: about 2 days, 8 days, 64, 192, 768.
CREATE FUNCTION recency_query(ws uuid, stage integer, today bigint) RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE
    WHEN stage = 0 THEN (SELECT any_lexeme(array_agg(access_lexeme(ws, 'd', d::text)))
                         FROM generate_series(today - 1, today + 1) AS d)
    WHEN stage = 1 THEN (SELECT any_lexeme(array_agg(access_lexeme(ws, 'd', d::text)))
                         FROM generate_series(today - 7, today + 1) AS d)
    WHEN stage IN (2, 3, 4) THEN (
        SELECT any_lexeme(array_agg(access_lexeme(ws, 'b', b::text)))
        FROM generate_series(today / 32 - (ARRAY[2, 6, 24])[stage - 1], (today + 1) / 32) AS b)
END;

CREATE OR REPLACE FUNCTION sync_search_document() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM search_documents WHERE memory_id = OLD.id;
        RETURN NULL;
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.search_vector = OLD.search_vector AND NEW.kind = OLD.kind
       AND NEW.updated_at = OLD.updated_at AND NEW.owner_id = OLD.owner_id
       AND NEW.context_key = OLD.context_key THEN
        RETURN NULL;
    END IF;
    INSERT INTO search_documents AS d
        (memory_id, workspace_id, owner_id, context_key, kind, updated_at, document)
    VALUES (NEW.id, NEW.workspace_id, NEW.owner_id, NEW.context_key, NEW.kind, NEW.updated_at,
            scoped_tsvector(NEW.workspace_id, NEW.search_vector)
            || access_tsvector(NEW.workspace_id, NEW.owner_id, NEW.context_key, NEW.kind,
                               NEW.updated_at))
    ON CONFLICT (memory_id) DO UPDATE
        SET owner_id = EXCLUDED.owner_id, context_key = EXCLUDED.context_key,
            kind = EXCLUDED.kind, updated_at = EXCLUDED.updated_at, document = EXCLUDED.document;
    RETURN NULL;
END
$$;

-- The probe for a search: the query's terms, the caller's view (from the settings,
-- narrowed by p_owners and p_kinds) and the shortest recency stage that holds
-- p_window visible matches. Each try is a count capped at p_window, so it touches
-- at most p_window rows: first all time (most terms end there), then the stages from
-- the newest. NULL: nothing can match.
CREATE FUNCTION search_probe(p_query text, p_owners uuid[], p_kinds text[], p_window integer)
RETURNS tsquery
LANGUAGE plpgsql STABLE SET search_path = memory, pg_temp
AS $$
DECLARE
    ws constant uuid := setting_uuid('app.workspace_id');
    terms tsquery;
    view_query tsquery;
    probe tsquery;
    found integer;
BEGIN
    IF ws IS NULL OR NOT coalesce('read' = ANY (setting_array('app.grants')), false) THEN
        RETURN NULL;
    END IF;
    terms := scoped_tsquery(ws, websearch_to_tsquery('english', p_query));
    IF numnode(terms) = 0 THEN
        RETURN NULL;  -- only stop words
    END IF;
    -- Owners and contexts the request may see, whatever the caller passed.
    view_query := any_lexeme(ARRAY(
            SELECT access_lexeme(ws, 'o', o::text) FROM unnest(p_owners) AS o
            WHERE o = '00000000-0000-0000-0000-000000000000'
               OR (o = setting_uuid('app.principal_id')
                   AND current_setting('app.personal', true) = 'on')))
        && any_lexeme(ARRAY(SELECT access_lexeme(ws, 'c', c)
                            FROM unnest(setting_array('app.contexts')) AS c))
        && any_lexeme(ARRAY(SELECT access_lexeme(ws, 'k', k) FROM unnest(p_kinds) AS k));
    IF view_query IS NULL THEN
        RETURN NULL;
    END IF;
    -- Fewer than a window in all: rank them all (one probe for most terms).
    probe := terms && view_query;
    SELECT count(*) INTO found
    FROM (SELECT FROM search_documents AS d WHERE d.document @@ probe LIMIT p_window) AS s;
    IF found < p_window THEN
        RETURN probe;
    END IF;
    FOR stage IN 0..4 LOOP
        probe := terms && view_query && recency_query(ws, stage, search_day(now()));
        SELECT count(*) INTO found
        FROM (SELECT FROM search_documents AS d WHERE d.document @@ probe LIMIT p_window) AS s;
        IF found >= p_window THEN
            RETURN probe;
        END IF;
    END LOOP;
    RETURN terms && view_query;
END
$$;

-- The window (the p_window most recently updated matches of the probe, checked
-- against the view on the row too), ranked; the best p_limit of them.
CREATE FUNCTION search_window(p_probe tsquery, p_terms tsquery, p_owners uuid[],
                              p_kinds text[], p_window integer, p_limit integer)
RETURNS TABLE (memory_id uuid, score real)
LANGUAGE sql STABLE
AS $$
    WITH matches AS (
        SELECT d.memory_id, d.document
        FROM memory.search_documents AS d
        WHERE d.document @@ p_probe
          AND memory.can_see(d.workspace_id, d.owner_id, d.context_key)
          AND d.owner_id = ANY (p_owners)
          AND d.kind = ANY (p_kinds)
        ORDER BY d.updated_at DESC
        LIMIT p_window
    )
    SELECT m.memory_id, ts_rank_cd(m.document, p_terms)
    FROM matches AS m
    ORDER BY 2 DESC, 1
    LIMIT p_limit
$$;

-- Ranked candidate ids for the runtime role, which cannot read search_documents.
-- PL/pgSQL keeps its statements' plans for the session (the SQL function it
-- replaces was parsed and planned on every call).
DROP FUNCTION search_candidates(text, uuid[], text[], integer, integer);
CREATE FUNCTION search_candidates(p_query text, p_owners uuid[], p_kinds text[],
                                  p_window integer, p_limit integer)
RETURNS TABLE (memory_id uuid, score real)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
DECLARE
    probe constant tsquery := search_probe(p_query, p_owners, p_kinds, p_window);
BEGIN
    IF probe IS NOT NULL THEN
        RETURN QUERY
        SELECT w.memory_id, w.score
        FROM search_window(probe,
                           scoped_tsquery(setting_uuid('app.workspace_id'),
                                          websearch_to_tsquery('english', p_query)),
                           p_owners, p_kinds, p_window, p_limit) AS w;
    END IF;
END
$$;

REVOKE ALL ON FUNCTION search_probe(text, uuid[], text[], integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION search_window(tsquery, tsquery, uuid[], text[], integer, integer)
    FROM PUBLIC;
REVOKE ALL ON FUNCTION search_candidates(text, uuid[], text[], integer, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION search_candidates(text, uuid[], text[], integer, integer)
    TO memory_runtime;

-- A small GIN pending list: every search of every workspace scans it until it is
-- merged, so one tenant's burst of writes must not grow it to the 4 MB default.
ALTER INDEX search_documents_document SET (gin_pending_list_limit = 64);
ALTER TABLE search_documents SET (autovacuum_vacuum_scale_factor = 0.02,
                                  autovacuum_vacuum_insert_scale_factor = 0.02);

-- Add the access lexemes to every existing document (the owner sees all rows).
UPDATE search_documents
SET document = document || access_tsvector(workspace_id, owner_id, context_key, kind, updated_at);

-- A provenance handle (created_by, updated_by, a revision's writer), under the
-- caller's own row-level security: NULL unless the principal is a member of the
-- current workspace, exactly as a subquery on principals would answer. Measured:
-- two such subqueries made planning a read by path cost ~2 ms (the policy's
-- subplan planned twice) against 0.2 ms without; PL/pgSQL keeps this statement's
-- plan for the session, so the read plans one function call instead.
CREATE FUNCTION principal_handle(p_id uuid) RETURNS text
LANGUAGE plpgsql STABLE SECURITY INVOKER
AS $$
BEGIN
    RETURN (SELECT p.handle FROM memory.principals AS p WHERE p.id = p_id);
END
$$;
