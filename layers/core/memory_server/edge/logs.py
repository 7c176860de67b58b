"""Every log line of a function through its Powertools JSON logger.

The service's own modules log with the standard library (``memory_server.*``), and
so does the connection pool (``psycopg.pool``, ``psycopg_pool.*``). Left alone,
their lines reach Lambda as plain text without the request's keys. Routed here,
they go through the function's Powertools handler: JSON, with the keys the handler
appended for the request (workspace, principal, API request id, Lambda request id)
and the logger's ``name``. The connection libraries log every checkout at INFO, so
they are kept at WARNING.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers

SERVICE_LOGGERS = frozenset({"memory_server"})
LIBRARY_LOGGERS = frozenset({"psycopg", "psycopg_pool"})
LIBRARY_LEVEL = "WARNING"


def function_logger(service: str) -> Logger:
    """A function's Powertools logger whose lines name the logger they came from: the
    ``name`` key is one of its own keys, so ``inject_lambda_context(clear_state=True)``
    keeps it (a key appended later would be cleared at every invocation)."""
    return Logger(service=service, name="%(name)s")


def route_to(logger: Logger) -> None:
    """Call once the service is built (its loggers exist only once imported)."""
    copy_config_to_registered_loggers(source_logger=logger, include=set(SERVICE_LOGGERS))
    copy_config_to_registered_loggers(
        source_logger=logger, log_level=LIBRARY_LEVEL, include=set(LIBRARY_LOGGERS)
    )
