-- Ranked candidate ids from the narrow search index (see migration 0004).
SELECT memory_id, score
FROM memory.search_candidates(%(query)s, %(owners)s, %(kinds)s, %(window)s, %(limit)s)
