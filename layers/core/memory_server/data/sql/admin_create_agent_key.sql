-- A new agent key's principal, bound to this workspace (migration 0007).
SELECT memory.admin_create_agent_key(%(client_id)s, %(name)s, %(scopes)s) AS principal_id
