-- Search: the p_limit best records of the caller's view for a query, exactly scored
-- with BM25 over what the caller may see (nothing about hidden records enters a
-- score), plus a small prior for recent records; and the query the excerpts show.
--
-- The runtime role holds no privilege on search_documents or search_statistics:
-- search_candidates() runs as the owner and applies the visibility predicate itself,
-- through the cells of the caller's view and again on every row it fetches. The
-- index, its bands and the BM25 factor are in 50_search_index.sql. idf(t) =
-- ln(1 + (N - df + 0.5) / (df + 0.5)) over the records the caller may see, counted in
-- search_statistics. The prior: a record updated now gets SEARCH_PRIOR_WEIGHT more,
-- halving every SEARCH_PRIOR_HALF_LIFE_DAYS, a tie-breaker between near-equal
-- matches, never enough to outweigh a matched term.
--
-- A name in double braces is a value of memory_server.limits, put in by
-- memory_server/migrate.py when it applies this file. The fetch and score budgets are parameters, given by the
-- caller (sql/search_candidates.sql, from limits.SEARCH_FETCH_BUDGET and
-- limits.SEARCH_SCORE_BUDGET).
--
-- Current state, re-runnable (applied by memory_server/migrate.py after the numbered
-- migrations).

-- -- Scoring ---------------------------------------------------------------------------

