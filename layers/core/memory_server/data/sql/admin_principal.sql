-- The principal for a subject, if it exists and may join this workspace (migration
-- 0012: admins no longer create principals). No row: unknown or not joinable, alike.
SELECT id, kind FROM memory.admin_joinable_principal(%(subject)s)
