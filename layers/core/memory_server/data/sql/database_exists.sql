-- Does a database of this name exist on the server? (provisioning)
SELECT 1 AS found FROM pg_database WHERE datname = %(database)s
