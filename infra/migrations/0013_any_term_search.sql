-- Search v5: any meaningful term matches, BM25 decides the order, and no recency
-- window hides an old match.
--
-- Measured (docs/performance.md): requiring every word of a question, as
-- websearch_to_tsquery does, left most natural questions with no hit at all; ranking
-- only the newest 500 matches let weak new records push out exactly relevant old
-- ones. Now a record matches when it holds any meaningful term of the query, and the
-- order is BM25 over the caller's own view.
--
-- * The text. A record's terms are its title (weight A), its path segments (B) and
--   its body (D), English lexemes with positions: search_documents.terms. Its length
--   is the number of positions.
-- * BM25. For a term t and a record: idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b +
--   b * length / L)), k1 = 1.2, b = 0.75, with tf counting a title occurrence 3
--   times, a path occurrence twice and a body occurrence once. L is a fixed
--   reference length of 64 terms rather than the collection's average, so a term's
--   factor in a record is known when the record is written (and the index stores
--   it, below). idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)) over the records the
--   caller may see: nothing about hidden records enters a score.
-- * Prior. A record updated now gets 0.25 more, halving every 60 days: a tie-breaker
--   between near-equal matches, never enough to outweigh a matched term.
-- * Statistics. search_statistics counts, per (workspace, owner, context) and
--   lexeme, the records holding it, and per (workspace, owner, context) the records
--   ('' lexeme). Statement triggers on memories keep it in the same transaction as
--   the change; each statement applies its changes in key order, so two writers
--   cannot deadlock on it.
-- * The index. Each (record, lexeme) appears in the GIN index once, as <cell><tier>
--   <lexeme>: the cell is a hash of (workspace, owner, context), so a posting list
--   holds one cell's records (the caller's view is a few cells); the tier is the
--   lexeme's BM25 factor in the record, in 12 bands. A search fetches the highest
--   bands first, scores the records it fetches exactly, and stops as soon as no
--   record it has not fetched can enter the top results (or when its budget is
--   spent: then its results are the best of what it fetched).

