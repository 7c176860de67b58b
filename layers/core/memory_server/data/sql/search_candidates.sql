-- The best records of the caller's view for a parsed query, exactly scored, each with
-- the query's full score (see infra/schema/60_search.sql).
SELECT memory_id, score, full_score
FROM memory.search_candidates(%(words)s, %(phrases)s, %(excluded)s, %(owners)s, %(kinds)s,
                              %(limit)s, %(budget)s, %(score_budget)s)
