-- Delete a workspace and everything in it: records, revisions, memberships, contexts,
-- idempotency keys, audit rows and its agent keys' principals all cascade; the
-- search index follows its records (trigger).
DELETE FROM memory.workspaces WHERE id = %(workspace_id)s
