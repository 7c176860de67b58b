-- Search v4: rank each match with its own cell's query; find the window newest first.
--
-- Measured on 1M records (200k in one workspace, docs/performance.md), search v3
-- spent its time in two places:
--
-- * Ranking. ts_rank_cd(document, terms) with terms ORed over every cell of the view
--   (12 for a person listening from a thread) cost ~20 us a row, 10 ms for a window of
--   500; a document only ever matches its own cell's copy of the query, and ranking
--   with that copy alone gives the same score for ~4 us a row (2 ms).
-- * Counting before fetching. The probe counted the whole match set first (a GIN
--   bitmap of every match: ~5 ms for a term in 10% of the workspace), then counted
--   the chosen stage, then fetched it. Now each stage is fetched directly, newest
--   first, and the complete match set is only asked for (capped at the window) once
--   the two shortest stages came up short, where it is cheap or rarely needed.
--
-- The window is the same as before: the p_window most recently updated visible
-- matches (all of them when fewer), ranked; tests/integration/test_search.py checks
-- it at every stage.

DROP FUNCTION search_candidates(text, uuid[], text[], integer, integer);
DROP FUNCTION search_window(tsquery, tsquery, uuid[], text[], integer, integer);
DROP FUNCTION search_probe(tsquery, integer);
DROP FUNCTION search_terms(text, uuid[], text[]);

-- The same recency query as before, in PL/pgSQL: as an SQL function with a FROM it
-- was planned again in every statement that called it (~0.2 ms a call).
CREATE OR REPLACE FUNCTION recency_query(ws uuid, stage integer, today bigint) RETURNS tsquery
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = memory, pg_temp
AS $$
DECLARE
    tag constant text := CASE WHEN stage < 2 THEN 'd' ELSE 'b' END;
    first constant bigint := CASE WHEN stage < 2 THEN today - (ARRAY[1, 7])[stage + 1]
                                  ELSE today / 32 - (ARRAY[2, 6, 24])[stage - 1] END;
    last constant bigint := CASE WHEN stage < 2 THEN today + 1 ELSE (today + 1) / 32 END;
    alternatives text := '';
BEGIN
    IF stage NOT BETWEEN 0 AND 4 THEN
        RETURN NULL;
    END IF;
    -- Built as text here rather than through any_lexeme(), an SQL function that
    -- would be planned on every call; a recency lexeme holds no quote or backslash.
    FOR bucket IN first..last LOOP
        alternatives := alternatives || CASE WHEN bucket > first THEN ' | ' ELSE '' END
                        || '''' || recency_lexeme(ws, tag, bucket) || '''';
    END LOOP;
    RETURN alternatives::tsquery;
END
$$;

DROP FUNCTION any_lexeme(text[]);  -- only recency_query used it

-- The cells of the caller's view (from the settings, narrowed by p_owners and
-- p_kinds; owners the settings do not allow are dropped whatever the caller passed),
-- each with the query rewritten for it, and those queries ORed into terms. terms is
-- NULL when nothing can match (no cell, no read grant, or only stop words).
CREATE FUNCTION search_cells(
    p_query text, p_owners uuid[], p_kinds text[],
    OUT owners uuid[], OUT kinds text[], OUT contexts text[], OUT queries tsquery[],
    OUT terms tsquery)
LANGUAGE plpgsql STABLE SET search_path = memory, pg_temp
AS $$
DECLARE
    ws constant uuid := setting_uuid('app.workspace_id');
    query tsquery;
