-- Every function of the schema and its number of overloads: each must be one a schema
-- file defines, as many times.
SELECT p.proname AS name, count(*) AS overloads
FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace
WHERE n.nspname = 'memory'
GROUP BY p.proname
