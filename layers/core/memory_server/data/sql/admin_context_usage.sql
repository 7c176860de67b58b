-- Contexts that hold records, with counts (infra/schema/70_admin.sql; admin grant only).
SELECT context_key, records FROM memory.admin_context_usage()
