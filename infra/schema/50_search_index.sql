-- The search index: what search sees of a record, the BM25 factor and its bands, the
-- GIN index over search_documents, and the triggers that keep search_documents and
-- search_statistics in step with memories, in the same transaction as the change.
--
-- A record's terms are its title (weight A), its path segments (B) and its body (D),
-- English lexemes with positions; its length is the number of positions. BM25's
-- term-frequency factor for a lexeme in a record, with tf counting a title occurrence
-- three times, a path occurrence twice and a body occurrence once, is
-- tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / L)), where L is a fixed reference
-- length rather than the collection's average, so that a lexeme's factor in a record
-- is known when the record is written. The GIN index holds each (record, lexeme) once,
-- as <cell><band><lexeme>: the cell is a hash of (workspace, owner, context), so that
-- a posting list holds one cell's records (the caller's view is a few cells), and the
-- band is the lexeme's BM25 factor in the record, bounded by the band ceilings. The
-- search (60_search.sql) fetches the highest bands first.
--
-- A name in double braces is a value of memory_server.limits (k1, b, L, the band
-- ceilings), put in by memory_server/migrate.py when it applies this file. The index
-- is an expression over these functions, so it is made here, not in a migration, and
-- made again whenever one of them changes (a changed limit, say): its entries would
-- be stale otherwise.
--
-- Current state, re-runnable (applied by memory_server/migrate.py after the numbered
-- migrations).

-- -- What search sees of a record -------------------------------------------------------

