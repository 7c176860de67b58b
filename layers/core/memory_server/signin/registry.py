"""The sign-in table (DynamoDB, on demand): registered clients and rate counters.

Items, by partition key ``pk``:

- ``client#{client_id}``: a client created by registration (RFC 7591): ``created_at``,
  ``last_used`` (epoch seconds; written by the MCP function at most daily), ``name``,
  ``redirect_uris``, ``scopes``. The scheduled sweep removes clients unused for the
  configured number of days (:meth:`Management.sweep_clients`).
- ``rate#{bucket}#{hour}``: a registration counter, ``hits``, expiring (TTL attribute
  ``expires_at``) after its hour.

Only the low-level DynamoDB client is used (typed attribute values), and only
``GetItem``/``PutItem``/``UpdateItem``/``DeleteItem``/``Scan``.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from memory_server.domain.limits import CLIENT_TOUCH_EVERY_S

logger = logging.getLogger(__name__)

CLIENT_PREFIX = "client#"


@dataclass(frozen=True)
class ClientRecord:
    client_id: str
    created_at: int
    last_used: int | None
    name: str
    redirect_uris: list[str]
    scopes: list[str]

    @property
    def last_activity(self) -> int:
        return self.last_used if self.last_used is not None else self.created_at


class SigninTable:
    def __init__(self, client: Any, name: str) -> None:
        self.client = client
        self.name = name

    def hit(self, bucket: str, window_s: int, now: float) -> int:
        """Count one more event in ``bucket``'s current window; the new count."""
        window = int(now) // window_s
        response = self.client.update_item(
            TableName=self.name,
            Key={"pk": {"S": f"rate#{bucket}#{window}"}},
            UpdateExpression="ADD hits :one SET expires_at = :expires",
            ExpressionAttributeValues={
                ":one": {"N": "1"},
                ":expires": {"N": str((window + 1) * window_s + window_s)},
            },
            ReturnValues="UPDATED_NEW",
        )
        return int(response["Attributes"]["hits"]["N"])

    def add_client(self, record: ClientRecord) -> None:
        self.client.put_item(
            TableName=self.name,
            Item={
                "pk": {"S": CLIENT_PREFIX + record.client_id},
                "created_at": {"N": str(record.created_at)},
                "name": {"S": record.name},
                "redirect_uris": {"L": [{"S": uri} for uri in record.redirect_uris]},
                "scopes": {"L": [{"S": scope} for scope in record.scopes]},
            },
        )

    def touch(self, client_id: str, now: float, every_s: int) -> bool:
        """Record a use of a registered client, unless one was recorded within
        ``every_s``; False when nothing was written (not a registered client, or
        recently recorded)."""
        try:
            self.client.update_item(
                TableName=self.name,
                Key={"pk": {"S": CLIENT_PREFIX + client_id}},
                UpdateExpression="SET last_used = :now",
                ConditionExpression=(
                    "attribute_exists(pk) AND "
                    "(attribute_not_exists(last_used) OR last_used < :since)"
                ),
                ExpressionAttributeValues={
                    ":now": {"N": str(int(now))},
                    ":since": {"N": str(int(now) - every_s)},
                },
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def clients(self) -> Iterator[ClientRecord]:
        kwargs: dict[str, Any] = {
            "TableName": self.name,
            "FilterExpression": "begins_with(pk, :prefix)",
            "ExpressionAttributeValues": {":prefix": {"S": CLIENT_PREFIX}},
        }
        while True:
            page = self.client.scan(**kwargs)
            for item in page.get("Items", []):
                yield _record(item)
            if "LastEvaluatedKey" not in page:
                return
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def remove_client(self, client_id: str) -> None:
        self.client.delete_item(TableName=self.name, Key={"pk": {"S": CLIENT_PREFIX + client_id}})


def _record(item: dict[str, Any]) -> ClientRecord:
    last_used = item.get("last_used")
    return ClientRecord(
        client_id=item["pk"]["S"].removeprefix(CLIENT_PREFIX),
        created_at=int(item["created_at"]["N"]),
        last_used=int(last_used["N"]) if last_used else None,
        name=item.get("name", {}).get("S", ""),
        redirect_uris=[v["S"] for v in item.get("redirect_uris", {}).get("L", [])],
        scopes=[v["S"] for v in item.get("scopes", {}).get("L", [])],
    )


def source_bucket(source_ip: str) -> str:
    """The rate bucket of one source: a hash, so the table holds no address."""
    return "source:" + hashlib.sha256(source_ip.encode()).hexdigest()[:24]


class UsageRecorder:
    """Registered clients' last use, as the MCP function sees their requests: at most
    one write per client per ``every_s`` per container (the first request of the day),
    and a failure never fails the request."""

    def __init__(
        self,
        table: SigninTable,
        every_s: int = CLIENT_TOUCH_EVERY_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.table = table
        self.every_s = every_s
        self.clock = clock
        self._noted: dict[str, float] = {}
        self._lock = threading.Lock()

    def seen(self, client_id: str) -> None:
        now = self.clock()
        with self._lock:
            last = self._noted.get(client_id)
            if last is not None and now - last < self.every_s:
                return
            self._noted[client_id] = now
        try:
            self.table.touch(client_id, now, self.every_s)
        except Exception as exc:  # the sweep may then remove a client a day early, no more
            logger.warning("could not record the use of client %s: %s", client_id, exc)
