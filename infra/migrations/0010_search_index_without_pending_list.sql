-- The search index without a pending list: every write inserts its entries directly.
--
-- With fastupdate, a write appends to the GIN pending list and whichever write fills
-- it pays the merge: with the 64 kB limit of migration 0008, one write in ~20 took
-- 5-30 ms (measured on 1M records: writes p50 1.3 / p95 7.3 / p99 12.6 ms), and every
-- search of every workspace scanned the list until then. Without it, writes cost
-- p50 1.0 / p95 1.6 / p99 1.9 ms, steadily, and searches never read a pending list.
ALTER INDEX search_documents_document SET (fastupdate = off);
ALTER INDEX search_documents_document RESET (gin_pending_list_limit);
-- Merge what is pending now (turning fastupdate off leaves it in place).
SELECT gin_clean_pending_list('search_documents_document'::regclass);
