-- Claim a key for this (caller, listening context, target). A concurrent claimant
-- waits here until the first transaction ends, then sees its committed row: merges
-- happen exactly once.
INSERT INTO memory.idempotency_keys
    (workspace_id, principal_id, context_key, target, idempotency_key, request_hash)
VALUES (%(workspace_id)s, %(principal_id)s, %(context_key)s, %(target)s, %(key)s,
        %(request_hash)s)
ON CONFLICT DO NOTHING
RETURNING request_hash
