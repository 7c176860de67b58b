-- Unique handles: no two members of a workspace (people and agent keys alike) show
-- the same handle in provenance, compared as memory.handle_key folds them. The rule
-- is the database's, on every path (an invitee's accept, an admin's agent key, an
-- operator's membership): memberships.handle_key is set here from the principal's
-- handle, and the unique index memberships_handle (0006_unique_handles.sql) refuses a
-- second member with the same key (the admin API answers 409 conflict,
-- memory_server.data.pool).
--
-- Current state, re-runnable (applied by memory_server/migrate.py after the numbered
-- migrations; the columns are infra/migrations/0006_unique_handles.sql's).

-- The comparison key of a handle:
-- 1. Unicode NFKC, which folds compatibility forms (fullwidth "ａｌｉｃｅ", ligatures,
--    superscripts) into their plain letters;
-- 2. lower case (ASCII always; other letters as the database's locale lowers them:
--    a server made with --no-locale, as the local one, lowers ASCII only, so step 4
--    names the capital look-alikes too);
-- 3. invisible format characters removed (zero-width space, joiners, word joiner,
--    byte order mark), and runs of white space made one space, trimmed;
-- 4. the common look-alikes of Latin letters from Cyrillic and Greek, small and
--    capital, made the small Latin letter:
--    Cyrillic а в е к м н о р с т у х ѕ і ј ԁ ԛ ԝ -> a b e k m h o p c t y x s i j d q w,
--    Greek α β ε η ι κ μ ν ο ρ τ υ χ ζ -> a b e h i k m n o p t u x z, Latin dotless ı -> i
--    (Greek ν, which looks like v, is taken for the capital Ν's N).
-- A small table, not Unicode's whole confusables list: it covers the letters that pass
-- for Latin at a glance in a handle; a change here re-keys every member on the next
-- upgrade (duplicates it makes are flagged, as the upgrade to version 6 flags them).
CREATE OR REPLACE FUNCTION handle_key(p_handle text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SET search_path = memory, pg_temp
AS $$
    SELECT translate(
        btrim(regexp_replace(
            regexp_replace(lower(normalize(p_handle, NFKC)),
                           '[\u00AD\u200B-\u200F\u2060-\u2064\uFEFF]', '', 'g'),
            '\s+', ' ', 'g')),
        'авекмнорстухѕіјԁԛԝαβεηικμνορτυχζı'
        'АВЕКМНОРСТУХЅІЈԀԚԜΑΒΕΗΙΚΜΝΟΡΤΥΧΖ',
        'abekmhopctyxsijdqwabehikmnoptuxzi'
        'abekmhopctyxsijdqwabehikmnoptuxz')
$$;
REVOKE ALL ON FUNCTION handle_key(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION handle_key(text) TO memory_runtime;

-- A membership's key comes from its principal's handle, whatever the inserting role
-- wrote; a new member is never flagged (only the upgrade that found duplicates flags),
-- and is refused too where flagged members (outside the index) hold its key. Changes
-- of a workspace's members take its row lock first, so this check does not race.
CREATE OR REPLACE FUNCTION membership_handle_key() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
BEGIN
    NEW.handle_key := (SELECT handle_key(p.handle) FROM principals AS p
                       WHERE p.id = NEW.principal_id);
    IF TG_OP = 'INSERT' OR NEW.principal_id <> OLD.principal_id THEN
        NEW.handle_conflict := false;
        IF EXISTS (SELECT 1 FROM memberships AS o
                   WHERE o.workspace_id = NEW.workspace_id AND o.handle_key = NEW.handle_key
                     AND o.principal_id <> NEW.principal_id AND o.handle_conflict) THEN
            RAISE EXCEPTION 'the handle is taken by another member of this workspace'
                USING ERRCODE = 'unique_violation', CONSTRAINT = 'memberships_handle';
        END IF;
    END IF;
    RETURN NEW;
END
$$;
REVOKE ALL ON FUNCTION membership_handle_key() FROM PUBLIC;
CREATE OR REPLACE TRIGGER memberships_handle_key
    BEFORE INSERT OR UPDATE OF workspace_id, principal_id, handle_key, handle_conflict
    ON memberships FOR EACH ROW EXECUTE FUNCTION membership_handle_key();

-- A renamed principal (the operator's change) is re-keyed in every workspace it is in:
-- refused where another member holds the new key; its flag goes, and so does the flag
-- of a member it shared a key with and no longer does.
CREATE OR REPLACE FUNCTION principal_renamed() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
BEGIN
    UPDATE memberships AS m SET handle_key = handle_key(NEW.handle)
    WHERE m.principal_id = NEW.id;
    UPDATE memberships AS m SET handle_conflict = false
    WHERE m.handle_conflict
      AND m.workspace_id IN (SELECT o.workspace_id FROM memberships AS o
                             WHERE o.principal_id = NEW.id)
      AND NOT EXISTS (SELECT 1 FROM memberships AS o
                      WHERE o.workspace_id = m.workspace_id AND o.handle_key = m.handle_key
                        AND o.principal_id <> m.principal_id);
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION principal_renamed() FROM PUBLIC;
CREATE OR REPLACE TRIGGER principals_renamed AFTER UPDATE OF handle ON principals
    FOR EACH ROW WHEN (OLD.handle IS DISTINCT FROM NEW.handle)
    EXECUTE FUNCTION principal_renamed();

-- Keys of every membership, as this file folds them: first the members that share a
-- folded handle with another member are flagged (so the unique index of
-- 0006_unique_handles.sql leaves them out; on the upgrade to version 6, and again if a
-- change of the fold makes two keys equal), then every key is set. The flagged stay
-- members with all their records and history; the admin API's member list and
-- memoryctl show them until one of them is renamed.
UPDATE memberships AS m SET handle_conflict = true
FROM principals AS p
WHERE p.id = m.principal_id AND NOT m.handle_conflict
  AND EXISTS (SELECT 1 FROM memberships AS o JOIN principals AS q ON q.id = o.principal_id
              WHERE o.workspace_id = m.workspace_id AND o.principal_id <> m.principal_id
                AND handle_key(q.handle) = handle_key(p.handle));
UPDATE memberships AS m SET handle_key = handle_key(p.handle)
FROM principals AS p
WHERE p.id = m.principal_id AND m.handle_key IS DISTINCT FROM handle_key(p.handle);
