-- Delete the vectors of every space but the embedder's (make dev, on a model change):
-- the service then starts at once, and the backfill embeds those records again.
DELETE FROM memory.search_embeddings
WHERE model <> %(model)s OR dimensions <> %(dimensions)s
