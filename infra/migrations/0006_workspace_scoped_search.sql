-- Search index v2: workspace-scoped lexemes.
--
-- Measured on 1M records (200k in one workspace): with one GIN index over every
-- workspace plus access lexemes, a term matching 10% of the largest workspace cost
-- ~25 ms in the GIN probe (intersecting the term's posting list across all
-- workspaces with the workspace's) and ~20 ms in the heap (one 1 KB row per page).
-- Now every lexeme of a document is stored prefixed with its workspace's scope, so
-- a term's posting list holds only that workspace's records: the probe is the
-- workspace's own list, as if the index were partitioned by workspace. Context,
-- owner and kind are filtered on the row, and the wide tsvector moves out of line
-- (toast_tuple_target) so those rows stay small; ranking detoasts only the bounded
-- window it ranks.

CREATE FUNCTION search_scope(ws uuid) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN left(replace(ws::text, '-', ''), 16) || '~';

-- Every lexeme of doc, prefixed with the workspace scope; positions and weights kept.
CREATE FUNCTION scoped_tsvector(ws uuid, doc tsvector) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (
    SELECT coalesce(string_agg(
               '''' || replace(replace(search_scope(ws) || u.lexeme, '\', '\\'), '''', '''''')
               || '''' || coalesce(':' || (
                   SELECT string_agg(p::text || w, ',' ORDER BY ord)
                   FROM unnest(u.positions, u.weights) WITH ORDINALITY AS x (p, w, ord)), ''),
               ' '), '')::tsvector
    FROM unnest(doc) AS u
);

-- The same prefix on every lexeme of a query (operators, phrases and :* kept).
CREATE FUNCTION scoped_tsquery(ws uuid, query tsquery) RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN regexp_replace(query::text, '''((?:[^'']|'''')*)''',
                      '''' || search_scope(ws) || '\1''', 'g')::tsquery;

CREATE OR REPLACE FUNCTION sync_search_document() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM search_documents WHERE memory_id = OLD.id;
        RETURN NULL;
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.search_vector = OLD.search_vector AND NEW.kind = OLD.kind
       AND NEW.updated_at = OLD.updated_at THEN
        RETURN NULL;
    END IF;
    INSERT INTO search_documents AS d
        (memory_id, workspace_id, owner_id, context_key, kind, updated_at, document)
    VALUES (NEW.id, NEW.workspace_id, NEW.owner_id, NEW.context_key, NEW.kind, NEW.updated_at,
            scoped_tsvector(NEW.workspace_id, NEW.search_vector))
    ON CONFLICT (memory_id) DO UPDATE
        SET kind = EXCLUDED.kind, updated_at = EXCLUDED.updated_at, document = EXCLUDED.document;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION search_candidates(p_query text, p_owners uuid[], p_kinds text[],
                                             p_window integer, p_limit integer)
RETURNS TABLE (memory_id uuid, score real)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
    WITH q AS (
        SELECT scoped_tsquery(setting_uuid('app.workspace_id'),
                              websearch_to_tsquery('english', p_query)) AS query
    ), matches AS (
        SELECT d.memory_id, d.document
        FROM search_documents d, q
        WHERE d.document @@ q.query
          AND can_see(d.workspace_id, d.owner_id, d.context_key)
          AND d.owner_id = ANY (p_owners)
          AND d.kind = ANY (p_kinds)
        ORDER BY d.updated_at DESC
        LIMIT p_window
    )
    SELECT m.memory_id, ts_rank_cd(m.document, q.query) AS score
    FROM matches m, q
    ORDER BY score DESC, m.memory_id
    LIMIT p_limit
$$;

DROP FUNCTION access_lexeme(text, text);

ALTER TABLE search_documents ALTER COLUMN document SET STORAGE EXTERNAL;
ALTER TABLE search_documents SET (toast_tuple_target = 128);

-- Rebuild every document in the new form (the owner sees all rows).
TRUNCATE search_documents;
INSERT INTO search_documents (memory_id, workspace_id, owner_id, context_key, kind, updated_at, document)
SELECT id, workspace_id, owner_id, context_key, kind, updated_at,
       scoped_tsvector(workspace_id, search_vector)
FROM memories;
