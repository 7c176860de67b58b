-- Turn the memory feature on or off (RLS: admin grant in this workspace only).
UPDATE memory.workspaces SET memory_enabled = %(enabled)s
WHERE id = %(workspace_id)s
RETURNING memory_enabled
