-- The sweeper's rows that EventBridge accepted; the rest stay for the next sweep.
SELECT memory.audit_mark_published(%(ids)s)