CREATE OR REPLACE FUNCTION search_path_words(path text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN translate(regexp_replace(path, '\.md$', '', 'i'), '/_.-', '    ');

-- Title (A) and body (D), from search_vector, and the path's segments (B).
CREATE OR REPLACE FUNCTION search_terms(doc tsvector, path text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN doc || setweight(to_tsvector('english'::regconfig, search_path_words(path)), 'B');

-- Its length: the number of term positions (stop words do not count).
CREATE OR REPLACE FUNCTION search_length(terms tsvector) RETURNS integer
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
BEGIN
    RETURN (SELECT coalesce(sum(cardinality(u.positions)), 0)::integer FROM unnest(terms) AS u);
END
$$;

-- The lexemes a record counts for in search_statistics ('' counts the record itself).
CREATE OR REPLACE FUNCTION search_lexemes(doc tsvector, path text) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN '{""}'::text[] || tsvector_to_array(search_terms(doc, path));

-- A lexeme holds at most 2046 bytes, and the text parser keeps words up to that, so a
-- lexeme longer than what fits beside an index prefix is cut to fit, at a character
-- boundary, in documents and probes alike: the record is stored, found by its other
-- words, and found by the long word too.
CREATE OR REPLACE FUNCTION fit_lexeme(lexeme text, room integer) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
DECLARE
    fitted text := left(lexeme, room);
BEGIN
    WHILE octet_length(fitted) > room LOOP
        -- Drop at least a quarter of the excess in characters (at most 4 bytes each).
        fitted := left(fitted, -greatest(1, (octet_length(fitted) - room + 3) / 4));
    END LOOP;
    RETURN fitted;
END
$$;

-- -- BM25 and its bands ---------------------------------------------------------------

-- BM25's term-frequency factor: tf * (k1 + 1) / (tf + k1 * (1 - b) + k1 * b * len / L).
CREATE OR REPLACE FUNCTION search_bm25(tf double precision, len integer)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN tf * {{SEARCH_BM25_K1_PLUS_1}}::double precision
       / (tf + {{SEARCH_BM25_K1_TIMES_1_MINUS_B}}::double precision
          + {{SEARCH_BM25_K1_TIMES_B}}::double precision * len
            / {{SEARCH_BM25_REFERENCE_LENGTH}}::double precision);

-- The band of a BM25 factor (0 for the lowest), and a band's ceiling: the next band's
-- floor, and for the top band the factor's own ceiling, k1 + 1.
CREATE OR REPLACE FUNCTION search_tier(factor double precision) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN width_bucket(factor, '{{SEARCH_TIER_CEILINGS}}'::double precision[]);

CREATE OR REPLACE FUNCTION search_tier_ceiling(tier integer) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN coalesce(('{{SEARCH_TIER_CEILINGS}}'::double precision[])[tier + 1],
                {{SEARCH_BM25_K1_PLUS_1}}::double precision);

-- -- The index ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION search_view_cell(ws uuid, owner uuid, ctx text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN left(md5(ws::text || owner::text || '/' || ctx), 16);

-- What the GIN index holds for a record: <cell><band letter><lexeme> per lexeme, no
-- positions; a lexeme is cut to fit the 2046-byte limit after its 17-byte prefix
-- (fit_lexeme). The cell is 16 hex digits and the band one letter, so a written lexeme
-- can never be read as another cell or band. Names are qualified: maintenance
-- (ANALYZE, REINDEX) evaluates index expressions with a search_path of its own.
CREATE OR REPLACE FUNCTION search_index_document(cell text, terms tsvector, len integer)
RETURNS tsvector
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

-- An index over expressions of functions of these files, made when it is missing and
-- made again when one of those functions changed since (its comment keeps their
-- fingerprint: p_label, then the md5 of their definitions). A numbered migration
-- cannot make such an index: on a new database it runs before the functions exist.
-- Run by the migrator only (this file and 65_search_vectors.sql).
CREATE OR REPLACE FUNCTION make_function_index(p_name text, p_label text, p_functions text[],
                                               p_definition text)
RETURNS void
LANGUAGE plpgsql SET search_path = memory, pg_temp
AS $$
DECLARE
    made_with constant text := p_label || (
        SELECT md5(string_agg(pg_get_functiondef(f::regprocedure), '' ORDER BY f))
        FROM unnest(p_functions) AS f);
BEGIN
    IF to_regclass(p_name) IS NOT NULL
       AND obj_description(to_regclass(p_name), 'pg_class') = made_with
    THEN
        RETURN;
    END IF;
    EXECUTE format('DROP INDEX IF EXISTS %I', p_name);
    EXECUTE p_definition;
    EXECUTE format('COMMENT ON INDEX %I IS %L', p_name, made_with);
END
$$;
REVOKE ALL ON FUNCTION make_function_index(text, text, text[], text) FROM PUBLIC;

-- The index, over the document of each record computed by the functions above.
SELECT make_function_index(
    'search_documents_document',
    'entries computed by functions ',
    ARRAY['search_index_document(text, tsvector, integer)',
          'search_view_cell(uuid, uuid, text)',
          'search_tier(double precision)',
          'search_bm25(double precision, integer)',
          'fit_lexeme(text, integer)'],
    $index$
    CREATE INDEX search_documents_document ON search_documents USING gin (
        search_index_document(search_view_cell(workspace_id, owner_id, context_key), terms,
                              length))
        WITH (fastupdate = off)
    $index$);

-- -- Keeping the documents and the statistics -------------------------------------------

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
       AND NEW.expires_at IS NOT DISTINCT FROM OLD.expires_at
       AND NEW.owner_id = OLD.owner_id AND NEW.context_key = OLD.context_key THEN
        RETURN NULL;
    END IF;
    INSERT INTO search_documents AS d
        (memory_id, workspace_id, owner_id, context_key, kind, updated_at, expires_at, length,
         terms)
    VALUES (NEW.id, NEW.workspace_id, NEW.owner_id, NEW.context_key, NEW.kind, NEW.updated_at,
            NEW.expires_at,
            search_length(search_terms(NEW.search_vector, NEW.path)),
            search_terms(NEW.search_vector, NEW.path))
    ON CONFLICT (memory_id) DO UPDATE
        SET owner_id = EXCLUDED.owner_id, context_key = EXCLUDED.context_key,
            kind = EXCLUDED.kind, updated_at = EXCLUDED.updated_at,
            expires_at = EXCLUDED.expires_at,
            length = EXCLUDED.length, terms = EXCLUDED.terms;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION sync_search_document() FROM PUBLIC;
CREATE OR REPLACE TRIGGER memories_search_document
    AFTER INSERT OR UPDATE OR DELETE ON memories
    FOR EACH ROW EXECUTE FUNCTION sync_search_document();

-- The changes of one statement on memories, summed per key (a row of search_statistics
-- whose documents is the change), applied in key order, so that two writers cannot
-- deadlock on the counts. Counts that reach zero are deleted, so that what deleted or
-- replaced records said leaves no lexeme behind; those rows are already locked by this
-- transaction (it has just updated them), and a concurrent writer of the same key
-- waits for the commit and then inserts the key afresh. Runs as the triggers below,
-- which run as the owner.
CREATE OR REPLACE FUNCTION search_statistics_apply(p_changes search_statistics[])
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = memory, pg_temp
AS $$
DECLARE
    zero_workspaces uuid[];
    zero_owners uuid[];
    zero_contexts text[];
    zero_lexemes text[];
BEGIN
    WITH applied AS (
        INSERT INTO search_statistics AS s (workspace_id, owner_id, context_key, lexeme, documents)
        SELECT c.workspace_id, c.owner_id, c.context_key, c.lexeme, c.documents
        FROM unnest(p_changes) AS c
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
END
$$;
REVOKE ALL ON FUNCTION search_statistics_apply(search_statistics[]) FROM PUBLIC;

-- Records inserted count up, records deleted count down: the two triggers below name
-- either transition table "records". A deleted workspace takes its statistics with it
-- (foreign key): its records' deletes are not counted down.
CREATE OR REPLACE FUNCTION search_statistics_counted() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
DECLARE
    sign constant integer := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
BEGIN
    PERFORM search_statistics_apply(ARRAY(
        SELECT ROW(r.workspace_id, r.owner_id, r.context_key, l.lexeme,
                   sign * count(*)::integer)::search_statistics
        FROM records AS r, unnest(search_lexemes(r.search_vector, r.path)) AS l (lexeme)
        WHERE sign > 0 OR EXISTS (SELECT FROM workspaces AS w WHERE w.id = r.workspace_id)
        GROUP BY r.workspace_id, r.owner_id, r.context_key, l.lexeme));
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION search_statistics_counted() FROM PUBLIC;

-- Records updated: only those whose lexemes, owner or context changed count, each
-- taken off what it said before and counted for what it says now.
CREATE OR REPLACE FUNCTION search_statistics_changed() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
BEGIN
    PERFORM search_statistics_apply(ARRAY(
        SELECT ROW(c.workspace_id, c.owner_id, c.context_key, c.lexeme,
                   sum(c.delta)::integer)::search_statistics
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
        GROUP BY c.workspace_id, c.owner_id, c.context_key, c.lexeme
        HAVING sum(c.delta) <> 0));
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION search_statistics_changed() FROM PUBLIC;

-- The statement triggers: one statement's changes are counted once, together.
CREATE OR REPLACE TRIGGER memories_search_statistics_added AFTER INSERT ON memories
    REFERENCING NEW TABLE AS records
    FOR EACH STATEMENT EXECUTE FUNCTION search_statistics_counted();
CREATE OR REPLACE TRIGGER memories_search_statistics_changed AFTER UPDATE ON memories
    REFERENCING OLD TABLE AS before NEW TABLE AS after
    FOR EACH STATEMENT EXECUTE FUNCTION search_statistics_changed();
CREATE OR REPLACE TRIGGER memories_search_statistics_removed AFTER DELETE ON memories
    REFERENCING OLD TABLE AS records
    FOR EACH STATEMENT EXECUTE FUNCTION search_statistics_counted();

-- Recount everything from memories (a bulk load with the triggers off: bench/seed.py).
CREATE OR REPLACE FUNCTION search_statistics_rebuild() RETURNS bigint
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
REVOKE ALL ON FUNCTION search_statistics_rebuild() FROM PUBLIC;
