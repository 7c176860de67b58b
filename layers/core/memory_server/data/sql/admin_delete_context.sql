-- Delete a private context wholesale: its records purged as deletes purge them, its
-- members gone (memory.admin_delete_context, infra/schema/70_admin.sql). No row: not a
-- private context or a DM.
SELECT records_deleted, revisions_purged
FROM memory.admin_delete_context(%(context_key)s, %(request_id)s)
