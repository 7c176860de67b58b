-- Search by meaning: the embedding side of hybrid recall (table: 0005_embeddings.sql).
--
-- The runtime role holds no privilege on search_embeddings or embedding_queue; these
-- functions reach them as the owner and apply the one visibility predicate themselves
-- (can_see and is_live of 10_visibility.sql, over the caller's app.* settings, as the
-- row-level security policies do), so a vector never widens what a caller sees.
--
-- Current state, re-runnable (applied by memory_server/migrate.py after the numbered
-- migrations).

-- The text a record is embedded from: its path's words, then its body. content_hash
-- of search_embeddings is the SHA-256 of this text.
CREATE OR REPLACE FUNCTION embedding_text(p_path text, p_body text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN search_path_words(p_path) || E'\n' || coalesce(p_body, '');

-- A record whose searchable terms changed (or a new one) waits for its embedding.
CREATE OR REPLACE FUNCTION queue_embedding() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
BEGIN
    INSERT INTO embedding_queue AS q (memory_id) VALUES (NEW.memory_id)
    ON CONFLICT (memory_id) DO UPDATE SET queued_at = now(), claimed_at = NULL, attempts = 0;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION queue_embedding() FROM PUBLIC;
CREATE OR REPLACE TRIGGER search_documents_queue_embedding AFTER INSERT ON search_documents
    FOR EACH ROW EXECUTE FUNCTION queue_embedding();
CREATE OR REPLACE TRIGGER search_documents_requeue_embedding
    AFTER UPDATE OF terms ON search_documents
    FOR EACH ROW WHEN (OLD.terms IS DISTINCT FROM NEW.terms)
    EXECUTE FUNCTION queue_embedding();

-- Up to p_limit queued records, oldest first, marked claimed (others skip them for
-- a minute), with the text to embed and its hash. Its own short transaction: no lock
-- is held while the model runs. A request's caller (the after-response job) claims
-- only records in its own view; the owner role (the backfill: memoryctl, the
-- migrations function, make dev) claims any. A record that failed p_max_attempts
-- times waits for the next backfill (which resets attempts).
CREATE OR REPLACE FUNCTION embedding_claim(p_limit integer, p_max_attempts integer)
RETURNS TABLE (memory_id uuid, content text, content_hash bytea)
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
    WITH waiting AS (
        SELECT q.memory_id
        FROM embedding_queue AS q
        JOIN memories AS m ON m.id = q.memory_id
        WHERE q.attempts < p_max_attempts
          AND (q.claimed_at IS NULL OR q.claimed_at < now() - interval '1 minute')
          AND (pg_has_role(session_user, 'memory_owner', 'MEMBER')
               OR (m.workspace_id = setting_uuid('app.workspace_id')
                   AND can_see(m.workspace_id, m.owner_id, m.context_key)))
        ORDER BY q.queued_at
        LIMIT p_limit
        FOR UPDATE OF q SKIP LOCKED
    ), claimed AS (
        UPDATE embedding_queue AS q SET claimed_at = now()
        FROM waiting AS w WHERE q.memory_id = w.memory_id
        RETURNING q.memory_id
    )
    SELECT c.memory_id, t.content, sha256(convert_to(t.content, 'UTF8'))
    FROM claimed AS c
    JOIN memories AS m ON m.id = c.memory_id
    CROSS JOIN LATERAL (SELECT embedding_text(m.path, m.body) AS content) AS t
$$;
REVOKE ALL ON FUNCTION embedding_claim(integer, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION embedding_claim(integer, integer) TO memory_runtime;

-- Store the vectors of claimed records and take them off the queue; a record whose
-- text changed since it was claimed (its hash differs now) keeps its place in the
-- queue and its older vector is not stored. p_failed: claimed records the embedder
-- gave no vector for (it was down): one attempt more each. Returns how many stored.
CREATE OR REPLACE FUNCTION embedding_store(p_ids uuid[], p_hashes bytea[], p_vectors text[],
                                           p_model text, p_dimensions integer,
                                           p_failed uuid[])
RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
DECLARE
    stored integer;
BEGIN
    WITH given AS (
        SELECT g.id, g.hash, g.vec::public.vector AS vec
        FROM unnest(p_ids, p_hashes, p_vectors) AS g (id, hash, vec)
    ), current AS (
        SELECT given.* FROM given
        JOIN memories AS m ON m.id = given.id
        WHERE sha256(convert_to(embedding_text(m.path, m.body), 'UTF8')) = given.hash
          AND (pg_has_role(session_user, 'memory_owner', 'MEMBER')
               OR (m.workspace_id = setting_uuid('app.workspace_id')
                   AND can_see(m.workspace_id, m.owner_id, m.context_key)))
    ), upserted AS (
        INSERT INTO search_embeddings AS e (memory_id, model, dimensions, content_hash, embedding)
        SELECT id, p_model, p_dimensions, hash, vec FROM current
        WHERE EXISTS (SELECT 1 FROM search_documents AS d WHERE d.memory_id = current.id)
        ON CONFLICT (memory_id) DO UPDATE
            SET model = EXCLUDED.model, dimensions = EXCLUDED.dimensions,
                content_hash = EXCLUDED.content_hash, embedding = EXCLUDED.embedding,
                embedded_at = now()
        RETURNING e.memory_id
    )
    DELETE FROM embedding_queue AS q USING upserted AS u WHERE q.memory_id = u.memory_id;
    GET DIAGNOSTICS stored = ROW_COUNT;
    UPDATE embedding_queue SET attempts = attempts + 1, claimed_at = NULL
    WHERE memory_id = ANY (coalesce(p_failed, '{}'));
    RETURN stored;
END
$$;
REVOKE ALL ON FUNCTION embedding_store(uuid[], bytea[], text[], text, integer, uuid[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION embedding_store(uuid[], bytea[], text[], text, integer, uuid[])
    TO memory_runtime;

-- The backfill's bookkeeping (owner only): queue every record not embedded in the
-- vector space of p_model and p_dimensions (a new model or dimension, or a database
-- upgraded to embeddings), and reset the attempts of records that failed, so they are
-- tried again. Returns what waits now.
DROP FUNCTION IF EXISTS embedding_requeue(text);
CREATE OR REPLACE FUNCTION embedding_requeue(p_model text, p_dimensions integer) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
DECLARE
    waiting bigint;
BEGIN
    INSERT INTO embedding_queue (memory_id, queued_at)
    SELECT d.memory_id, d.updated_at FROM search_documents AS d
    LEFT JOIN search_embeddings AS e ON e.memory_id = d.memory_id
    WHERE e.memory_id IS NULL OR e.model <> p_model OR e.dimensions <> p_dimensions
    ON CONFLICT (memory_id) DO NOTHING;
    UPDATE embedding_queue SET attempts = 0, claimed_at = NULL
    WHERE attempts > 0 OR claimed_at IS NOT NULL;
    SELECT count(*) INTO waiting FROM embedding_queue;
    RETURN waiting;
END
$$;
REVOKE ALL ON FUNCTION embedding_requeue(text, integer) FROM PUBLIC;

-- The vector spaces stored vectors are in, as (model, dimensions) pairs and nothing
-- else (no record, no tenant, no count), for the start-up check of
-- memory_server.edge.runtime.require_embeddings: a service whose embedder makes
-- vectors of another space refuses to start until they are re-embedded. The models
-- by a loose index scan over search_embeddings_model (one probe a model); a model's
-- dimensions from its first vector, and a second dimension of the same model (Titan
-- with another EMBEDDING_DIMENSIONS) by a search that ends at its first hit.
CREATE OR REPLACE FUNCTION embedding_spaces()
RETURNS TABLE (model text, dimensions integer)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
    WITH RECURSIVE models (model) AS (
        (SELECT e.model FROM search_embeddings AS e ORDER BY e.model LIMIT 1)
        UNION ALL
        SELECT (SELECT e.model FROM search_embeddings AS e
                WHERE e.model > m.model ORDER BY e.model LIMIT 1)
        FROM models AS m WHERE m.model IS NOT NULL
    ), first AS (
        SELECT m.model, (SELECT e.dimensions FROM search_embeddings AS e
                         WHERE e.model = m.model LIMIT 1)::integer AS dimensions
        FROM models AS m WHERE m.model IS NOT NULL
    )
    SELECT f.model, f.dimensions FROM first AS f
    UNION ALL
    SELECT f.model, o.dimensions::integer FROM first AS f
    CROSS JOIN LATERAL (SELECT e.dimensions FROM search_embeddings AS e
                        WHERE e.model = f.model AND e.dimensions <> f.dimensions
                        LIMIT 1) AS o
$$;
REVOKE ALL ON FUNCTION embedding_spaces() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION embedding_spaces() TO memory_runtime;

-- What the embeddings hold: records, by model and dimensions, and what waits.
CREATE OR REPLACE FUNCTION embedding_status()
RETURNS TABLE (model text, dimensions integer, records bigint, queued bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
    SELECT e.model, e.dimensions::integer, count(*), (SELECT count(*) FROM embedding_queue)
    FROM search_embeddings AS e GROUP BY e.model, e.dimensions
    UNION ALL
    SELECT NULL, NULL, 0, (SELECT count(*) FROM embedding_queue)
    WHERE NOT EXISTS (SELECT 1 FROM search_embeddings)
$$;
REVOKE ALL ON FUNCTION embedding_status() FROM PUBLIC;

-- The records of a view by its cells, for the exact scan of search_by_meaning (below):
-- a btree over each document's cell (search_view_cell: workspace, owner and context,
-- 50_search_index.sql) and kind, with the view's columns and the record's id beside
-- them, so that the view's records are read from this index alone and only their
-- vectors from search_embeddings. Without it the exact scan found the view by a
-- sequential scan of search_documents, every workspace's documents with their terms
-- (about 1.2 KB a record): seconds a search at 1,000,000 records, for a view of any
-- size (docs/performance.md, "Hybrid recall at 1,000,000 records"). Keyed on the cell
-- (an expression) rather than the columns themselves, so that the words' search,
-- whose predicate names the columns, keeps to its GIN index alone: a btree over the
-- columns was ANDed into its generic plans, a scan of the whole view per fetch.
-- Made when missing, and again when the cell's function changed since
-- (make_function_index, 50_search_index.sql), as the GIN index there is.
SELECT make_function_index(
    'search_documents_view',
    'cells computed by ',
    ARRAY['search_view_cell(uuid, uuid, text)'],
    $index$
    CREATE INDEX search_documents_view ON search_documents
        (search_view_cell(workspace_id, owner_id, context_key), kind)
        INCLUDE (memory_id, workspace_id, owner_id, context_key, expires_at)
    $index$);

-- The documents of the caller's view of the kinds asked for: the one visibility
-- predicate (the view's workspace, owners and contexts, can_see, is_live) as both
-- ways of search_by_meaning (below) apply it. An SQL function simple enough to be
-- inlined, so each way is planned as if the predicate were written there (the exact
-- scan still reads the view from search_documents_view).
CREATE OR REPLACE FUNCTION search_view_documents(p_workspace uuid, p_owners uuid[],
                                                 p_contexts text[], p_kinds text[])
RETURNS SETOF memory.search_documents
LANGUAGE sql STABLE
AS $$
    SELECT d.*
    FROM memory.search_documents AS d
    WHERE d.workspace_id = p_workspace
      AND d.owner_id = ANY (p_owners)
      AND d.context_key = ANY (p_contexts)
      AND memory.can_see(d.workspace_id, d.owner_id, d.context_key)
      AND memory.is_live(d.expires_at)
      AND d.kind = ANY (p_kinds)
$$;
REVOKE ALL ON FUNCTION search_view_documents(uuid, uuid[], text[], text[]) FROM PUBLIC;

-- The candidates by meaning: the p_limit records in the caller's view nearest to
-- p_query (cosine), among those embedded by p_model, with their similarity (1 is the
-- same direction). The view is the one predicate: workspace, owners the caller may
-- read (search_owners), its listening contexts, live records, the kinds asked for.
-- PL/pgSQL so that the query vector is parsed, and the view's owners and contexts
-- read, once per call, not once per row (40 ms for 359 records as one SQL statement).
--
-- Two ways to the same answer, both under that predicate:
-- - The HNSW index of the query's dimension first: the nearest vectors of every
--   workspace, then the predicate joined to them. The index only proposes: a record
--   outside the view is dropped there and never returned. How many it proposes: at
--   least p_index_candidates, and enough that twice p_limit are expected to be in
--   the view (the view's records, from search_statistics, against the vectors the
--   index holds, from its statistics), at most 1,000 (pgvector's largest
--   hnsw.ef_search, raised to that for the scan: pgvector 0.6 returns at most that
--   many rows from an index scan). When at least p_limit survive they are the answer
--   (approximate as the index is: an exact search would find the same records among
--   them, had the index been exact).
-- - The exact scan: every embedded record of the view, sorted by distance. When fewer
--   survive, and from the start when even 1,000 proposed would not be expected to
--   hold p_limit of the view (a small workspace in a big database). The view's
--   records come from search_documents_view by their cells (the view's owners times
--   its contexts), then each one's vector by key.
-- No iterative index scan (pgvector 0.8's hnsw.iterative_scan): the same code runs
-- on the local 0.6.2 and on Aurora. p_index_candidates 0 goes to the exact scan.
DROP FUNCTION IF EXISTS search_by_meaning(text, text, uuid[], text[], integer);
CREATE OR REPLACE FUNCTION search_by_meaning(p_query text, p_model text, p_owners uuid[],
                                             p_kinds text[], p_limit integer,
                                             p_index_candidates integer)
RETURNS TABLE (memory_id uuid, similarity double precision)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
DECLARE
    ws constant uuid := setting_uuid('app.workspace_id');
    contexts constant text[] := setting_array('app.contexts');
    owners constant uuid[] := search_owners(p_owners);
    q constant public.vector := p_query::public.vector;
    dims constant integer := public.vector_dims(q);
    wanted constant integer := least(p_limit, 200);
    -- Read once the vector type is in use (q above), so pgvector's setting exists
    -- (40, its default, otherwise); put back after the index scan. No SET clause on
    -- the function for it: a role that is not a superuser may not attach a setting
    -- the server does not know yet (the library not loaded in the migrator's session).
    ef_search constant text := coalesce(current_setting('hnsw.ef_search', true), '40');
    seqscan constant text := current_setting('enable_seqscan');
    in_view double precision;
    indexed double precision;
    proposed integer := 0;
    cells text[];
    near_ids uuid[];
    near_models text[];
    near_distances double precision[];
    ids uuid[];
    similarities double precision[];
BEGIN
    IF ws IS NULL OR contexts IS NULL OR cardinality(owners) = 0
       OR NOT coalesce('read' = ANY (setting_array('app.grants')), false)
       OR wanted < 1 THEN
        RETURN;
    END IF;
    -- The dimensions with an index (0005_embeddings.sql).
    IF dims IN (256, 384, 512, 1024) AND p_index_candidates > 0 THEN
        SELECT v.documents INTO in_view
        FROM search_view_statistics(ws, owners, contexts, '{""}') AS v;
        SELECT c.reltuples INTO indexed
        FROM pg_class AS c WHERE c.oid = format('memory.search_embeddings_%s', dims)::regclass;
        -- An index never analysed (reltuples -1) or a view without records: the least.
        proposed := CASE
            WHEN coalesce(in_view, 0) <= 0 OR coalesce(indexed, 0) <= 0 THEN p_index_candidates
            ELSE least(1001, greatest(p_index_candidates,
                                      ceil(2 * wanted * indexed / in_view)::integer))
        END;
        IF proposed > 1000 THEN  -- more than pgvector proposes: the view's share is small
            proposed := CASE WHEN 1000 * in_view / indexed >= wanted THEN 1000 ELSE 0 END;
        END IF;
    END IF;
    -- The cast is the indexed expression, spelled out for the planner, so the index
    -- scan is built per call; the view's predicate over what it proposed is static
    -- SQL, planned once a connection (the two as one statement built per call took
    -- 0.5 ms more: docs/performance.md). The index, never a sequential scan of the
    -- vectors (chosen for a table the statistics show small, it would be the exact
    -- scan without the view's filter first).
    IF proposed >= wanted THEN
        PERFORM set_config('hnsw.ef_search', proposed::text, true),
                set_config('enable_seqscan', 'off', true);
        EXECUTE format($index$
            SELECT array_agg(n.memory_id ORDER BY n.distance),
                   array_agg(n.model ORDER BY n.distance),
                   array_agg(n.distance ORDER BY n.distance)
            FROM (SELECT e.memory_id, e.model,
                         e.embedding::public.vector(%1$s) OPERATOR(public.<=>)
                             $1::public.vector(%1$s) AS distance
                  FROM search_embeddings AS e
                  WHERE e.dimensions = %1$s
                  ORDER BY e.embedding::public.vector(%1$s) OPERATOR(public.<=>)
                               $1::public.vector(%1$s)
                  LIMIT $2) AS n
        $index$, dims)
        INTO near_ids, near_models, near_distances
        USING q, proposed;
        PERFORM set_config('hnsw.ef_search', ef_search, true),
                set_config('enable_seqscan', seqscan, true);
        SELECT array_agg(k.memory_id ORDER BY k.distance),
               array_agg(1 - k.distance ORDER BY k.distance)
        INTO ids, similarities
        FROM (
            SELECT n.memory_id, n.distance
            FROM unnest(near_ids, near_models, near_distances) AS n (memory_id, model, distance)
            JOIN search_view_documents(ws, owners, contexts, p_kinds) AS d
                ON d.memory_id = n.memory_id
            WHERE n.model = p_model
            ORDER BY n.distance
            LIMIT wanted
        ) AS k;
        IF coalesce(cardinality(ids), 0) >= wanted THEN
            RETURN QUERY SELECT u.id, u.similarity
                         FROM unnest(ids, similarities) AS u (id, similarity);
            RETURN;
        END IF;
    END IF;
    cells := ARRAY(SELECT search_view_cell(ws, o, c)
                   FROM unnest(owners) AS o, unnest(contexts) AS c);
    RETURN QUERY
    SELECT d.memory_id, 1 - (e.embedding OPERATOR(public.<=>) q)
    FROM search_view_documents(ws, owners, contexts, p_kinds) AS d
    JOIN search_embeddings AS e ON e.memory_id = d.memory_id
    WHERE search_view_cell(d.workspace_id, d.owner_id, d.context_key) = ANY (cells)
      AND e.model = p_model
      AND e.dimensions = dims  -- never a distance across dimensions
    ORDER BY e.embedding OPERATOR(public.<=>) q
    LIMIT wanted;
END
$$;
REVOKE ALL ON FUNCTION search_by_meaning(text, text, uuid[], text[], integer, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION search_by_meaning(text, text, uuid[], text[], integer, integer)
    TO memory_runtime;
