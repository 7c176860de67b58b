-- The schema version: the number of the newest migration applied (0004_x.sql: 4).
-- The service reads it at start and refuses a database that is not at the version it
-- serves (memory_server.data.migrate.require_version). The runtime role cannot read
-- the migrator's ledger; this answers only the one number.
--
-- Current state, re-runnable (applied by memory_server/migrate.py after the numbered
-- migrations).

CREATE OR REPLACE FUNCTION schema_version()
RETURNS integer
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
    SELECT max(substring(name FROM '^[0-9]{4}')::integer) FROM schema_migrations
$$;

REVOKE ALL ON FUNCTION schema_version() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION schema_version() TO memory_runtime;
