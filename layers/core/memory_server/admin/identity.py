"""The user pool, as the admin surface needs it: agent keys and erasure sign-out.

``Directory`` is the seam: the admin API and the operator commands take one (or
``None`` when no pool is configured, and then refuse what needs it), so the MCP path
never depends on Cognito. ``CognitoDirectory`` is the boto3 implementation; in
development its client points at moto.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol


class Directory(Protocol):
    def create_agent_client(self, name: str, scopes: Sequence[str]) -> tuple[str, str]:
        """A client-credentials app client with ``scopes``; returns (client id, secret)."""
        ...

    def delete_agent_client(self, client_id: str) -> bool:
        """Delete an app client; False when it was already gone."""
        ...

    def sign_out_and_disable(self, subject: str) -> dict[str, bool]:
        """Revoke a person's refresh tokens and disable them, found by ``sub``."""
        ...


class CognitoDirectory:
    """``Directory`` over a boto3 ``cognito-idp`` client and one user pool."""

    def __init__(self, client: Any, user_pool_id: str) -> None:
        self.client = client
        self.user_pool_id = user_pool_id

    def create_agent_client(self, name: str, scopes: Sequence[str]) -> tuple[str, str]:
        created = self.client.create_user_pool_client(
            UserPoolId=self.user_pool_id,
            ClientName=name,
            GenerateSecret=True,
            AllowedOAuthFlows=["client_credentials"],
            AllowedOAuthScopes=list(scopes),
            AllowedOAuthFlowsUserPoolClient=True,
        )["UserPoolClient"]
        return str(created["ClientId"]), str(created["ClientSecret"])

    def delete_agent_client(self, client_id: str) -> bool:
        try:
            self.client.delete_user_pool_client(UserPoolId=self.user_pool_id, ClientId=client_id)
        except self.client.exceptions.ResourceNotFoundException:
            return False
        return True

    def sign_out_and_disable(self, subject: str) -> dict[str, bool]:
        # Admin* calls take the user name, not the sub: find it by its sub first.
        found = self.client.list_users(
            UserPoolId=self.user_pool_id, Filter=f'sub = "{_quoted(subject)}"', Limit=1
        ).get("Users", [])
        if not found:
            return {"found": False, "signed_out": False, "disabled": False}
        username = found[0]["Username"]
        self.client.admin_user_global_sign_out(UserPoolId=self.user_pool_id, Username=username)
        self.client.admin_disable_user(UserPoolId=self.user_pool_id, Username=username)
        return {"found": True, "signed_out": True, "disabled": True}


def _quoted(value: str) -> str:
    # ListUsers filter strings are double-quoted; a sub never holds these, but a
    # caller-supplied value must not be able to change the filter.
    return value.replace("\\", "\\\\").replace('"', '\\"')
