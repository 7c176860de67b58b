-- Memory that stays current: a record's expiry and its pin, corrections and expiry in
-- history (docs/contract.md, "Memory that stays current").
--
-- expires_at: from that time on the record is outside every view (the predicate is in
-- infra/schema/10_visibility.sql) and the sweeper purges it (memory.expire_records,
-- infra/schema/40_writes.sql). search_documents carries a copy so that the search
-- leaves expired records out before ranking.
ALTER TABLE memories
    ADD COLUMN expires_at timestamptz,
    ADD COLUMN pinned boolean NOT NULL DEFAULT false;
ALTER TABLE search_documents ADD COLUMN expires_at timestamptz;

-- The sweeper's walk, oldest expiry first; only records that expire are in it.
CREATE INDEX memories_expiry ON memories (expires_at) WHERE expires_at IS NOT NULL;
-- The briefing: pinned records, and the latest changes of a workspace, newest first.
CREATE INDEX memories_pinned ON memories (workspace_id, updated_at DESC) WHERE pinned;
CREATE INDEX memories_recent ON memories (workspace_id, updated_at DESC);

ALTER TABLE revisions DROP CONSTRAINT revisions_operation_check;
ALTER TABLE revisions ADD CONSTRAINT revisions_operation_check
    CHECK (operation IN ('create', 'replace', 'merge', 'supersede', 'move', 'delete', 'expire'));

GRANT UPDATE (expires_at, pinned) ON memories TO memory_runtime;
