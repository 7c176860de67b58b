-- The one authorization predicate, as SQL. Policies, the search function and the
-- caller-resolution function all use these; the application's own queries pass the
-- same values as parameters (the first wall) and RLS enforces them again (the second).
--
-- Settings are transaction-local (set_config(..., true)); an unset or reset setting
-- reads as NULL, so a session without them sees nothing.

CREATE FUNCTION setting_uuid(name text) RETURNS uuid
LANGUAGE sql STABLE PARALLEL SAFE
RETURN NULLIF(current_setting(name, true), '')::uuid;

CREATE FUNCTION setting_array(name text) RETURNS text[]
LANGUAGE sql STABLE PARALLEL SAFE
RETURN NULLIF(current_setting(name, true), '')::text[];

-- May the current request see a record with these coordinates?
CREATE FUNCTION can_see(ws uuid, owner uuid, ctx text) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
RETURN ws = setting_uuid('app.workspace_id')
   AND ctx = ANY (setting_array('app.contexts'))
   AND 'read' = ANY (setting_array('app.grants'))
   AND (owner = '00000000-0000-0000-0000-000000000000'
        OR (owner = setting_uuid('app.principal_id')
            AND current_setting('app.personal', true) = 'on'));

-- May the current request create or change a record with these coordinates?
CREATE FUNCTION can_write(ws uuid, owner uuid, ctx text) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
RETURN ws = setting_uuid('app.workspace_id')
   AND ctx = ANY (setting_array('app.contexts'))
   AND ((owner = '00000000-0000-0000-0000-000000000000'
         AND 'write:shared' = ANY (setting_array('app.grants')))
        OR (owner = setting_uuid('app.principal_id')
            AND current_setting('app.personal', true) = 'on'
            AND 'write:personal' = ANY (setting_array('app.grants'))));

CREATE FUNCTION can_delete(ws uuid, owner uuid, ctx text) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
RETURN can_write(ws, owner, ctx) AND 'delete' = ANY (setting_array('app.grants'));

CREATE FUNCTION in_workspace(ws uuid) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
RETURN ws = setting_uuid('app.workspace_id');

CREATE FUNCTION is_admin(ws uuid) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
RETURN ws = setting_uuid('app.workspace_id') AND 'admin' = ANY (setting_array('app.grants'));
