-- Search index v3: the reader's view and recency inside the GIN probe.
--
-- Measured on 1M records (200k in one workspace, docs/performance.md): with terms
-- scoped only to the workspace, a term matching 10% of the workspace fetched all
-- 19,858 of its matches from ~17,000 heap pages, discarded 58% of them on owner and
-- context, and sorted the rest on updated_at to find the newest: 40-90 ms. Two
-- changes bound that work:
--
-- * Cells. Every lexeme of a document is prefixed with its cell, a hash of
--   (workspace, owner, kind, context), so a term's posting list holds one cell's
--   records. The caller's view is a handful of cells (visible owners x kinds x
--   the listening context's ancestors), and the probe is the query rewritten for
--   each of them, ORed: the index returns exactly the visible matches, and its cost
--   follows their number, not the workspace's. (ANDing a big "access lexeme" list
--   per owner and context instead was measured slower: GIN checks every candidate
--   against each of those lists.)
-- * Recency. Each document also carries workspace-scoped lexemes for the day and
--   the 32-day block of updated_at, so the probe can ask for the newest stretch of
--   time that holds a full ranking window and fetch about that many rows.
--
-- Recency lexemes are '<scope> d:<day>': the space cannot occur in a lexeme the text
-- parser produces, so no written text can collide with one.

