-- Unregister a context (its members go with it); false: it was not registered
-- (memory.admin_unregister_context, infra/schema/70_admin.sql).
SELECT memory.admin_unregister_context(%(context_key)s) AS removed
