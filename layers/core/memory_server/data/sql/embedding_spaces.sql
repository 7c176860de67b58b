-- The (model, dimensions) pairs of the stored vectors (the start-up check).
SELECT model, dimensions FROM memory.embedding_spaces()