-- Weighted term frequency as ts_rank_cd computes it on terms: D 1, C 0, B 2, A 3 (body,
-- path, title: its weights array is D, C, B, A, quartered, as ts_rank_cd wants weights
-- of at most one; the same counts as search_index_document's).
CREATE OR REPLACE FUNCTION search_tf(terms tsvector, lexeme tsquery)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN 4 * ts_rank_cd('{0.25,0,0.5,0.75}'::real[], terms, lexeme)::double precision;

CREATE OR REPLACE FUNCTION search_idf(documents bigint, df bigint)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ln(1 + (documents - df + 0.5::double precision) / (df + 0.5::double precision));

CREATE OR REPLACE FUNCTION search_prior(updated timestamptz, now timestamptz)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN {{SEARCH_PRIOR_WEIGHT}}::double precision
       * power(0.5::double precision,
               greatest(extract(epoch FROM now - updated), 0)::double precision
               / ({{SEARCH_PRIOR_HALF_LIFE_DAYS}} * 86400));

-- -- Probes --------------------------------------------------------------------------------

-- Any of the given lexemes, as a tsquery (NULL for none). PL/pgSQL, so that it is
-- planned once per session, not in every statement that calls it.
CREATE OR REPLACE FUNCTION search_any(lexemes text[]) RETURNS tsquery
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
    l text;
    q text;
BEGIN
    FOREACH l IN ARRAY coalesce(lexemes, '{}') LOOP
        q := CASE WHEN q IS NULL THEN '' ELSE q || ' | ' END
             || '''' || replace(replace(l, '\', '\\'), '''', '''''') || '''';
    END LOOP;
    RETURN q::tsquery;
END
$$;

-- Any of <cell><band letter><lexeme> (search_index_document's entries), as a tsquery.
CREATE OR REPLACE FUNCTION search_probe(p_cells text[], p_bands integer[], p_lexemes text[])
RETURNS tsquery
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
    l text;
    fitted text;
    b integer;
    q text;
BEGIN
    IF coalesce(cardinality(p_cells) * cardinality(p_bands) * cardinality(p_lexemes), 0) = 0 THEN
        RETURN NULL;
    END IF;
    FOREACH l IN ARRAY p_lexemes LOOP
        FOREACH b IN ARRAY p_bands LOOP
            fitted := chr(97 + b)
                      || replace(replace(memory.fit_lexeme(l, 2045 - octet_length(p_cells[1])),
                                         '\', '\\'), '''', '''''');
            q := CASE WHEN q IS NULL THEN '''' ELSE q || ''' | ''' END
                 || array_to_string(p_cells, fitted || ''' | ''') || fitted;
        END LOOP;
    END LOOP;
    RETURN (q || '''')::tsquery;
END
$$;

-- -- Fetching and ranking ------------------------------------------------------------------

-- Records of the view holding each lexeme, and the view's records ('' lexeme). The
-- statement runs through EXECUTE, so it is planned with the call's values: the generic
-- plan read a small workspace's statistics whole through the primary key's first
-- column (1.7 ms of a 3.7 ms call on the recall-quality set; 0.3 ms planned per call).
CREATE OR REPLACE FUNCTION search_view_statistics(p_workspace uuid, p_owners uuid[],
                                                  p_contexts text[], p_lexemes text[])
RETURNS TABLE (lexeme text, documents bigint)
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    RETURN QUERY EXECUTE
        'SELECT s.lexeme, sum(s.documents)::bigint
         FROM memory.search_statistics AS s
         WHERE s.workspace_id = $1 AND s.owner_id = ANY ($2)
           AND s.context_key = ANY ($3) AND s.lexeme = ANY ($4)
         GROUP BY s.lexeme'
        USING p_workspace, p_owners, p_contexts, p_lexemes;
END
$$;
REVOKE ALL ON FUNCTION search_view_statistics(uuid, uuid[], text[], text[]) FROM PUBLIC;

-- One segment's records, each scored exactly: those the index returns for p_probe
-- (in the view's cells), checked again on the row against the view, of the given
-- kinds, matching p_filter (phrases) and none of p_excluded. The score sums, over the
-- units (p_queries: one lexeme each, with its idf, and the phrases it is bound to or
-- NULL), idf * BM25 factor, and adds the prior. The first 16 units are written out
-- and read out of their arrays once per call, not at every record (a term frequency
-- is computed only where the lexeme occurs); any more go through a subquery. With
-- p_others, a record holding none of those lexemes is returned without a score
-- (NULL): the caller has shown that such a record cannot reach its results. An SQL
-- function simple enough to be inlined, so EXPLAIN shows its plan.
CREATE OR REPLACE FUNCTION search_fetch(p_probe tsquery, p_filter tsquery, p_excluded tsquery,
                                        p_workspace uuid, p_owners uuid[], p_contexts text[],
                                        p_kinds text[], p_queries tsquery[],
                                        p_idfs double precision[], p_bounds tsquery[],
                                        p_now timestamptz, p_others tsquery)
RETURNS TABLE (memory_id uuid, score double precision)
LANGUAGE sql STABLE
AS $$
    SELECT d.memory_id,
           CASE WHEN p_others IS NULL OR d.terms @@ p_others THEN
           memory.search_prior(d.updated_at, p_now)
           + CASE WHEN d.terms @@ u.q1 AND (u.b1 IS NULL OR d.terms @@ u.b1)
                  THEN u.i1 * memory.search_bm25(memory.search_tf(d.terms, u.q1), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ u.q2 AND (u.b2 IS NULL OR d.terms @@ u.b2)
                  THEN u.i2 * memory.search_bm25(memory.search_tf(d.terms, u.q2), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ u.q3 AND (u.b3 IS NULL OR d.terms @@ u.b3)
                  THEN u.i3 * memory.search_bm25(memory.search_tf(d.terms, u.q3), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ u.q4 AND (u.b4 IS NULL OR d.terms @@ u.b4)
                  THEN u.i4 * memory.search_bm25(memory.search_tf(d.terms, u.q4), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ u.q5 AND (u.b5 IS NULL OR d.terms @@ u.b5)
                  THEN u.i5 * memory.search_bm25(memory.search_tf(d.terms, u.q5), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ u.q6 AND (u.b6 IS NULL OR d.terms @@ u.b6)
                  THEN u.i6 * memory.search_bm25(memory.search_tf(d.terms, u.q6), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ u.q7 AND (u.b7 IS NULL OR d.terms @@ u.b7)
                  THEN u.i7 * memory.search_bm25(memory.search_tf(d.terms, u.q7), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ u.q8 AND (u.b8 IS NULL OR d.terms @@ u.b8)
                  THEN u.i8 * memory.search_bm25(memory.search_tf(d.terms, u.q8), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ u.q9 AND (u.b9 IS NULL OR d.terms @@ u.b9)
                  THEN u.i9 * memory.search_bm25(memory.search_tf(d.terms, u.q9), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ u.q10 AND (u.b10 IS NULL OR d.terms @@ u.b10)
                  THEN u.i10 * memory.search_bm25(memory.search_tf(d.terms, u.q10), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ u.q11 AND (u.b11 IS NULL OR d.terms @@ u.b11)
                  THEN u.i11 * memory.search_bm25(memory.search_tf(d.terms, u.q11), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ u.q12 AND (u.b12 IS NULL OR d.terms @@ u.b12)
                  THEN u.i12 * memory.search_bm25(memory.search_tf(d.terms, u.q12), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ u.q13 AND (u.b13 IS NULL OR d.terms @@ u.b13)
                  THEN u.i13 * memory.search_bm25(memory.search_tf(d.terms, u.q13), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ u.q14 AND (u.b14 IS NULL OR d.terms @@ u.b14)
                  THEN u.i14 * memory.search_bm25(memory.search_tf(d.terms, u.q14), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ u.q15 AND (u.b15 IS NULL OR d.terms @@ u.b15)
                  THEN u.i15 * memory.search_bm25(memory.search_tf(d.terms, u.q15), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ u.q16 AND (u.b16 IS NULL OR d.terms @@ u.b16)
                  THEN u.i16 * memory.search_bm25(memory.search_tf(d.terms, u.q16), d.length)
                  ELSE 0 END
           + CASE WHEN cardinality(p_queries) <= 16 THEN 0 ELSE (
                 SELECT coalesce(sum(u.idf * memory.search_bm25(memory.search_tf(d.terms, u.q),
                                                               d.length)), 0)
                 FROM unnest(p_queries[17:], p_idfs[17:], p_bounds[17:]) AS u (q, idf, bound)
                 WHERE d.terms @@ u.q AND (u.bound IS NULL OR d.terms @@ u.bound)) END
           END
    FROM memory.search_documents AS d
    -- The per-unit parameters, taken out of their arrays once per call rather than
    -- at every record (OFFSET 0 keeps the subquery from being pulled up into the row
    -- expressions).
    CROSS JOIN LATERAL (SELECT
                               p_queries[1] AS q1, p_bounds[1] AS b1, p_idfs[1] AS i1,
                               p_queries[2] AS q2, p_bounds[2] AS b2, p_idfs[2] AS i2,
                               p_queries[3] AS q3, p_bounds[3] AS b3, p_idfs[3] AS i3,
                               p_queries[4] AS q4, p_bounds[4] AS b4, p_idfs[4] AS i4,
                               p_queries[5] AS q5, p_bounds[5] AS b5, p_idfs[5] AS i5,
                               p_queries[6] AS q6, p_bounds[6] AS b6, p_idfs[6] AS i6,
                               p_queries[7] AS q7, p_bounds[7] AS b7, p_idfs[7] AS i7,
                               p_queries[8] AS q8, p_bounds[8] AS b8, p_idfs[8] AS i8,
                               p_queries[9] AS q9, p_bounds[9] AS b9, p_idfs[9] AS i9,
                               p_queries[10] AS q10, p_bounds[10] AS b10, p_idfs[10] AS i10,
                               p_queries[11] AS q11, p_bounds[11] AS b11, p_idfs[11] AS i11,
                               p_queries[12] AS q12, p_bounds[12] AS b12, p_idfs[12] AS i12,
                               p_queries[13] AS q13, p_bounds[13] AS b13, p_idfs[13] AS i13,
                               p_queries[14] AS q14, p_bounds[14] AS b14, p_idfs[14] AS i14,
                               p_queries[15] AS q15, p_bounds[15] AS b15, p_idfs[15] AS i15,
                               p_queries[16] AS q16, p_bounds[16] AS b16, p_idfs[16] AS i16
                        OFFSET 0) AS u
    WHERE memory.search_index_document(
              memory.search_view_cell(d.workspace_id, d.owner_id, d.context_key),
              d.terms, d.length) @@ p_probe
      AND d.workspace_id = p_workspace AND d.owner_id = ANY (p_owners)
      AND d.context_key = ANY (p_contexts) AND d.kind = ANY (p_kinds)
      AND (d.expires_at IS NULL OR d.expires_at > p_now)  -- memory.is_live, at p_now
      AND (p_filter IS NULL OR d.terms @@ p_filter)
      AND (p_excluded IS NULL OR NOT d.terms @@ p_excluded)
$$;
REVOKE ALL ON FUNCTION search_fetch(tsquery, tsquery, tsquery, uuid, uuid[], text[], text[],
                                    tsquery[], double precision[], tsquery[],
                                    timestamp with time zone, tsquery) FROM PUBLIC;

-- The p_limit best records of the caller's view for a query, by exact score.
--
-- The query comes parsed (memory_search): p_words (any of their lexemes matches),
-- p_phrases (each matches where its words stand in order) and p_excluded (a record
-- holding any of them is left out). Each distinct lexeme is a unit: a word's unit
-- counts wherever it occurs, a phrase's only where the phrase matches.
--
-- Records are fetched in segments, strongest first: all matches of every phrase,
-- then, for each word, its bands from the top (all of them at once for a word that at
-- most SEARCH_RARE_WORD_RECORDS records of the view hold), always the band of the word
-- whose idf times band ceiling is highest, SEARCH_SEGMENTS_FIRST segments per
-- statement while fewer than p_limit records are scored and SEARCH_SEGMENTS_AFTER
-- after. Every fetched record that could reach the results is scored exactly. The search stops when the p_limit-th
-- best score reaches what a record not fetched yet could still score (each unit's
-- next band ceiling times its idf, summed, plus the largest prior): the result is
-- then exactly the top of a full ranking. Within a segment, a record holding no other
-- unit strong enough to close the gap to the p_limit-th score is fetched but not
-- scored, and a segment where no other unit is that strong is skipped. The search
-- also stops when it has fetched p_budget records or scored p_score_budget
-- record-unit pairs; the result is then the best of those. Every fetch checks
-- workspace, owner and context on the row against the view in the request settings,
-- as well as through the cells.
-- Of p_owners, those the caller may search (sees_owner, can_see's owner rule). Both
-- sides of a search use it.
CREATE OR REPLACE FUNCTION search_owners(p_owners uuid[]) RETURNS uuid[]
LANGUAGE sql STABLE PARALLEL SAFE
RETURN ARRAY(SELECT DISTINCT o FROM unnest(p_owners) AS o WHERE sees_owner(o));

-- Each row also carries the query's full_score: what a record holding each of the
-- query's words once, at the reference length, scores without the prior (the sum of
-- the words' idf). The fusion with meaning measures how strong the words' matches are
-- against it (operations/memory_search.py).
DROP FUNCTION IF EXISTS search_candidates(text, text[], text[], uuid[], text[], integer, integer,
                                          integer);
CREATE OR REPLACE FUNCTION search_candidates(p_words text, p_phrases text[],
                                             p_excluded text[], p_owners uuid[], p_kinds text[],
                                             p_limit integer, p_budget integer,
                                             p_score_budget integer)
RETURNS TABLE (memory_id uuid, score double precision, full_score double precision)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = memory, pg_temp
-- Generic plans from the first call: the index is the only way to answer @@, so the
-- plans do not depend on the values.
SET plan_cache_mode = force_generic_plan
-- No sequential scan, whatever the tables looked like when a plan was cached: a plan
-- cached while a new database's tables still looked empty scanned search_documents
-- and computed the index expression of every document (370 ms a question once 1,200
-- records had been written in the same session).
SET enable_seqscan = off
AS $$
DECLARE
    ws constant uuid := setting_uuid('app.workspace_id');
    contexts constant text[] := setting_array('app.contexts');
    started constant timestamptz := now();
    -- SET memory.search_trace = on: each step is reported as a NOTICE (JSON), for the
    -- benchmark, which replays the segments under EXPLAIN. Only the caller's own view.
    tracing constant boolean := coalesce(current_setting('memory.search_trace', true) = 'on',
                                         false);
    -- A word with at most this many records: one segment.
    rare constant integer := {{SEARCH_RARE_WORD_RECORDS}};
    owners uuid[];
    cells text[];
    part text;
    phrase_query tsquery;
    phrase_lexemes text[];
    phrase_probe tsquery;
    phrase_filter tsquery;
    excluded tsquery;
    -- units (parallel arrays)
    unit_lexeme text[] := '{}';
    unit_bound tsquery[] := '{}';
    unit_query tsquery[] := '{}';
    unit_idf double precision[] := '{}';
    unit_df bigint[] := '{}';
    unit_next integer[] := '{}';  -- highest band not fetched yet; -1: none left
    counts jsonb;
    documents bigint;
    i integer;
    best integer;
    weight double precision;
    bands integer[];
    probe tsquery;
    top_ids uuid[] := '{}';
    top_scores double precision[] := '{}';
    fetched integer := 0;
    scored integer := 0;
    score_rows integer;  -- records that may be scored
    probes tsquery[];
    others_of tsquery[];
    strong text[];
    segment_units integer[];
    cut boolean := false;  -- a statement's LIMIT stopped a segment short
    got integer;
    got_scored integer;
    unseen double precision;
    batch integer;  -- segments in the next statement
BEGIN
    IF ws IS NULL OR contexts IS NULL
       OR NOT coalesce('read' = ANY (setting_array('app.grants')), false) THEN
        RETURN;
    END IF;
    owners := search_owners(p_owners);
    IF cardinality(owners) = 0 OR p_limit < 1 THEN
        RETURN;
    END IF;
    cells := ARRAY(SELECT search_view_cell(ws, o, c)
                   FROM unnest(owners) AS o, unnest(contexts) AS c);

    -- The units: the words' lexemes, then the phrases' (bound to their phrases).
    unit_lexeme := tsvector_to_array(to_tsvector('english', coalesce(p_words, '')));
    unit_bound := array_fill(NULL::tsquery, ARRAY[cardinality(unit_lexeme)]);
    FOREACH part IN ARRAY coalesce(p_phrases, '{}') LOOP
        phrase_lexemes := tsvector_to_array(to_tsvector('english', part));
        CONTINUE WHEN cardinality(phrase_lexemes) = 0;
        IF cardinality(phrase_lexemes) = 1 THEN
            phrase_query := NULL;  -- a one-word phrase is a word
        ELSE
            phrase_query := phraseto_tsquery('english', part);
            phrase_filter := CASE WHEN phrase_filter IS NULL THEN phrase_query
                                  ELSE phrase_filter || phrase_query END;
            probe := (SELECT string_agg('(' || search_probe(cells, ARRAY(
                                 SELECT generate_series(0, {{SEARCH_TOP_TIER}})), ARRAY[l])::text || ')', ' & ')
                      FROM unnest(phrase_lexemes) AS l)::tsquery;
            phrase_probe := CASE WHEN phrase_probe IS NULL THEN probe
                                 ELSE phrase_probe || probe END;
        END IF;
        FOREACH part IN ARRAY phrase_lexemes LOOP
            i := array_position(unit_lexeme, part);
            IF i IS NULL THEN
                unit_lexeme := unit_lexeme || part;
                unit_bound := unit_bound || phrase_query;
            ELSIF unit_bound[i] IS NOT NULL THEN
                unit_bound[i] := CASE WHEN phrase_query IS NULL THEN NULL
                                      ELSE unit_bound[i] || phrase_query END;
            END IF;
        END LOOP;
    END LOOP;
    IF cardinality(unit_lexeme) = 0 THEN
        RETURN;  -- only stop words (or nothing but exclusions)
    END IF;
    FOREACH part IN ARRAY coalesce(p_excluded, '{}') LOOP
        CONTINUE WHEN length(to_tsvector('english', part)) = 0;  -- stop words only
        phrase_query := phraseto_tsquery('english', part);
        excluded := CASE WHEN excluded IS NULL THEN phrase_query ELSE excluded || phrase_query END;
    END LOOP;

    -- Statistics over the view.
    SELECT coalesce(jsonb_object_agg(v.lexeme, v.documents), '{}') INTO counts
    FROM search_view_statistics(ws, owners, contexts, unit_lexeme || ''::text) AS v;
    documents := coalesce((counts ->> ''), '0')::bigint;
    IF documents = 0 THEN
        RETURN;
    END IF;
    score_rows := greatest(p_score_budget / cardinality(unit_lexeme), p_limit);
    FOR i IN 1..cardinality(unit_lexeme) LOOP
        unit_df[i] := coalesce((counts ->> unit_lexeme[i]), '0')::bigint;
        unit_idf[i] := search_idf(documents, unit_df[i]);
        unit_query[i] := search_any(ARRAY[unit_lexeme[i]]);
        -- Nothing to fetch for a lexeme no visible record holds, or for a phrase's
        -- (its phrases are fetched whole, first).
        unit_next[i] := CASE WHEN unit_df[i] = 0 OR unit_bound[i] IS NOT NULL THEN -1 ELSE {{SEARCH_TOP_TIER}} END;
    END LOOP;
    full_score := (SELECT sum(u) FROM unnest(unit_idf) AS u);
    IF tracing THEN
        RAISE NOTICE '%', jsonb_build_object(
            'documents', documents, 'units', unit_lexeme, 'df', unit_df, 'idf', unit_idf,
            'bounds', unit_bound::text[], 'excluded', excluded::text, 'workspace', ws,
            'owners', owners, 'contexts', contexts, 'cells', cells, 'now', started);
    END IF;

    -- Phrases first: every match of each, whole.
    IF phrase_probe IS NOT NULL THEN
        SELECT count(*)::integer, coalesce(array_agg(f.memory_id ORDER BY f.score DESC, f.memory_id), '{}'),
               coalesce(array_agg(f.score ORDER BY f.score DESC, f.memory_id), '{}')
        INTO got, top_ids, top_scores
        FROM (SELECT * FROM search_fetch(phrase_probe, phrase_filter, excluded, ws, owners,
                                         contexts, p_kinds, unit_query, unit_idf, unit_bound,
                                         started, NULL)
              LIMIT least(p_budget, score_rows)) AS f;
        fetched := got;
        scored := got;
        cut := got >= least(p_budget, score_rows);
        top_ids := top_ids[1:p_limit];
        top_scores := top_scores[1:p_limit];
        IF tracing THEN
            RAISE NOTICE '%', jsonb_build_object('segment', 'phrases', 'probe', phrase_probe::text,
                                                 'filter', phrase_filter::text, 'fetched', got,
                                                 'limit', least(p_budget, score_rows));
        END IF;
    END IF;

    LOOP
        -- What a record not fetched yet could score at most: every unit's next band
        -- ceiling times its idf, plus the largest prior.
        unseen := {{SEARCH_PRIOR_WEIGHT}};
        FOR i IN 1..cardinality(unit_lexeme) LOOP
            IF unit_next[i] >= 0 THEN
                unseen := unseen + unit_idf[i] * search_tier_ceiling(unit_next[i]);
            END IF;
        END LOOP;
        IF (cardinality(top_scores) >= p_limit AND top_scores[p_limit] >= unseen)
           OR unseen = {{SEARCH_PRIOR_WEIGHT}} OR fetched >= p_budget OR scored >= score_rows THEN
            IF tracing THEN
                RAISE NOTICE '%', jsonb_build_object(
                    'done', CASE WHEN cut THEN 'budget spent'
                                 WHEN cardinality(top_scores) >= p_limit
                                      AND top_scores[p_limit] >= unseen THEN 'exact'
                                 WHEN unseen = {{SEARCH_PRIOR_WEIGHT}} THEN 'every match fetched'
                                 ELSE 'budget spent' END,
                    'fetched', fetched, 'scored', scored, 'limit_score', top_scores[p_limit],
                    'unseen', unseen);
            END IF;
            EXIT;
        END IF;

        -- The next segments: each time, the band of the unit that could add the most
        -- (a rare unit's remaining bands at once). Two per statement while fewer than
        -- p_limit records are scored, as the stop rule and the pruning below need
        -- those scores to act; six after, when most records of a segment are only
        -- fetched, not scored (a statement's fixed cost against the records of
        -- segments that would not have been needed).
        batch := CASE WHEN cardinality(top_scores) >= p_limit THEN {{SEARCH_SEGMENTS_AFTER}}
                      ELSE {{SEARCH_SEGMENTS_FIRST}} END;
        probes := '{}';
        others_of := '{}';
        segment_units := '{}';
        FOR j IN 1..batch LOOP
            best := NULL;
            weight := 0;
            FOR i IN 1..cardinality(unit_lexeme) LOOP
                IF unit_next[i] >= 0 AND unit_idf[i] * search_tier_ceiling(unit_next[i]) > weight
                THEN
                    weight := unit_idf[i] * search_tier_ceiling(unit_next[i]);
                    best := i;
                END IF;
            END LOOP;
            EXIT WHEN best IS NULL;
            IF unit_df[best] <= rare THEN
                bands := ARRAY(SELECT generate_series(0, unit_next[best]));
                unit_next[best] := -1;
            ELSE
                bands := ARRAY[unit_next[best]];
                unit_next[best] := unit_next[best] - 1;
            END IF;
            -- A record of this segment not scored yet holds each other unit, if at all,
            -- in a band not fetched yet, so it scores less than this segment's ceiling
            -- (weight) plus the largest prior plus, for each other unit it holds, that
            -- unit's next ceiling. The other units whose ceilings together stay below
            -- the gap to the current limit score are weak: a record holding only weak
            -- ones cannot reach the results and is fetched without being scored; with
            -- no strong unit left, the segment is skipped.
            strong := NULL;
            IF cardinality(top_scores) >= p_limit
               AND top_scores[p_limit] - weight - {{SEARCH_PRIOR_WEIGHT}} > 0 THEN
                strong := ARRAY(
                    SELECT c.lexeme
                    FROM (SELECT unit_lexeme[u.n] AS lexeme,
                                 sum(CASE WHEN unit_next[u.n] < 0 THEN 0
                                          ELSE unit_idf[u.n] * search_tier_ceiling(unit_next[u.n])
                                     END)
                                     OVER (ORDER BY CASE WHEN unit_next[u.n] < 0 THEN 0
                                                 ELSE unit_idf[u.n]
                                                      * search_tier_ceiling(unit_next[u.n])
                                                 END, u.n) AS reach
                          FROM generate_subscripts(unit_lexeme, 1) AS u (n)
                          WHERE u.n <> best) AS c
                    WHERE c.reach >= top_scores[p_limit] - weight - {{SEARCH_PRIOR_WEIGHT}});
                CONTINUE WHEN cardinality(strong) = 0;
            END IF;
            probes := probes || search_probe(cells, bands, ARRAY[unit_lexeme[best]]);
            segment_units := segment_units || best;
            others_of := others_of || search_any(strong);  -- NULL: score every record
        END LOOP;
        CONTINUE WHEN cardinality(probes) = 0;

        WITH f AS (
            SELECT r.memory_id, r.score
            FROM unnest(probes, others_of) AS s (probe, others)
            CROSS JOIN LATERAL search_fetch(s.probe, NULL, excluded, ws, owners, contexts,
                                            p_kinds, unit_query, unit_idf, unit_bound, started,
                                            s.others) AS r
            LIMIT least(p_budget - fetched, CASE WHEN others_of[1] IS NULL
                                                 THEN score_rows - scored ELSE p_budget END)
        ), best_of AS (
            SELECT b.memory_id, b.score
            FROM (SELECT f.memory_id, f.score FROM f WHERE f.score IS NOT NULL
                  UNION
                  SELECT t.memory_id, t.score
                  FROM unnest(top_ids, top_scores) AS t (memory_id, score)) AS b
            ORDER BY b.score DESC, b.memory_id
            LIMIT p_limit
        )
        SELECT (SELECT count(*) FROM f)::integer, (SELECT count(f.score) FROM f)::integer,
               coalesce((SELECT array_agg(b.memory_id ORDER BY b.score DESC, b.memory_id)
                         FROM best_of AS b), '{}'),
               coalesce((SELECT array_agg(b.score ORDER BY b.score DESC, b.memory_id)
                         FROM best_of AS b), '{}')
        INTO got, got_scored, top_ids, top_scores;
        cut := cut OR got >= least(p_budget - fetched, CASE WHEN others_of[1] IS NULL
                                                           THEN score_rows - scored
                                                           ELSE p_budget END);
        fetched := fetched + got;
        scored := scored + got_scored;
        IF tracing THEN
            RAISE NOTICE '%', jsonb_build_object(
                'segments', (SELECT jsonb_agg(unit_lexeme[u]) FROM unnest(segment_units) AS u),
                'probes', probes::text[], 'others', others_of::text[], 'fetched', got,
                'scored', got_scored,
                'limit', least(p_budget - fetched + got,
                               CASE WHEN others_of[1] IS NULL
                                    THEN score_rows - scored + got_scored ELSE p_budget END));
        END IF;
    END LOOP;

    RETURN QUERY SELECT t.memory_id, t.score, full_score
                 FROM unnest(top_ids, top_scores) AS t (memory_id, score);
END
$$;
REVOKE ALL ON FUNCTION search_candidates(text, text[], text[], uuid[], text[], integer, integer,
                                         integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION search_candidates(text, text[], text[], uuid[], text[], integer, integer,
                                            integer) TO memory_runtime;

-- The terms of a query as the excerpt should show them: any word, or any phrase.
CREATE OR REPLACE FUNCTION search_excerpt_query(p_words text, p_phrases text[]) RETURNS tsquery
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
    terms tsquery := memory.search_any(
        tsvector_to_array(to_tsvector('english', coalesce(p_words, ''))));
    phrase text;
BEGIN
    FOREACH phrase IN ARRAY coalesce(p_phrases, '{}') LOOP
        -- (checked on the lexemes first: phraseto_tsquery of stop words only raises a
        -- notice)
        IF length(to_tsvector('english', phrase)) > 0 THEN
            terms := CASE WHEN terms IS NULL THEN phraseto_tsquery('english', phrase)
                          ELSE terms || phraseto_tsquery('english', phrase) END;
        END IF;
    END LOOP;
    RETURN terms;
END
$$;
