-- Revoke a live agent key of this workspace (migration 0007); NULL when none.
SELECT memory.admin_revoke_agent_key(%(client_id)s) AS principal_id
