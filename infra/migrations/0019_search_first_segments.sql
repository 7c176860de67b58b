-- Search: fewer records fetched before the stop rule can act, fewer statements
-- after, and probes built without a query each.
--
-- * search_candidates() (0013) sent four segments to each statement. Until p_limit
--   records have scores, neither the stop rule nor the pruning of weak records can
--   act, so a first statement of four segments fetched and scored records that a
--   smaller one would have shown unnecessary: a single common word fetched its
--   four best bands (392 records) where its best band already gave an exact top 8.
--   Statements now take two segments while fewer than p_limit records are scored.
-- * Once p_limit records have scores, a segment's records are mostly fetched without
--   being scored (they hold no unit strong enough to reach the top), so a segment
--   costs little next to a statement's fixed cost (its executor start-up and the
--   loop around it): statements then take six segments, not four. An 8-word
--   question of the benchmark takes two statements instead of three.
--   Same results for every benchmark question (1,000,000 records) and every question
--   of the recall-quality set; the figures are in docs/performance.md.
-- * search_any() and search_probe() built their tsquery text with a query (unnest,
--   string_agg) at every call, several times per search; they now concatenate in
--   PL/pgSQL. Same tsquery, term for term. The cells are 16 hex digits
--   (search_view_cell), so one cell's length gives the room every cell leaves.

-- Any of the given lexemes, as a tsquery (NULL for none).
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

-- The p_limit best records of the caller's view for a query, by exact score.
--
-- The query comes parsed (memory_search): p_words (any of their lexemes matches),
-- p_phrases (each matches where its words stand in order) and p_excluded (a record
-- holding any of them is left out). Each distinct lexeme is a unit: a word's unit
-- counts wherever it occurs, a phrase's only where the phrase matches.
--
-- Records are fetched in segments, strongest first: all matches of every phrase,
-- then, for each word, its bands from the top (all of them at once for a word that at
-- most 128 records of the view hold), always the band of the word whose idf times
-- band ceiling is highest, two segments per statement while fewer than p_limit records
-- are scored and six after. Every fetched record that
-- could reach the results is scored exactly. The search stops when the p_limit-th
-- best score reaches what a record not fetched yet could still score (each unit's
-- next band ceiling times its idf, summed, plus the largest prior): the result is
-- then exactly the top of a full ranking. Within a segment, a record holding no other
-- unit strong enough to close the gap to the p_limit-th score is fetched but not
-- scored, and a segment where no other unit is that strong is skipped. The search
-- also stops when it has fetched p_budget records or scored p_score_budget
-- record-unit pairs; the result is then the best of those. Every fetch checks
-- workspace, owner and context on the row against the view in the request settings,
-- as well as through the cells.
CREATE OR REPLACE FUNCTION search_candidates(p_words text, p_phrases text[], p_excluded text[],
                                  p_owners uuid[], p_kinds text[], p_limit integer,
                                  p_budget integer, p_score_budget integer)
RETURNS TABLE (memory_id uuid, score double precision)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = memory, pg_temp
-- Generic plans from the first call: the index is the only way to answer @@, so the
-- plans do not depend on the values.
SET plan_cache_mode = force_generic_plan
-- No sequential scan, whatever the tables looked like when a plan was cached (0015).
SET enable_seqscan = off
AS $$
DECLARE
    ws constant uuid := setting_uuid('app.workspace_id');
    contexts constant text[] := setting_array('app.contexts');
    me constant uuid := setting_uuid('app.principal_id');
    personal constant boolean := coalesce(current_setting('app.personal', true) = 'on', false);
    started constant timestamptz := now();
    -- SET memory.search_trace = on: each step is reported as a NOTICE (JSON), for the
    -- benchmark, which replays the segments under EXPLAIN. Only the caller's own view.
    tracing constant boolean := coalesce(current_setting('memory.search_trace', true) = 'on',
                                         false);
    rare constant integer := 128;  -- a word with at most this many records: one segment
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
    owners := ARRAY(SELECT DISTINCT o FROM unnest(p_owners) AS o
                    WHERE o = '00000000-0000-0000-0000-000000000000'
                       OR (o = me AND personal));
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
                                 SELECT generate_series(0, 11)), ARRAY[l])::text || ')', ' & ')
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
        unit_next[i] := CASE WHEN unit_df[i] = 0 OR unit_bound[i] IS NOT NULL THEN -1 ELSE 11 END;
    END LOOP;
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
        unseen := 0.25;
        FOR i IN 1..cardinality(unit_lexeme) LOOP
            IF unit_next[i] >= 0 THEN
                unseen := unseen + unit_idf[i] * search_tier_ceiling(unit_next[i]);
            END IF;
        END LOOP;
        IF (cardinality(top_scores) >= p_limit AND top_scores[p_limit] >= unseen)
           OR unseen = 0.25 OR fetched >= p_budget OR scored >= score_rows THEN
            IF tracing THEN
                RAISE NOTICE '%', jsonb_build_object(
                    'done', CASE WHEN cut THEN 'budget spent'
                                 WHEN cardinality(top_scores) >= p_limit
                                      AND top_scores[p_limit] >= unseen THEN 'exact'
                                 WHEN unseen = 0.25 THEN 'every match fetched'
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
        batch := CASE WHEN cardinality(top_scores) >= p_limit THEN 6 ELSE 2 END;
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
               AND top_scores[p_limit] - weight - 0.25 > 0 THEN
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
                    WHERE c.reach >= top_scores[p_limit] - weight - 0.25);
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

    RETURN QUERY SELECT t.memory_id, t.score FROM unnest(top_ids, top_scores) AS t (memory_id, score);
END
$$;
