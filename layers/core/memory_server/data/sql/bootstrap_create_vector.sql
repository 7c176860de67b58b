-- pgvector, for the embeddings of hybrid recall (migration 0005). An extension only an
-- administrator may create (a superuser locally, rds_superuser on Aurora); in public,
-- whose objects every role may use, so the schema's functions name it public.vector.
CREATE EXTENSION IF NOT EXISTS vector SCHEMA public
