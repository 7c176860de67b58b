-- A request transaction's first statement: the caller's view for row-level security
-- and its deadline. Transaction-local (true), so nothing outlives the transaction on
-- a pooled connection.
SELECT set_config('app.workspace_id', %(workspace_id)s, true),
       set_config('app.principal_id', %(principal_id)s, true),
       set_config('app.grants', %(grants)s, true),
       set_config('app.contexts', %(contexts)s, true),
       set_config('app.personal', %(personal)s, true),
       set_config('statement_timeout', %(timeout)s, true)
