-- Hybrid recall: an embedding of each record's searchable text, found by meaning
-- beside the words of search_documents. One row per record, made after the write
-- commits (memory_server.operations.embeddings), never inside the caller's latency;
-- until then (or when the embedder is down) the record is found by its words alone.
--
-- The vector column has no fixed dimension, so one table serves every model (MiniLM's
-- 384 locally, Titan's 256/512/1024 deployed); model and dimensions say what made each
-- vector, and a query compares only vectors of the model it embedded with. pgvector
-- 0.6 (the local server) and 0.8 (Aurora) both take this type and the HNSW indexes,
-- one per dimension, partial on it, over the expression that fixes the dimension.
-- content_hash is the SHA-256 of the text embedded: a record whose text changed since
-- is embedded again, and a vector made from an older text is never stored over a newer.
-- Reachable only through the search functions (no privilege for the runtime role).
CREATE TABLE search_embeddings (
    memory_id    uuid PRIMARY KEY REFERENCES search_documents ON DELETE CASCADE,
    model        text COLLATE "C" NOT NULL,
    dimensions   smallint NOT NULL CHECK (dimensions BETWEEN 1 AND 2000),
    content_hash bytea NOT NULL,
    embedding    public.vector NOT NULL CHECK (public.vector_dims(embedding) = dimensions),
    embedded_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX search_embeddings_256 ON search_embeddings
    USING hnsw ((embedding::public.vector(256)) public.vector_cosine_ops) WHERE dimensions = 256;
CREATE INDEX search_embeddings_384 ON search_embeddings
    USING hnsw ((embedding::public.vector(384)) public.vector_cosine_ops) WHERE dimensions = 384;
CREATE INDEX search_embeddings_512 ON search_embeddings
    USING hnsw ((embedding::public.vector(512)) public.vector_cosine_ops) WHERE dimensions = 512;
CREATE INDEX search_embeddings_1024 ON search_embeddings
    USING hnsw ((embedding::public.vector(1024)) public.vector_cosine_ops) WHERE dimensions = 1024;
CREATE INDEX search_embeddings_model ON search_embeddings (model);

-- Records whose embedding is missing or stale, oldest first: filled by a trigger on
-- memories (a create, or a change of what search sees), emptied by the embedder once
-- the vector is stored. Every record of a database upgraded to this version is queued
-- here once, so the embedder backfills them.
-- claimed_at: taken by an embedder then (it holds no lock while the model runs, so a
-- writer of the record never waits for it); a claim older than a minute is taken again.
CREATE TABLE embedding_queue (
    memory_id   uuid PRIMARY KEY REFERENCES search_documents ON DELETE CASCADE,
    queued_at   timestamptz NOT NULL DEFAULT now(),
    claimed_at  timestamptz,
    attempts    integer NOT NULL DEFAULT 0
);
CREATE INDEX embedding_queue_oldest ON embedding_queue (queued_at);
INSERT INTO embedding_queue (memory_id, queued_at)
SELECT memory_id, updated_at FROM search_documents;
