"""The user pool, as the admin surface needs it: agent keys and erasure sign-out.

``AgentClients`` is the admin API's seam (one workspace's agent keys) and ``Directory``
the operators' (the pool, across workspaces), or ``None`` when nothing is configured,
and then they refuse what needs it, so the MCP path never depends on Cognito.
``CognitoDirectory`` is the boto3 implementation of the pool (the management
function's, and the operator CLI's; in development its client points at moto).
``LambdaDirectory`` is what the MCP function uses: it holds no Cognito permission and
asks the management function (``MANAGEMENT_FUNCTION``, outside the VPC) instead, which
acts only on agent keys' clients it made for the workspace named.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol

from memory_server.domain.errors import AdminError
from memory_server.domain.limits import SIGNIN_ACCESS_TOKEN_MINUTES, SIGNIN_REFRESH_TOKEN_DAYS


class AgentClients(Protocol):
    """The admin API's seam: agent keys' app clients, always for one workspace."""

    def create_agent_client(
        self, workspace: str, name: str, scopes: Sequence[str], created_by: str
    ) -> tuple[str, str]:
        """A client-credentials app client ``{workspace}.{name}`` with ``scopes``, made
        for ``workspace`` by the principal ``created_by``; returns (client id, secret)."""
        ...

    def delete_agent_client(self, workspace: str, client_id: str) -> bool:
        """Delete an agent key's app client made for ``workspace``; False when it is
        gone, or is not one (any other client is left alone)."""
        ...


class Directory(Protocol):
    """The operator's seam: the user pool itself, across workspaces."""

    def delete_app_client(self, client_id: str) -> bool:
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

    def create_key_client(self, name: str, scopes: Sequence[str]) -> tuple[str, str]:
        """A confidential client-credentials client with ``scopes``: (id, secret)."""
        created = self.client.create_user_pool_client(
            UserPoolId=self.user_pool_id,
            ClientName=name,
            GenerateSecret=True,
            AllowedOAuthFlows=["client_credentials"],
            AllowedOAuthScopes=list(scopes),
            AllowedOAuthFlowsUserPoolClient=True,
        )["UserPoolClient"]
        return str(created["ClientId"]), str(created["ClientSecret"])

    def create_public_client(
        self, name: str, redirect_uris: Sequence[str], scopes: Sequence[str]
    ) -> str:
        """A registered MCP client: public (no secret), authorization code (PKCE is the
        client's), refresh tokens, sign-in with the pool's own users only."""
        created = self.client.create_user_pool_client(
            UserPoolId=self.user_pool_id,
            ClientName=name,
            GenerateSecret=False,
            AllowedOAuthFlows=["code"],
            AllowedOAuthFlowsUserPoolClient=True,
            AllowedOAuthScopes=list(scopes),
            CallbackURLs=list(redirect_uris),
            SupportedIdentityProviders=["COGNITO"],
            ExplicitAuthFlows=["ALLOW_REFRESH_TOKEN_AUTH"],
            PreventUserExistenceErrors="ENABLED",
            EnableTokenRevocation=True,
            AccessTokenValidity=SIGNIN_ACCESS_TOKEN_MINUTES,
            RefreshTokenValidity=SIGNIN_REFRESH_TOKEN_DAYS,
            TokenValidityUnits={"AccessToken": "minutes", "RefreshToken": "days"},
        )["UserPoolClient"]
        return str(created["ClientId"])

    def delete_app_client(self, client_id: str) -> bool:
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


class LambdaDirectory:
    """``AgentClients`` through the management function (``lambda:InvokeFunction``).

    A failed call (the function unreachable, or failing) is an admin 503: nothing was
    committed, and the request may be retried.
    """

    def __init__(self, client: Any, function_name: str) -> None:
        self.client = client
        self.function_name = function_name

    def _call(self, payload: dict[str, Any]) -> dict[str, Any]:
        try:
            response = self.client.invoke(
                FunctionName=self.function_name, Payload=json.dumps(payload).encode()
            )
            answer = json.loads(response["Payload"].read() or b"null")
        except Exception as exc:  # botocore's errors, a closed stream, a bad payload
            raise AdminError(503, "unavailable", "the key service did not answer") from exc
        if response.get("FunctionError") or not isinstance(answer, dict):
            raise AdminError(503, "unavailable", "the key service failed")
        return answer

    def create_agent_client(
        self, workspace: str, name: str, scopes: Sequence[str], created_by: str
    ) -> tuple[str, str]:
        answer = self._call(
            {
                "action": "create_agent_client",
                "workspace": workspace,
                "name": name,
                "scopes": list(scopes),
                "created_by": created_by,
            }
        )
        return str(answer["client_id"]), str(answer["client_secret"])

    def delete_agent_client(self, workspace: str, client_id: str) -> bool:
        answer = self._call(
            {"action": "delete_agent_client", "workspace": workspace, "client_id": client_id}
        )
        return bool(answer["deleted"])