BEGIN
    IF ws IS NULL OR NOT coalesce('read' = ANY (setting_array('app.grants')), false) THEN
        RETURN;
    END IF;
    query := websearch_to_tsquery('english', p_query);
    IF numnode(query) = 0 THEN
        RETURN;  -- only stop words
    END IF;
    SELECT array_agg(c.o), array_agg(c.k), array_agg(c.ctx), array_agg(c.q),
           string_agg('(' || c.q::text || ')', ' | ')::tsquery
    INTO owners, kinds, contexts, queries, terms
    FROM (SELECT o, k, ctx,
                 -- A query with nothing the index can look up (only negations) is
                 -- anchored on the cell itself, so it cannot scan the whole index.
                 CASE WHEN querytree(query) = 'T'
                      THEN ('''' || cell || ''' & (' || prefixed_tsquery(cell, query)::text
                            || ')')::tsquery
                      ELSE prefixed_tsquery(cell, query)
                 END AS q
          FROM (SELECT o, k, ctx, search_cell(ws, o, k, ctx) AS cell
                FROM unnest(p_owners) AS o, unnest(p_kinds) AS k,
                     unnest(setting_array('app.contexts')) AS ctx
                WHERE o = '00000000-0000-0000-0000-000000000000'
                   OR (o = setting_uuid('app.principal_id')
                       AND current_setting('app.personal', true) = 'on')) AS cells) AS c;
END
$$;

-- Ranked candidate ids for the runtime role, which cannot read search_documents.
--
-- The window is found newest first: the visible matches of recency stage 0 (about
-- the last 2 days), then stage 1 (8 days), each stage a superset of the one before,
-- until one holds p_window of them. After stage 1, any p_window matches of all time
-- are asked for once: a rarer term ends there with all its matches, in one cheap
-- probe instead of four more stages. Each step checks the view on the row as well
-- as through the cells. Tuple ids are stable within the snapshot that this STABLE
-- function's statements share, so the window is fetched by tid, and ranked once.
CREATE FUNCTION search_candidates(p_query text, p_owners uuid[], p_kinds text[],
                                  p_window integer, p_limit integer)
RETURNS TABLE (memory_id uuid, score real)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = memory, pg_temp
-- Generic plans from the first call: the index is the only way to answer @@, so the
-- plan does not depend on the values, and planning each step for its values cost
-- ~0.15 ms a statement (half of a rare term's search).
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    view_cells constant record := search_cells(p_query, p_owners, p_kinds);
    ws constant uuid := setting_uuid('app.workspace_id');
    today constant bigint := search_day(now());
    stage integer;
    newest boolean;
    probe tsquery;
    window_tids tid[];
BEGIN
    IF view_cells.terms IS NULL THEN
        RETURN;
    END IF;
    -- Steps: stages 0 and 1, any matches of all time, stages 2 to 4, all time.
    FOR step IN 1..7 LOOP
        stage := (ARRAY[0, 1, NULL, 2, 3, 4, NULL])[step];
        newest := step <> 3;
        probe := CASE WHEN stage IS NULL THEN view_cells.terms
                      ELSE view_cells.terms && recency_query(ws, stage, today) END;
        SELECT coalesce(array_agg(m.ctid), '{}') INTO window_tids
        FROM (SELECT d.ctid
              FROM search_documents AS d
              WHERE d.document @@ probe
                AND can_see(d.workspace_id, d.owner_id, d.context_key)
                AND d.owner_id = ANY (p_owners)
                AND d.kind = ANY (p_kinds)
              ORDER BY CASE WHEN newest THEN d.updated_at END DESC
              LIMIT p_window) AS m;
        EXIT WHEN newest AND cardinality(window_tids) >= p_window;
        EXIT WHEN NOT newest AND cardinality(window_tids) < p_window;
    END LOOP;

    RETURN QUERY
    SELECT d.memory_id, ts_rank_cd(d.document, c.query)
    FROM search_documents AS d
    JOIN unnest(view_cells.owners, view_cells.kinds, view_cells.contexts, view_cells.queries)
         AS c (owner_id, kind, context_key, query)
      ON c.owner_id = d.owner_id AND c.kind = d.kind AND c.context_key = d.context_key
    WHERE d.ctid = ANY (window_tids)
    ORDER BY 2 DESC, 1
    LIMIT p_limit;
END
$$;

REVOKE ALL ON FUNCTION search_cells(text, uuid[], text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION search_candidates(text, uuid[], text[], integer, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION search_candidates(text, uuid[], text[], integer, integer)
    TO memory_runtime;
