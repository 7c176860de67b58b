"""Hosted sign-in: the Lambda authorizer, RFC 8414 discovery, RFC 7591 registration and
the management of user-pool app clients (docs/contract.md §1, §2; docs/deploy.md).

- :mod:`.verify`: a user pool access token, checked against the pool's cached key set;
- :mod:`.authorizer`: the HTTP API's Lambda REQUEST authorizer (``AuthorizerFunction``);
- :mod:`.registration`: the registration rules and the authorization-server metadata;
- :mod:`.registry`: the sign-in table (registered clients, their last use, rate counters,
  refresh-token families);
- :mod:`.cimd`: Client ID Metadata Documents, fetched safely, validated, cached;
- :mod:`.authorization`: the front door's ``/authorize`` (consent) and ``/authorize/callback``;
- :mod:`.token`: the front door's ``/token`` (document clients, refresh rotation);
- :mod:`.sealed`: the signed values the front door hands out and takes back;
- :mod:`.management`: ``ManagementFunction``, the only code that writes to the user pool.

None of it needs the database: both functions run outside the VPC.
"""
