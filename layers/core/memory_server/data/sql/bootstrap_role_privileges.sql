-- A role's privileged attributes: each column is one that must be false.
SELECT rolsuper, rolcreatedb, rolcreaterole, rolbypassrls, rolreplication
FROM pg_roles
WHERE rolname = %(role)s
