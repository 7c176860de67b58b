"""The first idempotency layer: Powertools on DynamoDB, in front of PostgreSQL's.

It absorbs concurrent duplicates and replays a stored response without touching the
database, but only after the checks a first call passes (``check_remember``), and
only to the same caller in the same listening context. The guarantee itself stays in
PostgreSQL (the key and result commit with the change), so if DynamoDB fails the
call goes straight to the database and still cannot merge twice. Why both layers,
what each does when the other fails, and what each costs:
docs/store.md#why-memory_remember-has-two-idempotency-layers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from memory_server.domain.arguments import RememberArgs
from memory_server.domain.caller import Caller
from memory_server.domain.deadline import Deadline
from memory_server.domain.errors import ToolError
from memory_server.operations.memory_remember import check_remember

logger = logging.getLogger(__name__)
# memory_remember bound to the store: (caller, arguments, deadline) -> result.
Remember = Callable[[Caller, RememberArgs, Deadline], dict[str, Any]]


def _mark_replayed(response: Any, _record: Any) -> Any:
    return {**response, "replayed": True} if isinstance(response, dict) else response


def request_key(caller: Caller, args: RememberArgs) -> str:
    """The DynamoDB key: workspace, principal, listening context, target and the
    caller's key (the database key's scope, so the two layers replay alike)."""
    return "|".join(
        [
            str(caller.workspace_id),
            str(caller.principal_id),
            caller.context.key,
            args.uri,
            args.idempotency_key,
        ]
    )


class DynamoDbIdempotency:
    """Powertools idempotency on a DynamoDB table, wrapped around ``memory_remember``.

    The payload validated on replay is the whole argument set, so the same key with
    different arguments is ``idempotency_key_reused``.
    """

    def __init__(self, table_name: str, client: Any = None) -> None:
        # Imported here: boto3 and Powertools idempotency cost ~0.2 s, paid only by
        # deployments that configure the table.
        from aws_lambda_powertools.utilities.idempotency import (
            DynamoDBPersistenceLayer,
            IdempotencyConfig,
        )

        self.persistence = DynamoDBPersistenceLayer(table_name=table_name, boto3_client=client)
        self.config = IdempotencyConfig(
            event_key_jmespath="key",
            payload_validation_jmespath="args",
            raise_on_no_idempotency_key=True,
            expires_after_seconds=24 * 3600,
            response_hook=_mark_replayed,  # type: ignore[arg-type]
        )

    def register(self, lambda_context: Any) -> None:
        """Per invocation: an in-progress record expires with the invocation, not later."""
        if hasattr(lambda_context, "get_remaining_time_in_millis"):
            self.config.register_lambda_context(lambda_context)

    def guard(self, remember: Remember) -> Remember:
        from aws_lambda_powertools.utilities.idempotency import idempotent_function
        from aws_lambda_powertools.utilities.idempotency.exceptions import (
            IdempotencyAlreadyInProgressError,
            IdempotencyPersistenceLayerError,
            IdempotencyValidationError,
        )

        def in_database(
            request: dict[str, Any], caller: Caller, deadline: Deadline
        ) -> dict[str, Any]:
            return remember(caller, RememberArgs(**request["args"]), deadline)

        guarded = idempotent_function(
            in_database,
            data_keyword_argument="request",
            persistence_store=self.persistence,
            config=self.config,
        )

        def call(caller: Caller, args: RememberArgs, deadline: Deadline) -> dict[str, Any]:
            # A replay passes the same checks as a first call (grants, namespace,
            # arguments) before any stored answer is looked up.
            check_remember(caller, args)
            # Only the arguments sent: an absent expires_at (leave the expiry) and a null
            # one (remove it) are different requests, and must stay so in the database.
            request = {
                "key": request_key(caller, args),
                "args": args.model_dump(exclude_unset=True),
            }
            try:
                return dict(guarded(request=request, caller=caller, deadline=deadline))
            except IdempotencyAlreadyInProgressError:
                raise ToolError(
                    "unavailable", "the same request is still in flight; retry shortly"
                ) from None
            except IdempotencyValidationError:
                raise ToolError(
                    "idempotency_key_reused",
                    "this idempotency_key was already used with different arguments",
                ) from None
            except IdempotencyPersistenceLayerError:
                logger.warning("idempotency table unavailable; relying on the database key")
                return remember(caller, args, deadline)

        return call
