-- Whether the memory feature is on in the caller's workspace.
SELECT w.memory_enabled
FROM memory.workspaces AS w
WHERE w.id = %(workspace_id)s
