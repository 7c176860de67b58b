-- Contexts that hold records, with counts (migration 0007; admin grant only).
SELECT context_key, records FROM memory.admin_context_usage()
