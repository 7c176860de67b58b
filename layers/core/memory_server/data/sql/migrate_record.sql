INSERT INTO schema_migrations (name, checksum) VALUES (%(name)s, %(checksum)s)
