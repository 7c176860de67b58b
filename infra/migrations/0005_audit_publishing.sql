-- Audit publishing. The endpoint publishes its own request's outbox rows after
-- commit (as the runtime role, inside its workspace). The scheduled sweeper works
-- across workspaces, so it gets its own role that can do exactly two things: claim
-- unpublished rows (locked, so a row is never published twice concurrently) and mark
-- them published. Neither function returns any memory content.

CREATE FUNCTION audit_claim_unpublished(p_limit integer, p_min_age interval)
RETURNS TABLE (id bigint, workspace text, memory_id uuid, uri text, operation text,
               revision integer, writer_id uuid, source text, request_id text,
               occurred_at timestamptz)
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
    SELECT a.id, w.slug, a.memory_id, a.uri, a.operation, a.revision, a.writer_id, a.source,
           a.request_id, a.occurred_at
    FROM audit_outbox AS a
    JOIN workspaces AS w ON w.id = a.workspace_id
    WHERE a.published_at IS NULL
      AND a.occurred_at <= now() - p_min_age
    ORDER BY a.id
    LIMIT p_limit
    FOR UPDATE OF a SKIP LOCKED
$$;

CREATE FUNCTION audit_mark_published(p_ids bigint[]) RETURNS integer
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
    WITH marked AS (
        UPDATE audit_outbox SET published_at = now()
        WHERE id = ANY (p_ids) AND published_at IS NULL
        RETURNING 1
    )
    SELECT count(*)::integer FROM marked
$$;

REVOKE ALL ON FUNCTION audit_claim_unpublished(integer, interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION audit_mark_published(bigint[]) FROM PUBLIC;
GRANT USAGE ON SCHEMA memory TO memory_auditor;
GRANT EXECUTE ON FUNCTION audit_claim_unpublished(integer, interval) TO memory_auditor;
GRANT EXECUTE ON FUNCTION audit_mark_published(bigint[]) TO memory_auditor;
