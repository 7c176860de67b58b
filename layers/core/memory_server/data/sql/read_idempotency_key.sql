SELECT request_hash, result
FROM memory.idempotency_keys
WHERE workspace_id = %(workspace_id)s AND principal_id = %(principal_id)s
  AND context_key = %(context_key)s
  AND target = %(target)s AND idempotency_key = %(key)s
