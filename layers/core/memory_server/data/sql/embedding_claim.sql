-- Queued records to embed, locked for this transaction (see infra/schema/65_search_vectors.sql).
SELECT memory_id, content, content_hash FROM memory.embedding_claim(%(limit)s, %(attempts)s)
