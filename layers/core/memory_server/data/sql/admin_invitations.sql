-- The workspace's pending invitations (memory.admin_invitations, infra/schema/70_admin.sql).
SELECT id, subject, grants, personal_namespace, invited_by, invited_by_kind, created_at,
       expires_at
FROM memory.admin_invitations()
