"""The first idempotency layer: Powertools on DynamoDB, in front of PostgreSQL's.

It absorbs concurrent duplicates and replays a stored response without touching the
database. The guarantee itself stays in PostgreSQL (the key and result commit with
the change), so if DynamoDB fails the call goes straight to the database and still
cannot merge twice.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from .errors import ToolError

logger = logging.getLogger(__name__)
RememberFn = Callable[[dict[str, Any]], dict[str, Any]]
GuardedFn = Callable[[dict[str, Any], Any], dict[str, Any]]  # (request, lambda context)


def _mark_replayed(response: Any, _record: Any) -> Any:
    return {**response, "replayed": True} if isinstance(response, dict) else response


def dynamodb_layer(table_name: str, client: Any = None) -> Callable[[RememberFn], GuardedFn]:
    """Wrap a remember function ``f(request) -> result`` with DynamoDB idempotency.

    ``request`` is ``{"key": …, "args": …}``: the key already includes workspace,
    principal, target and the caller's key; ``args`` is what must match on replay.
    """
    # Imported here: boto3 and Powertools idempotency cost ~0.2 s, paid only by
    # deployments that configure the table.
    from aws_lambda_powertools.utilities.idempotency import (
        DynamoDBPersistenceLayer,
        IdempotencyConfig,
        idempotent_function,
    )
    from aws_lambda_powertools.utilities.idempotency.exceptions import (
        IdempotencyAlreadyInProgressError,
        IdempotencyPersistenceLayerError,
        IdempotencyValidationError,
    )

    persistence = DynamoDBPersistenceLayer(table_name=table_name, boto3_client=client)
    config = IdempotencyConfig(
        event_key_jmespath="key",
        payload_validation_jmespath="args",
        raise_on_no_idempotency_key=True,
        expires_after_seconds=24 * 3600,
        response_hook=_mark_replayed,  # type: ignore[arg-type]
    )

    def wrap(remember: RememberFn) -> GuardedFn:
        guarded = idempotent_function(
            remember, data_keyword_argument="request", persistence_store=persistence, config=config
        )

        def call(request: dict[str, Any], lambda_context: Any = None) -> dict[str, Any]:
            if hasattr(lambda_context, "get_remaining_time_in_millis"):
                # Lets an in-progress record expire with the invocation, not later.
                config.register_lambda_context(lambda_context)
            try:
                return dict(guarded(request=request))
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
                return remember(request)

        return call

    return wrap
