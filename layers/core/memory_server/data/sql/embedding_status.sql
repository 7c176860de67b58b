-- The embeddings by model, and what waits in the queue.
SELECT model, dimensions, records, queued FROM memory.embedding_status()