CREATE FUNCTION search_cell(ws uuid, owner uuid, kind text, ctx text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN left(md5(ws::text || owner::text || kind || '/' || ctx), 16) || '~';

-- Every lexeme of doc with prefix in front (positions and weights kept).
CREATE FUNCTION prefixed_tsvector(prefix text, doc tsvector) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN regexp_replace(doc::text, '''((?:[^'']|'''')*)''', '''' || prefix || '\1''', 'g')::tsvector;

-- The same prefix on every lexeme of a query (operators, phrases and :* kept).
CREATE FUNCTION prefixed_tsquery(prefix text, query tsquery) RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN regexp_replace(query::text, '''((?:[^'']|'''')*)''', '''' || prefix || '\1''', 'g')::tsquery;

CREATE FUNCTION search_day(ts timestamptz) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN floor(extract(epoch FROM ts) / 86400)::bigint;

CREATE FUNCTION recency_lexeme(ws uuid, tag text, bucket bigint) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN search_scope(ws) || ' ' || tag || ':' || bucket::text;

CREATE FUNCTION search_tsvector(ws uuid, owner uuid, kind text, ctx text, updated timestamptz,
                                doc tsvector) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN prefixed_tsvector(search_cell(ws, owner, kind, ctx), doc)
    || array_to_tsvector(ARRAY[search_cell(ws, owner, kind, ctx),  -- the cell itself
                               recency_lexeme(ws, 'd', search_day(updated)),
                               recency_lexeme(ws, 'b', search_day(updated) / 32)]);

-- Any one of the given lexemes, as a tsquery (NULL for none).
CREATE FUNCTION any_lexeme(lexemes text[]) RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (SELECT string_agg('''' || replace(replace(l, '\', '\\'), '''', '''''') || '''', ' | ')
        FROM unnest(lexemes) AS l)::tsquery;

-- Records updated in recency stage 0..4: about the last 2, 8, 64, 192 and 768 days.
-- Each stage runs from its start up to tomorrow, so the newest matches of a stage
-- are the newest matches overall.
CREATE FUNCTION recency_query(ws uuid, stage integer, today bigint) RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE
    WHEN stage IN (0, 1) THEN (
        SELECT any_lexeme(array_agg(recency_lexeme(ws, 'd', d)))
        FROM generate_series(today - (ARRAY[1, 7])[stage + 1], today + 1) AS d)
    WHEN stage IN (2, 3, 4) THEN (
        SELECT any_lexeme(array_agg(recency_lexeme(ws, 'b', b)))
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
            search_tsvector(NEW.workspace_id, NEW.owner_id, NEW.kind, NEW.context_key,
                            NEW.updated_at, NEW.search_vector))
    ON CONFLICT (memory_id) DO UPDATE
        SET owner_id = EXCLUDED.owner_id, context_key = EXCLUDED.context_key,
            kind = EXCLUDED.kind, updated_at = EXCLUDED.updated_at, document = EXCLUDED.document;
    RETURN NULL;
END
$$;

-- The query rewritten for each cell of the caller's view (from the settings, narrowed
-- by p_owners and p_kinds; owners the settings do not allow are dropped whatever the
-- caller passed), ORed. NULL: nothing can match (no cell, or only stop words).
CREATE FUNCTION search_terms(p_query text, p_owners uuid[], p_kinds text[]) RETURNS tsquery
LANGUAGE plpgsql STABLE SET search_path = memory, pg_temp
AS $$
DECLARE
    ws constant uuid := setting_uuid('app.workspace_id');
    query tsquery;
BEGIN
    IF ws IS NULL OR NOT coalesce('read' = ANY (setting_array('app.grants')), false) THEN
        RETURN NULL;
    END IF;
    query := websearch_to_tsquery('english', p_query);
    IF numnode(query) = 0 THEN
        RETURN NULL;  -- only stop words
    END IF;
    RETURN (
        SELECT string_agg(
                   -- A query with nothing the index can look up (only negations) is
                   -- anchored on the cell itself, so it cannot scan the whole index.
                   CASE WHEN querytree(query) = 'T'
                        THEN '''' || cell || ''' & (' || prefixed_tsquery(cell, query)::text || ')'
                        ELSE '(' || prefixed_tsquery(cell, query)::text || ')'
                   END,
                   ' | ')::tsquery
        FROM (SELECT search_cell(ws, o, k, c) AS cell
              FROM unnest(p_owners) AS o, unnest(p_kinds) AS k,
                   unnest(setting_array('app.contexts')) AS c
              WHERE o = '00000000-0000-0000-0000-000000000000'
                 OR (o = setting_uuid('app.principal_id')
                     AND current_setting('app.personal', true) = 'on')) AS cells);
END
$$;

-- The probe: p_terms restricted to the shortest recency stage that holds p_window
-- matches. Each try is a count capped at p_window, so it touches at most p_window
-- rows: first all time (most terms end there), then the stages from the newest.
CREATE FUNCTION search_probe(p_terms tsquery, p_window integer) RETURNS tsquery
LANGUAGE plpgsql STABLE SET search_path = memory, pg_temp
AS $$
DECLARE
    ws constant uuid := setting_uuid('app.workspace_id');
    probe tsquery;
    found integer;
BEGIN
    SELECT count(*) INTO found
    FROM (SELECT FROM search_documents AS d WHERE d.document @@ p_terms LIMIT p_window) AS s;
    IF found < p_window THEN
        RETURN p_terms;
    END IF;
    FOR stage IN 0..4 LOOP
        probe := p_terms && recency_query(ws, stage, search_day(now()));
        SELECT count(*) INTO found
        FROM (SELECT FROM search_documents AS d WHERE d.document @@ probe LIMIT p_window) AS s;
        IF found >= p_window THEN
            RETURN probe;
        END IF;
    END LOOP;
    RETURN p_terms;
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
    terms constant tsquery := search_terms(p_query, p_owners, p_kinds);
BEGIN
    IF terms IS NOT NULL THEN
        RETURN QUERY
        SELECT w.memory_id, w.score
        FROM search_window(search_probe(terms, p_window), terms, p_owners, p_kinds,
                           p_window, p_limit) AS w;
    END IF;
END
$$;

REVOKE ALL ON FUNCTION search_terms(text, uuid[], text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION search_probe(tsquery, integer) FROM PUBLIC;
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

-- Rebuild every document in the new form (the owner sees all rows).
TRUNCATE search_documents;
INSERT INTO search_documents (memory_id, workspace_id, owner_id, context_key, kind, updated_at, document)
SELECT id, workspace_id, owner_id, context_key, kind, updated_at,
       search_tsvector(workspace_id, owner_id, kind, context_key, updated_at, search_vector)
FROM memories;

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
