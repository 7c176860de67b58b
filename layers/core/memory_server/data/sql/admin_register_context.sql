-- Register a private channel or a DM with exactly these members, or change a private
-- channel's members (memory.admin_register_context, infra/schema/70_admin.sql: only
-- its members change a private context; a DM's participants are fixed).
SELECT memory.admin_register_context(%(context_key)s, %(members)s::uuid[])
