-- How long the claimable queued records have waited (see infra/schema/65_search_vectors.sql).
SELECT oldest, newest FROM memory.embedding_queue_ages(%(attempts)s)
