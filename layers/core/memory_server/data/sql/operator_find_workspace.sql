-- One workspace by slug, locked for the operator's change (no row: there is none).
SELECT w.id, w.slug, w.memory_enabled
FROM memory.workspaces AS w
WHERE w.slug = %(slug)s
FOR UPDATE
