-- Schema files that are no longer files leave the ledger.
DELETE FROM schema_files WHERE NOT name = ANY (%(names)s)
