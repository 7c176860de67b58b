-- The schema version (memory_server.data.migrate.require_version checks it at start).
SELECT memory.schema_version() AS version
