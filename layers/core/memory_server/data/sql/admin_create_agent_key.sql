-- A new agent key's principal, bound to this workspace (memory.admin_create_agent_key, infra/schema/70_admin.sql).
SELECT memory.admin_create_agent_key(%(client_id)s, %(name)s, %(scopes)s) AS principal_id
