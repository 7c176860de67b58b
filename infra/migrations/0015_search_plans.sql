-- Search plans that do not depend on how full the tables looked.
--
-- search_candidates() plans its statements generically, once per session (0013): the
-- GIN index is the only way to answer its probes, so the plan should not depend on
-- the values. Two measured exceptions (docs/performance.md):
--
-- * A plan cached while a new database's tables still looked empty (before their
--   first ANALYZE) scanned search_documents sequentially and computed the index
--   expression of every document: 370 ms a question once 1,200 records had been
--   written in the same session. The function may no longer scan any table
--   sequentially.
-- * The generic plan of the statistics statement read a small workspace's statistics
--   whole through the primary key's first column (1.7 ms of a 3.7 ms call on the
--   recall-quality set, 2,060 records). It is now planned for each call's values
--   (0.3 ms there; on the 1,000,000-record corpus, where the generic plan already
--   used the whole key, planning adds about 0.3 ms).
ALTER FUNCTION search_candidates(text, text[], text[], uuid[], text[], integer, integer, integer)
    SET enable_seqscan = off;

-- Same signature and rows as in 0013; the statement is now run through EXECUTE, so it
-- is planned with the call's values (the function no longer inlines into its caller).
CREATE OR REPLACE FUNCTION search_view_statistics(p_workspace uuid, p_owners uuid[],
                                                  p_contexts text[], p_lexemes text[])
RETURNS TABLE (lexeme text, documents bigint)
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    RETURN QUERY EXECUTE
        'SELECT s.lexeme, sum(s.documents)::bigint
         FROM memory.search_statistics AS s
         WHERE s.workspace_id = $1 AND s.owner_id = ANY ($2)
           AND s.context_key = ANY ($3) AND s.lexeme = ANY ($4)
         GROUP BY s.lexeme'
        USING p_workspace, p_owners, p_contexts, p_lexemes;
END
$$;
