-- Create a record unless its address already resolves to one the caller can see from
-- the listening context (contexts nearest first): created, or the revision the
-- address is taken at. No row back means the address was taken concurrently.
-- One statement with cached plans (memory.create_record_unless_taken,
-- infra/schema/40_writes.sql); the rows are written by memory.create_record.
SELECT id, revision, context_key, created
FROM memory.create_record_unless_taken(%(workspace_id)s, %(owner_id)s, %(contexts)s,
                                       %(context_key)s, %(kind)s, %(path)s, %(title)s,
                                       %(body)s, %(principal_id)s, %(source)s,
                                       %(operation)s, %(request_id)s, %(uri)s,
                                       %(expires_at)s, %(pinned)s)
