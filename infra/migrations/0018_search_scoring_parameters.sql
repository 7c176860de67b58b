-- Search scoring without per-record array lookups.
--
-- search_fetch() (0013) read each query unit's tsquery, phrase bound and idf out of
-- its array parameters inside every record's score: three subscripts per unit, each
-- walking the array's variable-length elements, for every fetched record. They are
-- now read once per call. Replaying every segment statement of the 1,000,000-record
-- benchmark's 3- and 8-word questions, results identical: 5.60 -> 5.01 and 5.98 ->
-- 5.41 ms a question in one run, 5.11 -> 4.95 and 8.64 -> 6.79 ms in another
-- (docs/performance.md). Same signature, rows and scores as in 0013.

CREATE OR REPLACE FUNCTION search_fetch(p_probe tsquery, p_filter tsquery, p_excluded tsquery,
                             p_workspace uuid, p_owners uuid[], p_contexts text[],
                             p_kinds text[], p_queries tsquery[],
                             p_idfs double precision[], p_bounds tsquery[],
                             p_now timestamptz, p_others tsquery)
RETURNS TABLE (memory_id uuid, score double precision)
LANGUAGE sql STABLE
AS $$
    SELECT d.memory_id,
           CASE WHEN p_others IS NULL OR d.terms @@ p_others THEN
           memory.search_prior(d.updated_at, p_now)
           + CASE WHEN d.terms @@ u.q1 AND (u.b1 IS NULL OR d.terms @@ u.b1)
                  THEN u.i1 * memory.search_bm25(memory.search_tf(d.terms, u.q1), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ u.q2 AND (u.b2 IS NULL OR d.terms @@ u.b2)
                  THEN u.i2 * memory.search_bm25(memory.search_tf(d.terms, u.q2), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ u.q3 AND (u.b3 IS NULL OR d.terms @@ u.b3)
                  THEN u.i3 * memory.search_bm25(memory.search_tf(d.terms, u.q3), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ u.q4 AND (u.b4 IS NULL OR d.terms @@ u.b4)
                  THEN u.i4 * memory.search_bm25(memory.search_tf(d.terms, u.q4), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ u.q5 AND (u.b5 IS NULL OR d.terms @@ u.b5)
                  THEN u.i5 * memory.search_bm25(memory.search_tf(d.terms, u.q5), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ u.q6 AND (u.b6 IS NULL OR d.terms @@ u.b6)
                  THEN u.i6 * memory.search_bm25(memory.search_tf(d.terms, u.q6), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ u.q7 AND (u.b7 IS NULL OR d.terms @@ u.b7)
                  THEN u.i7 * memory.search_bm25(memory.search_tf(d.terms, u.q7), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ u.q8 AND (u.b8 IS NULL OR d.terms @@ u.b8)
                  THEN u.i8 * memory.search_bm25(memory.search_tf(d.terms, u.q8), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ u.q9 AND (u.b9 IS NULL OR d.terms @@ u.b9)
                  THEN u.i9 * memory.search_bm25(memory.search_tf(d.terms, u.q9), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ u.q10 AND (u.b10 IS NULL OR d.terms @@ u.b10)
                  THEN u.i10 * memory.search_bm25(memory.search_tf(d.terms, u.q10), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ u.q11 AND (u.b11 IS NULL OR d.terms @@ u.b11)
                  THEN u.i11 * memory.search_bm25(memory.search_tf(d.terms, u.q11), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ u.q12 AND (u.b12 IS NULL OR d.terms @@ u.b12)
                  THEN u.i12 * memory.search_bm25(memory.search_tf(d.terms, u.q12), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ u.q13 AND (u.b13 IS NULL OR d.terms @@ u.b13)
                  THEN u.i13 * memory.search_bm25(memory.search_tf(d.terms, u.q13), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ u.q14 AND (u.b14 IS NULL OR d.terms @@ u.b14)
                  THEN u.i14 * memory.search_bm25(memory.search_tf(d.terms, u.q14), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ u.q15 AND (u.b15 IS NULL OR d.terms @@ u.b15)
                  THEN u.i15 * memory.search_bm25(memory.search_tf(d.terms, u.q15), d.length)
                  ELSE 0 END
           + CASE WHEN d.terms @@ u.q16 AND (u.b16 IS NULL OR d.terms @@ u.b16)
                  THEN u.i16 * memory.search_bm25(memory.search_tf(d.terms, u.q16), d.length)
                  ELSE 0 END
           + CASE WHEN cardinality(p_queries) <= 16 THEN 0 ELSE (
                 SELECT coalesce(sum(u.idf * memory.search_bm25(memory.search_tf(d.terms, u.q),
                                                               d.length)), 0)
                 FROM unnest(p_queries[17:], p_idfs[17:], p_bounds[17:]) AS u (q, idf, bound)
                 WHERE d.terms @@ u.q AND (u.bound IS NULL OR d.terms @@ u.bound)) END
           END
    FROM memory.search_documents AS d
    -- The per-unit parameters, taken out of their arrays once per call rather than
    -- at every record (OFFSET 0 keeps the subquery from being pulled up into the row
    -- expressions).
    CROSS JOIN LATERAL (SELECT
                               p_queries[1] AS q1, p_bounds[1] AS b1, p_idfs[1] AS i1,
                               p_queries[2] AS q2, p_bounds[2] AS b2, p_idfs[2] AS i2,
                               p_queries[3] AS q3, p_bounds[3] AS b3, p_idfs[3] AS i3,
                               p_queries[4] AS q4, p_bounds[4] AS b4, p_idfs[4] AS i4,
                               p_queries[5] AS q5, p_bounds[5] AS b5, p_idfs[5] AS i5,
                               p_queries[6] AS q6, p_bounds[6] AS b6, p_idfs[6] AS i6,
                               p_queries[7] AS q7, p_bounds[7] AS b7, p_idfs[7] AS i7,
                               p_queries[8] AS q8, p_bounds[8] AS b8, p_idfs[8] AS i8,
                               p_queries[9] AS q9, p_bounds[9] AS b9, p_idfs[9] AS i9,
                               p_queries[10] AS q10, p_bounds[10] AS b10, p_idfs[10] AS i10,
                               p_queries[11] AS q11, p_bounds[11] AS b11, p_idfs[11] AS i11,
                               p_queries[12] AS q12, p_bounds[12] AS b12, p_idfs[12] AS i12,
                               p_queries[13] AS q13, p_bounds[13] AS b13, p_idfs[13] AS i13,
                               p_queries[14] AS q14, p_bounds[14] AS b14, p_idfs[14] AS i14,
                               p_queries[15] AS q15, p_bounds[15] AS b15, p_idfs[15] AS i15,
                               p_queries[16] AS q16, p_bounds[16] AS b16, p_idfs[16] AS i16
                        OFFSET 0) AS u
    WHERE memory.search_index_document(
              memory.search_view_cell(d.workspace_id, d.owner_id, d.context_key),
              d.terms, d.length) @@ p_probe
      AND d.workspace_id = p_workspace AND d.owner_id = ANY (p_owners)
      AND d.context_key = ANY (p_contexts) AND d.kind = ANY (p_kinds)
      AND (p_filter IS NULL OR d.terms @@ p_filter)
      AND (p_excluded IS NULL OR NOT d.terms @@ p_excluded)
$$;
