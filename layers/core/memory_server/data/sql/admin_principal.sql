-- The principal for a subject, if it exists and may join this workspace (admins add
-- known identities only: infra/schema/70_admin.sql). No row: unknown or not
-- joinable, alike.
SELECT id, kind FROM memory.admin_joinable_principal(%(subject)s)
