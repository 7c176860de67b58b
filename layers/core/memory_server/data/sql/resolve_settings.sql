-- Caller resolution runs in a read-only transaction of its own, under the call's
-- deadline (transaction-local, like every request setting).
SELECT set_config('statement_timeout', %(timeout)s, true)