CREATE FUNCTION search_path_words(path text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN translate(regexp_replace(path, '\.md$', '', 'i'), '/_.-', '    ');

-- What search sees of a record: title (A) and body (D), from search_vector, and the
-- path's segments (B).
CREATE FUNCTION search_terms(doc tsvector, path text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN doc || setweight(to_tsvector('english'::regconfig, search_path_words(path)), 'B');

-- Its length: the number of term positions (stop words do not count).
CREATE FUNCTION search_length(terms tsvector) RETURNS integer
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
BEGIN
    RETURN (SELECT coalesce(sum(cardinality(u.positions)), 0)::integer FROM unnest(terms) AS u);
END
$$;

-- The lexemes a record counts for in search_statistics ('' counts the record itself).
CREATE FUNCTION search_lexemes(doc tsvector, path text) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN '{""}'::text[] || tsvector_to_array(search_terms(doc, path));

-- BM25's term-frequency factor (tf weighted: title 3, path 2, body 1).
CREATE FUNCTION search_bm25(tf double precision, len integer) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN tf * 2.2::double precision
       / (tf + 0.3::double precision + 0.9::double precision * len / 64::double precision);

-- Weighted term frequency as ts_rank_cd computes it on terms: D 1, C 0, B 2, A 3.
CREATE FUNCTION search_tf(terms tsvector, lexeme tsquery) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN 4 * ts_rank_cd('{0.25,0,0.5,0.75}'::real[], terms, lexeme)::double precision;

CREATE FUNCTION search_idf(documents bigint, df bigint) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ln(1 + (documents - df + 0.5::double precision) / (df + 0.5::double precision));

CREATE FUNCTION search_prior(updated timestamptz, now timestamptz) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN 0.25::double precision
       * power(0.5::double precision,
               greatest(extract(epoch FROM now - updated), 0)::double precision / (60 * 86400));

-- The 12 bands of the BM25 factor (which ranges over 0 to 2.2) and their ceilings.
CREATE FUNCTION search_tier(factor double precision) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN width_bucket(factor, '{0.6,0.7,0.8,0.9,1.0,1.1,1.2,1.3,1.4,1.5,1.7}'::double precision[]);

CREATE FUNCTION search_tier_ceiling(tier integer) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN coalesce(('{0.6,0.7,0.8,0.9,1.0,1.1,1.2,1.3,1.4,1.5,1.7}'::double precision[])[tier + 1],
                2.2::double precision);

CREATE FUNCTION search_view_cell(ws uuid, owner uuid, ctx text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN left(md5(ws::text || owner::text || '/' || ctx), 16);

-- What the GIN index holds for a record: <cell><tier letter><lexeme> per lexeme, no
-- positions; a lexeme is cut to fit the 2046-byte limit after its 17-byte prefix, at
-- a character boundary (fit_lexeme, migration 0012), in documents and probes alike.
-- The cell is 16 hex digits and the tier one letter, so a written lexeme
-- can never be read as another cell or tier. Names are qualified: maintenance
-- (ANALYZE, REINDEX) evaluates index expressions with a search_path of its own.
CREATE FUNCTION search_index_document(cell text, terms tsvector, len integer) RETURNS tsvector
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
BEGIN
    RETURN (
        SELECT array_to_tsvector(coalesce(array_agg(
                   cell || chr(97 + memory.search_tier(memory.search_bm25(s.tf, len)))
                   || memory.fit_lexeme(s.lexeme, 2045 - octet_length(cell))),
                   '{}'))
        FROM (SELECT u.lexeme,
                     (cardinality(u.positions) + 2 * cardinality(array_positions(u.weights, 'A'))
                      + cardinality(array_positions(u.weights, 'B')))::double precision AS tf
              FROM unnest(terms) AS u) AS s);
END
$$;

-- Any of the given lexemes, as a tsquery (NULL for none). PL/pgSQL, so that its
-- statement is planned once per session, not in every statement that calls it.
CREATE FUNCTION search_any(lexemes text[]) RETURNS tsquery
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
BEGIN
    RETURN (SELECT string_agg('''' || replace(replace(l, '\', '\\'), '''', '''''') || '''', ' | ')
            FROM unnest(lexemes) AS l)::tsquery;
END
$$;

-- The terms of a query as the excerpt should show them: any word, or any phrase.
CREATE FUNCTION search_excerpt_query(p_words text, p_phrases text[]) RETURNS tsquery
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

-- -- The documents -------------------------------------------------------------------

DROP TABLE search_documents;
CREATE TABLE search_documents (
    memory_id    uuid PRIMARY KEY,
    workspace_id uuid NOT NULL,
    owner_id     uuid NOT NULL,
    context_key  text COLLATE "C" NOT NULL,
    kind         text COLLATE "C" NOT NULL,
    updated_at   timestamptz NOT NULL,
    length       integer NOT NULL,
    terms        tsvector NOT NULL
) WITH (toast_tuple_target = 8160,
        autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.02);
-- Kept in the row (compressed when large): ranking reads terms for every record it
-- scores, and an out-of-line value costs an index lookup per read.
ALTER TABLE search_documents ALTER COLUMN terms SET STORAGE MAIN;

CREATE OR REPLACE FUNCTION sync_search_document() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM search_documents WHERE memory_id = OLD.id;
        RETURN NULL;
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.search_vector = OLD.search_vector AND NEW.path = OLD.path
       AND NEW.kind = OLD.kind AND NEW.updated_at = OLD.updated_at
       AND NEW.owner_id = OLD.owner_id AND NEW.context_key = OLD.context_key THEN
        RETURN NULL;
    END IF;
    INSERT INTO search_documents AS d
        (memory_id, workspace_id, owner_id, context_key, kind, updated_at, length, terms)
    VALUES (NEW.id, NEW.workspace_id, NEW.owner_id, NEW.context_key, NEW.kind, NEW.updated_at,
            search_length(search_terms(NEW.search_vector, NEW.path)),
            search_terms(NEW.search_vector, NEW.path))
    ON CONFLICT (memory_id) DO UPDATE
        SET owner_id = EXCLUDED.owner_id, context_key = EXCLUDED.context_key,
            kind = EXCLUDED.kind, updated_at = EXCLUDED.updated_at,
            length = EXCLUDED.length, terms = EXCLUDED.terms;
    RETURN NULL;
END
$$;

INSERT INTO search_documents
    (memory_id, workspace_id, owner_id, context_key, kind, updated_at, length, terms)
SELECT id, workspace_id, owner_id, context_key, kind, updated_at,
       search_length(search_terms(search_vector, path)), search_terms(search_vector, path)
FROM memories;

CREATE INDEX search_documents_document ON search_documents USING gin (
    search_index_document(search_view_cell(workspace_id, owner_id, context_key), terms, length))
    WITH (fastupdate = off);

-- -- The statistics ------------------------------------------------------------------

CREATE TABLE search_statistics (
    workspace_id uuid NOT NULL REFERENCES workspaces ON DELETE CASCADE,
    owner_id     uuid NOT NULL,
    context_key  text COLLATE "C" NOT NULL,
    lexeme       text COLLATE "C" NOT NULL,  -- '' counts the records themselves
    documents    integer NOT NULL,
    PRIMARY KEY (workspace_id, owner_id, context_key, lexeme)
) WITH (fillfactor = 70);  -- room for in-page (HOT) updates of the counts

-- The changes of one statement, summed per key and applied in key order. Counts that
-- reach zero are deleted, so that what deleted or replaced records said leaves no
-- lexeme behind; those rows are already locked by this transaction (it has just
-- updated them), and a concurrent writer of the same key waits for the commit and
-- then inserts the key afresh.
CREATE FUNCTION search_statistics_added() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
DECLARE
    zero_workspaces uuid[];
    zero_owners uuid[];
    zero_contexts text[];
    zero_lexemes text[];
BEGIN
    WITH applied AS (
        INSERT INTO search_statistics AS s (workspace_id, owner_id, context_key, lexeme, documents)
        SELECT a.workspace_id, a.owner_id, a.context_key, l.lexeme, count(*)::integer
        FROM added AS a, unnest(search_lexemes(a.search_vector, a.path)) AS l (lexeme)
        GROUP BY 1, 2, 3, 4
        ORDER BY 1, 2, 3, 4
        ON CONFLICT (workspace_id, owner_id, context_key, lexeme)
        DO UPDATE SET documents = s.documents + EXCLUDED.documents
        RETURNING s.workspace_id, s.owner_id, s.context_key, s.lexeme, s.documents
    )
    SELECT array_agg(a.workspace_id), array_agg(a.owner_id), array_agg(a.context_key),
           array_agg(a.lexeme)
    INTO zero_workspaces, zero_owners, zero_contexts, zero_lexemes
    FROM applied AS a
    WHERE a.documents = 0;
    IF zero_lexemes IS NOT NULL THEN
        DELETE FROM search_statistics AS s
        USING unnest(zero_workspaces, zero_owners, zero_contexts, zero_lexemes)
              AS z (ws, owner, ctx, lexeme)
        WHERE s.workspace_id = z.ws AND s.owner_id = z.owner AND s.context_key = z.ctx
          AND s.lexeme = z.lexeme AND s.documents = 0;
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION search_statistics_changed() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
DECLARE
    zero_workspaces uuid[];
    zero_owners uuid[];
    zero_contexts text[];
    zero_lexemes text[];
BEGIN
    WITH applied AS (
        INSERT INTO search_statistics AS s (workspace_id, owner_id, context_key, lexeme, documents)
        SELECT c.workspace_id, c.owner_id, c.context_key, c.lexeme, sum(c.delta)::integer
        FROM (SELECT n.workspace_id, n.owner_id, n.context_key, l.lexeme, 1 AS delta
              FROM before AS o JOIN after AS n USING (id),
                   unnest(search_lexemes(n.search_vector, n.path)) AS l (lexeme)
              WHERE (o.search_vector, o.path, o.owner_id, o.context_key)
                    IS DISTINCT FROM (n.search_vector, n.path, n.owner_id, n.context_key)
              UNION ALL
              SELECT o.workspace_id, o.owner_id, o.context_key, l.lexeme, -1
              FROM before AS o JOIN after AS n USING (id),
                   unnest(search_lexemes(o.search_vector, o.path)) AS l (lexeme)
              WHERE (o.search_vector, o.path, o.owner_id, o.context_key)
                    IS DISTINCT FROM (n.search_vector, n.path, n.owner_id, n.context_key)) AS c
        GROUP BY 1, 2, 3, 4
        HAVING sum(c.delta) <> 0
        ORDER BY 1, 2, 3, 4
        ON CONFLICT (workspace_id, owner_id, context_key, lexeme)
        DO UPDATE SET documents = s.documents + EXCLUDED.documents
        RETURNING s.workspace_id, s.owner_id, s.context_key, s.lexeme, s.documents
    )
    SELECT array_agg(a.workspace_id), array_agg(a.owner_id), array_agg(a.context_key),
           array_agg(a.lexeme)
    INTO zero_workspaces, zero_owners, zero_contexts, zero_lexemes
    FROM applied AS a
    WHERE a.documents = 0;
    IF zero_lexemes IS NOT NULL THEN
        DELETE FROM search_statistics AS s
        USING unnest(zero_workspaces, zero_owners, zero_contexts, zero_lexemes)
              AS z (ws, owner, ctx, lexeme)
        WHERE s.workspace_id = z.ws AND s.owner_id = z.owner AND s.context_key = z.ctx
          AND s.lexeme = z.lexeme AND s.documents = 0;
    END IF;
    RETURN NULL;
END
$$;

-- A deleted workspace takes its statistics with it (foreign key): its records'
-- deletes are not counted down.
CREATE FUNCTION search_statistics_removed() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
DECLARE
    zero_workspaces uuid[];
    zero_owners uuid[];
    zero_contexts text[];
    zero_lexemes text[];
BEGIN
    WITH applied AS (
        INSERT INTO search_statistics AS s (workspace_id, owner_id, context_key, lexeme, documents)
        SELECT r.workspace_id, r.owner_id, r.context_key, l.lexeme, -count(*)::integer
        FROM removed AS r, unnest(search_lexemes(r.search_vector, r.path)) AS l (lexeme)
        WHERE EXISTS (SELECT FROM workspaces AS w WHERE w.id = r.workspace_id)
        GROUP BY 1, 2, 3, 4
        ORDER BY 1, 2, 3, 4
        ON CONFLICT (workspace_id, owner_id, context_key, lexeme)
        DO UPDATE SET documents = s.documents + EXCLUDED.documents
        RETURNING s.workspace_id, s.owner_id, s.context_key, s.lexeme, s.documents
    )
    SELECT array_agg(a.workspace_id), array_agg(a.owner_id), array_agg(a.context_key),
           array_agg(a.lexeme)
    INTO zero_workspaces, zero_owners, zero_contexts, zero_lexemes
    FROM applied AS a
    WHERE a.documents = 0;
    IF zero_lexemes IS NOT NULL THEN
        DELETE FROM search_statistics AS s
        USING unnest(zero_workspaces, zero_owners, zero_contexts, zero_lexemes)
              AS z (ws, owner, ctx, lexeme)
        WHERE s.workspace_id = z.ws AND s.owner_id = z.owner AND s.context_key = z.ctx
          AND s.lexeme = z.lexeme AND s.documents = 0;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER memories_search_statistics_added
    AFTER INSERT ON memories REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION search_statistics_added();
CREATE TRIGGER memories_search_statistics_changed
    AFTER UPDATE ON memories REFERENCING OLD TABLE AS before NEW TABLE AS after
    FOR EACH STATEMENT EXECUTE FUNCTION search_statistics_changed();
CREATE TRIGGER memories_search_statistics_removed
    AFTER DELETE ON memories REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION search_statistics_removed();

-- Recount everything from memories (this migration; a bulk load with triggers off).
CREATE FUNCTION search_statistics_rebuild() RETURNS bigint
LANGUAGE plpgsql SET search_path = memory, pg_temp
AS $$
DECLARE
    rows bigint;
BEGIN
    DELETE FROM search_statistics;
    INSERT INTO search_statistics (workspace_id, owner_id, context_key, lexeme, documents)
    SELECT m.workspace_id, m.owner_id, m.context_key, l.lexeme, count(*)::integer
    FROM memories AS m, unnest(search_lexemes(m.search_vector, m.path)) AS l (lexeme)
    GROUP BY 1, 2, 3, 4;
    GET DIAGNOSTICS rows = ROW_COUNT;
    RETURN rows;
END
$$;

SELECT search_statistics_rebuild();

-- -- The search ----------------------------------------------------------------------

DROP FUNCTION search_candidates(text, uuid[], text[], integer, integer);
DROP FUNCTION search_cells(text, uuid[], text[]);
DROP FUNCTION recency_query(uuid, integer, bigint);
DROP FUNCTION search_tsvector(uuid, uuid, text, text, timestamptz, tsvector);
DROP FUNCTION recency_lexeme(uuid, text, bigint);
DROP FUNCTION search_day(timestamptz);
DROP FUNCTION search_cell(uuid, uuid, text, text);
DROP FUNCTION prefixed_tsvector(text, tsvector);
DROP FUNCTION prefixed_tsquery(text, tsquery);
DROP FUNCTION scoped_tsvector(uuid, tsvector);
DROP FUNCTION scoped_tsquery(uuid, tsquery);
DROP FUNCTION search_scope(uuid);

-- Records of the view holding each lexeme, and the view's records ('' lexeme).
-- An SQL function simple enough to be inlined, so EXPLAIN shows its plan.
CREATE FUNCTION search_view_statistics(p_workspace uuid, p_owners uuid[], p_contexts text[],
                                       p_lexemes text[])
RETURNS TABLE (lexeme text, documents bigint)
LANGUAGE sql STABLE
AS $$
    SELECT s.lexeme, sum(s.documents)::bigint
    FROM memory.search_statistics AS s
    WHERE s.workspace_id = p_workspace AND s.owner_id = ANY (p_owners)
      AND s.context_key = ANY (p_contexts) AND s.lexeme = ANY (p_lexemes)
    GROUP BY s.lexeme
$$;

-- One segment's records, each scored exactly: those the index returns for p_probe
-- (in the view's cells), checked again on the row against the view, of the given
-- kinds, matching p_filter (phrases) and none of p_excluded. The score sums, over the
-- units (p_queries: one lexeme each, with its idf, and the phrases it is bound to or
-- NULL), idf * BM25 factor, and adds the prior. The first 16 units are written out
-- (a term frequency is computed only where the lexeme occurs); any more go through a
-- subquery. With p_others, a record holding none of those lexemes is returned without
-- a score (NULL): the caller has shown that such a record cannot reach its results.
-- An SQL function simple enough to be inlined, like the above.
CREATE FUNCTION search_fetch(p_probe tsquery, p_filter tsquery, p_excluded tsquery,
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
           + CASE WHEN d.terms @@ p_queries[1] AND (p_bounds[1] IS NULL OR d.terms @@ p_bounds[1])
                  THEN p_idfs[1] * memory.search_bm25(memory.search_tf(d.terms, p_queries[1]), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ p_queries[2] AND (p_bounds[2] IS NULL OR d.terms @@ p_bounds[2])
                  THEN p_idfs[2] * memory.search_bm25(memory.search_tf(d.terms, p_queries[2]), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ p_queries[3] AND (p_bounds[3] IS NULL OR d.terms @@ p_bounds[3])
                  THEN p_idfs[3] * memory.search_bm25(memory.search_tf(d.terms, p_queries[3]), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ p_queries[4] AND (p_bounds[4] IS NULL OR d.terms @@ p_bounds[4])
                  THEN p_idfs[4] * memory.search_bm25(memory.search_tf(d.terms, p_queries[4]), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ p_queries[5] AND (p_bounds[5] IS NULL OR d.terms @@ p_bounds[5])
                  THEN p_idfs[5] * memory.search_bm25(memory.search_tf(d.terms, p_queries[5]), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ p_queries[6] AND (p_bounds[6] IS NULL OR d.terms @@ p_bounds[6])
                  THEN p_idfs[6] * memory.search_bm25(memory.search_tf(d.terms, p_queries[6]), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ p_queries[7] AND (p_bounds[7] IS NULL OR d.terms @@ p_bounds[7])
                  THEN p_idfs[7] * memory.search_bm25(memory.search_tf(d.terms, p_queries[7]), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ p_queries[8] AND (p_bounds[8] IS NULL OR d.terms @@ p_bounds[8])
                  THEN p_idfs[8] * memory.search_bm25(memory.search_tf(d.terms, p_queries[8]), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ p_queries[9] AND (p_bounds[9] IS NULL OR d.terms @@ p_bounds[9])
                  THEN p_idfs[9] * memory.search_bm25(memory.search_tf(d.terms, p_queries[9]), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ p_queries[10] AND (p_bounds[10] IS NULL OR d.terms @@ p_bounds[10])
                  THEN p_idfs[10] * memory.search_bm25(memory.search_tf(d.terms, p_queries[10]), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ p_queries[11] AND (p_bounds[11] IS NULL OR d.terms @@ p_bounds[11])
                  THEN p_idfs[11] * memory.search_bm25(memory.search_tf(d.terms, p_queries[11]), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ p_queries[12] AND (p_bounds[12] IS NULL OR d.terms @@ p_bounds[12])
                  THEN p_idfs[12] * memory.search_bm25(memory.search_tf(d.terms, p_queries[12]), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ p_queries[13] AND (p_bounds[13] IS NULL OR d.terms @@ p_bounds[13])
                  THEN p_idfs[13] * memory.search_bm25(memory.search_tf(d.terms, p_queries[13]), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ p_queries[14] AND (p_bounds[14] IS NULL OR d.terms @@ p_bounds[14])
                  THEN p_idfs[14] * memory.search_bm25(memory.search_tf(d.terms, p_queries[14]), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ p_queries[15] AND (p_bounds[15] IS NULL OR d.terms @@ p_bounds[15])
                  THEN p_idfs[15] * memory.search_bm25(memory.search_tf(d.terms, p_queries[15]), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ p_queries[16] AND (p_bounds[16] IS NULL OR d.terms @@ p_bounds[16])
                  THEN p_idfs[16] * memory.search_bm25(memory.search_tf(d.terms, p_queries[16]), d.length)
                  ELSE 0 END
           + CASE WHEN cardinality(p_queries) <= 16 THEN 0 ELSE (
                 SELECT coalesce(sum(u.idf * memory.search_bm25(memory.search_tf(d.terms, u.q),
                                                               d.length)), 0)
                 FROM unnest(p_queries[17:], p_idfs[17:], p_bounds[17:]) AS u (q, idf, bound)
                 WHERE d.terms @@ u.q AND (u.bound IS NULL OR d.terms @@ u.bound)) END
           END
    FROM memory.search_documents AS d
    WHERE memory.search_index_document(
              memory.search_view_cell(d.workspace_id, d.owner_id, d.context_key),
              d.terms, d.length) @@ p_probe
      AND d.workspace_id = p_workspace AND d.owner_id = ANY (p_owners)
      AND d.context_key = ANY (p_contexts) AND d.kind = ANY (p_kinds)
      AND (p_filter IS NULL OR d.terms @@ p_filter)
      AND (p_excluded IS NULL OR NOT d.terms @@ p_excluded)
$$;

-- Any of the lexemes in any of the bands, in any of the cells, as the index holds them.
CREATE FUNCTION search_probe(p_cells text[], p_bands integer[], p_lexemes text[])
RETURNS tsquery
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
BEGIN
    RETURN memory.search_any(ARRAY(SELECT c || chr(97 + b)
                                          || memory.fit_lexeme(l, 2045 - octet_length(c))
                                   FROM unnest(p_cells) AS c, unnest(p_bands) AS b,
                                        unnest(p_lexemes) AS l));
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
-- band ceiling is highest, four segments per statement. Every fetched record that
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
CREATE FUNCTION search_candidates(p_words text, p_phrases text[], p_excluded text[],
                                  p_owners uuid[], p_kinds text[], p_limit integer,
                                  p_budget integer, p_score_budget integer)
RETURNS TABLE (memory_id uuid, score double precision)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = memory, pg_temp
-- Generic plans from the first call: the index is the only way to answer @@, so the
-- plans do not depend on the values.
SET plan_cache_mode = force_generic_plan
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
        -- (a rare unit's remaining bands at once), up to four per statement.
        probes := '{}';
        others_of := '{}';
        segment_units := '{}';
        FOR j IN 1..4 LOOP
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

REVOKE ALL ON FUNCTION search_view_statistics(uuid, uuid[], text[], text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION search_fetch(tsquery, tsquery, tsquery, uuid, uuid[], text[], text[],
                                    tsquery[], double precision[], tsquery[], timestamptz,
                                    tsquery)
    FROM PUBLIC;
REVOKE ALL ON FUNCTION search_candidates(text, text[], text[], uuid[], text[], integer, integer,
                                         integer)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION search_candidates(text, text[], text[], uuid[], text[], integer, integer,
                                            integer)
    TO memory_runtime;
REVOKE ALL ON FUNCTION search_statistics_added() FROM PUBLIC;
REVOKE ALL ON FUNCTION search_statistics_changed() FROM PUBLIC;
REVOKE ALL ON FUNCTION search_statistics_removed() FROM PUBLIC;
REVOKE ALL ON FUNCTION search_statistics_rebuild() FROM PUBLIC;
