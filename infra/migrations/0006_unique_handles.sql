-- Handles unique among the members of a workspace (people and agent keys alike), so
-- that provenance says truthfully who wrote a record (docs/contract.md, "Provenance").
--
-- handle_key: the member's handle folded for comparison (memory.handle_key,
-- infra/schema/25_handles.sql: NFKC, case folding, look-alike letters), kept by a
-- trigger from principals.handle, and filled by that file (empty here: the fold is
-- its function). The unique index leaves flagged members out; NULL keys never clash,
-- so it is made here, before the keys are filled.
-- handle_conflict: a member whose folded handle another member of the workspace
-- already held when this version was installed. Existing duplicates do not fail the
-- upgrade: every record and revision stays, both members are flagged, the admin API
-- and memoryctl show the flag, and the flag goes when one of them is renamed.
ALTER TABLE memberships
    ADD COLUMN handle_key text COLLATE "C",
    ADD COLUMN handle_conflict boolean NOT NULL DEFAULT false;
CREATE UNIQUE INDEX memberships_handle ON memberships (workspace_id, handle_key)
    WHERE NOT handle_conflict;
