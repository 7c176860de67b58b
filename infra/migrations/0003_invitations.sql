-- Invitations, and private contexts changed only through the admin functions.
--
-- An admin no longer adds a person (or another workspace's service) by subject: it
-- invites the subject, and the membership exists only once that identity accepts with
-- its own token. Any subject can be invited, known or not, so the admin API answers
-- alike for unknown, foreign and known identities (it is no oracle). A pending
-- invitation grants nothing: caller resolution reads memberships only.
--
-- The table has no row-level security and the runtime role holds no privilege on it:
-- it is reached only through the SECURITY DEFINER functions of
-- infra/schema/70_admin.sql (an admin's invite, list and revoke, each checking the
-- admin grant; the invitee's accept), like search_documents through search.
CREATE TABLE invitations (
    id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id       uuid NOT NULL REFERENCES workspaces ON DELETE CASCADE,
    subject            text NOT NULL,
    grants             text[] NOT NULL
                       CHECK (grants <@ ARRAY['read', 'write:personal', 'write:shared',
                                              'delete', 'admin']::text[]),
    -- A service's personal namespace when it joins (people always have one); NULL: none
    -- asked for.
    personal_namespace boolean,
    invited_by         uuid NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT now(),
    expires_at         timestamptz NOT NULL,
    -- One pending invitation per subject and workspace: inviting again replaces it.
    CONSTRAINT invitations_one_per_subject UNIQUE (workspace_id, subject),
    CONSTRAINT invitations_write_needs_read CHECK (
        'read' = ANY (grants)
        OR NOT grants && ARRAY['write:personal', 'write:shared', 'delete']::text[])
);
-- Erasure removes a person's pending invitations in every workspace.
CREATE INDEX invitations_subject ON invitations (subject);

-- Registering, changing, unregistering and deleting a private channel or a DM go
-- through admin_register_context, admin_unregister_context and admin_delete_context
-- (infra/schema/70_admin.sql), which enforce who may change a private context; the
-- runtime role may no longer write the registry itself (its policies refuse it too).
REVOKE INSERT, DELETE ON contexts, context_members FROM memory_runtime;
REVOKE UPDATE (private) ON contexts FROM memory_runtime;
