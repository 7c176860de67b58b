-- Revoke a live agent key of this workspace (infra/schema/70_admin.sql); NULL when none.
SELECT memory.admin_revoke_agent_key(%(client_id)s) AS principal_id
