-- The records of the caller's view nearest to a query vector (see
-- infra/schema/65_search_vectors.sql).
SELECT memory_id, similarity
FROM memory.search_by_meaning(%(vector)s, %(model)s, %(owners)s, %(kinds)s, %(limit)s,
                              %(index_candidates)s)
