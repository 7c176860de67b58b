-- Handles unique among the members of a workspace (people and agent keys alike), so
-- that provenance says truthfully who wrote a record (docs/contract.md, "Provenance").
--
-- handle_key: the member's handle folded for comparison (memory.handle_key,
-- infra/schema/25_handles.sql: NFKC, case folding, look-alike letters), kept by a
-- trigger from principals.handle. The unique index over it is an expression of that
-- schema file's state (which members are flagged), so it is made there too, after the
-- keys are filled.
-- handle_conflict: a member whose folded handle another member of the workspace
-- already held when this version was installed. Existing duplicates do not fail the
-- upgrade: every record and revision stays, both members are flagged, the admin API
-- and memoryctl show the flag, and the flag goes when one of them is renamed.
ALTER TABLE memberships
    ADD COLUMN handle_key text COLLATE "C",
    ADD COLUMN handle_conflict boolean NOT NULL DEFAULT false;
