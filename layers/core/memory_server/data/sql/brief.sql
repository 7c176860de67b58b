-- The briefing in one statement (memory.brief, infra/schema/45_reads.sql): pinned
-- records with the head of their content, recent changes with their writer's handle
-- and kind, skills; one row each, named by section, in order; each section's size is
-- limits.BRIEF_*.
SELECT section, id, owner_id, context_key, kind, path, title, revision, updated_at, content,
       cut, updated_by, updated_by_kind
FROM memory.brief(%(workspace_id)s, %(owners)s, %(contexts)s, %(since)s)
