-- Nobody but the owner creates objects anywhere the runtime role looks.
REVOKE CREATE ON SCHEMA public FROM PUBLIC
