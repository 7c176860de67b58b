-- Withdraw a pending invitation of this workspace; false: none with that id
-- (memory.admin_revoke_invitation, infra/schema/70_admin.sql).
SELECT memory.admin_revoke_invitation(%(invitation_id)s) AS revoked
