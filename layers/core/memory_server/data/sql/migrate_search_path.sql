-- Migrations name their objects unqualified: they are created in the memory schema.
SET LOCAL search_path = memory
