-- The publishing transaction (claim, PutEvents, mark) commits without waiting for its
-- WAL flush: losing the mark in a crash only means the sweeper sends those events
-- again under the same event_id (delivery is at least once anyway). The change itself
-- committed durably, in its own transaction, before the response.
SELECT set_config('synchronous_commit', 'off', true)
