SELECT name, checksum FROM schema_migrations
