-- The schema files applied so far, with their checksums.
SELECT name, checksum FROM schema_files
