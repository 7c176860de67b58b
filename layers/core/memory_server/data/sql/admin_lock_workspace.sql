-- Serialise admin changes of one workspace (the last-admin rule reads, then writes).
SELECT w.memory_enabled
FROM memory.workspaces AS w
WHERE w.id = %(workspace_id)s
FOR UPDATE
