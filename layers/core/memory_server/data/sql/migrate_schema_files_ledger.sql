-- The ledger of the current-state schema files (infra/schema/): what was applied, with
-- which checksum. Made here, not in a migration, so that it exists before the first
-- migration of a new database has run (the migrations ledger is made the same way).
CREATE TABLE IF NOT EXISTS schema_files (
    name text PRIMARY KEY,
    checksum text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)
