-- The least a statement can be: bench/store_bench.py times Database.read's own cost
-- (pool, BEGIN, settings, one statement, COMMIT) with it.
SELECT 1
