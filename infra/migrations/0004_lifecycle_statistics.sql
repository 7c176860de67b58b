-- Statistics for the columns 0002_lifecycle.sql added. A column added with a default
-- has none until autovacuum next analyzes the table, which a large table may not do
-- for a long time; without them the planner took about one record in six for pinned
-- and read the briefing's pinned records through the address index, 0.7 s at 200,000
-- records in view, where the partial index memories_pinned holds only the few pinned
-- (bench/results/store-1m-run11.json).
ANALYZE memories (pinned, expires_at);
ANALYZE search_documents (expires_at);
