-- A schema file applied in this run, with its checksum.
INSERT INTO schema_files (name, checksum) VALUES (%(name)s, %(checksum)s)
ON CONFLICT (name) DO UPDATE SET checksum = EXCLUDED.checksum, applied_at = now()
