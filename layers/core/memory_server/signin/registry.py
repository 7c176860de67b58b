"""The sign-in table (DynamoDB, on demand): the app clients the management function made,
and registration's counters.

Items, by partition key ``pk``:

- ``client#{client_id}``: a client created by registration (RFC 7591): ``created_at``,
  ``last_used`` (epoch seconds; written by the MCP function after a member's successful
  call, at most daily), ``name``, ``redirect_uris``, ``scopes``, ``counted`` (it holds a
  place under the ceiling). The scheduled sweep removes clients no member used within
  the grace period, and those unused for the configured number of days
  (:meth:`Management.sweep_clients`).
- ``pending#{number}``: a place under the ceiling held by a registration in progress
  (``created_at``); it becomes the client's record, or is given back.
- ``count#registered``: ``live``, the number of ``counted`` client records plus pending
  places. Every change of one of those changes it in the same transaction, so it is
  exact and registration can refuse at the ceiling without counting the table.
- ``agent#{client_id}``: an agent key's app client, made for the admin API:
  ``workspace`` (slug), ``created_by`` (the admin's principal id), ``name``, ``scopes``,
  ``created_at``. The management function deletes an agent client only when this record
  names the workspace asking (docs/admin.md).
- ``rate#{bucket}#{hour}``: a registration counter, ``hits``, expiring (TTL attribute
  ``expires_at``) after its hour.
- ``family#{id}``: one sign-in of a public client whose refresh tokens the front door
  rotates (:mod:`.token`): ``client_id`` (as the client knows itself), ``pool_client``
  (the app client the pool knows), ``pool_refresh`` (the pool's refresh token, never
  shown to the client), ``generation`` (the one refresh token of the family still
  good), ``revoked``, ``expires_at`` (TTL: the pool's refresh token's end).

Only the low-level DynamoDB client is used (typed attribute values), and only
``GetItem``/``PutItem``/``UpdateItem``/``DeleteItem``/``Scan``/``TransactWriteItems``.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from memory_server.domain.limits import CLIENT_TOUCH_EVERY_S

logger = logging.getLogger(__name__)

CLIENT_PREFIX = "client#"
PENDING_PREFIX = "pending#"
AGENT_PREFIX = "agent#"
FAMILY_PREFIX = "family#"
REGISTERED_COUNT = "count#registered"
# An IPv6 host usually holds a whole /64: one source, whatever address it picks.
IPV6_SOURCE_PREFIX = 64


@dataclass(frozen=True)
class ClientRecord:
    client_id: str
    created_at: int
    last_used: int | None
    name: str
    redirect_uris: list[str]
    scopes: list[str]
    counted: bool = True  # False: written before the ceiling existed (not yet counted)

    @property
    def last_activity(self) -> int:
        return self.last_used if self.last_used is not None else self.created_at


@dataclass(frozen=True)
class RefreshFamily:
    family_id: str
    client_id: str
    pool_client: str
    pool_refresh: str
    generation: int
    revoked: bool
    expires_at: int


@dataclass(frozen=True)
class AgentClientRecord:
    client_id: str
    workspace: str
    created_by: str
    name: str
    scopes: list[str]
    created_at: int


class SigninTable:
    def __init__(self, client: Any, name: str) -> None:
        self.client = client
        self.name = name

    def _key(self, pk: str) -> dict[str, Any]:
        return {"pk": {"S": pk}}

    # -- rate counters ------------------------------------------------------------

    def hit(self, bucket: str, window_s: int, now: float) -> int:
        """Count one more event in ``bucket``'s current window; the new count."""
        window = int(now) // window_s
        response = self.client.update_item(
            TableName=self.name,
            Key=self._key(f"rate#{bucket}#{window}"),
            UpdateExpression="ADD hits :one SET expires_at = :expires",
            ExpressionAttributeValues={
                ":one": {"N": "1"},
                ":expires": {"N": str((window + 1) * window_s + window_s)},
            },
            ReturnValues="UPDATED_NEW",
        )
        return int(response["Attributes"]["hits"]["N"])

    def take(self, bucket: str, window_s: int, now: float, limit: int) -> bool:
        """Count one more event in ``bucket``'s window if it holds fewer than ``limit``;
        False (and nothing counted) when it is full."""
        window = int(now) // window_s
        try:
            self.client.update_item(
                TableName=self.name,
                Key=self._key(f"rate#{bucket}#{window}"),
                UpdateExpression="ADD hits :one SET expires_at = :expires",
                ConditionExpression="attribute_not_exists(hits) OR hits < :limit",
                ExpressionAttributeValues={
                    ":one": {"N": "1"},
                    ":limit": {"N": str(limit)},
                    ":expires": {"N": str((window + 1) * window_s + window_s)},
                },
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def give_back(self, bucket: str, window_s: int, now: float) -> None:
        """Undo a :meth:`take` of this window (the event did not happen after all)."""
        window = int(now) // window_s
        # Nothing to give back when the count is already 0.
        with contextlib.suppress(self.client.exceptions.ConditionalCheckFailedException):
            self.client.update_item(
                TableName=self.name,
                Key=self._key(f"rate#{bucket}#{window}"),
                UpdateExpression="ADD hits :minus",
                ConditionExpression="hits > :zero",
                ExpressionAttributeValues={":minus": {"N": "-1"}, ":zero": {"N": "0"}},
            )

    # -- registered clients and the ceiling ---------------------------------------

    def _count_change(self, delta: int, limit: int | None = None) -> dict[str, Any]:
        update: dict[str, Any] = {
            "TableName": self.name,
            "Key": self._key(REGISTERED_COUNT),
            "UpdateExpression": "ADD live :delta",
            "ExpressionAttributeValues": {":delta": {"N": str(delta)}},
        }
        if limit is not None:
            update["ConditionExpression"] = "attribute_not_exists(live) OR live < :limit"
            update["ExpressionAttributeValues"][":limit"] = {"N": str(limit)}
        return {"Update": update}

    def _transact(self, *items: dict[str, Any]) -> bool:
        """Write ``items`` all or none; False when a condition failed."""
        try:
            self.client.transact_write_items(TransactItems=list(items))
        except self.client.exceptions.TransactionCanceledException as cancelled:
            reasons = cancelled.response.get("CancellationReasons", [])
            if any(r.get("Code") not in ("None", "ConditionalCheckFailed") for r in reasons):
                raise  # a conflict or throttling: not an answer about the conditions
            return False
        return True

    def live_registered(self) -> int:
        """Registered clients holding a place under the ceiling (pending ones included)."""
        item = self.client.get_item(
            TableName=self.name, Key=self._key(REGISTERED_COUNT), ConsistentRead=True
        ).get("Item")
        return int(item["live"]["N"]) if item and "live" in item else 0

    def reserve(self, number: str, now: float, limit: int) -> bool:
        """Hold a place for registration ``number`` if fewer than ``limit`` are held."""
        pending = {
            "Put": {
                "TableName": self.name,
                "Item": {"pk": {"S": PENDING_PREFIX + number}, "created_at": {"N": str(int(now))}},
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        }
        return self._transact(self._count_change(1, limit), pending)

    def release(self, number: str) -> bool:
        """Give back registration ``number``'s place; False if it held none."""
        pending = {
            "Delete": {
                "TableName": self.name,
                "Key": self._key(PENDING_PREFIX + number),
                "ConditionExpression": "attribute_exists(pk)",
            }
        }
        return self._transact(pending, self._count_change(-1))

    def add_client(self, number: str, record: ClientRecord) -> None:
        """The client of registration ``number`` takes over its place."""
        pending = {
            "Delete": {
                "TableName": self.name,
                "Key": self._key(PENDING_PREFIX + number),
                "ConditionExpression": "attribute_exists(pk)",
            }
        }
        item = {
            "pk": {"S": CLIENT_PREFIX + record.client_id},
            "created_at": {"N": str(record.created_at)},
            "name": {"S": record.name},
            "redirect_uris": {"L": [{"S": uri} for uri in record.redirect_uris]},
            "scopes": {"L": [{"S": scope} for scope in record.scopes]},
            "counted": {"BOOL": True},
        }
        put = {"Put": {"TableName": self.name, "Item": item}}
        if not self._transact(pending, put):
            raise RuntimeError(f"registration {number} holds no place (given back by the sweep?)")

    def count_client(self, client_id: str) -> bool:
        """Count a record written before the ceiling existed; False if there is none
        (or it is counted already)."""
        mark = {
            "Update": {
                "TableName": self.name,
                "Key": self._key(CLIENT_PREFIX + client_id),
                "UpdateExpression": "SET counted = :yes",
                "ConditionExpression": "attribute_exists(pk) AND attribute_not_exists(counted)",
                "ExpressionAttributeValues": {":yes": {"BOOL": True}},
            }
        }
        return self._transact(mark, self._count_change(1))

    def touch(self, client_id: str, now: float, every_s: int) -> bool:
        """Record a use of a registered client, unless one was recorded within
        ``every_s``; False when nothing was written (not a registered client, or
        recently recorded)."""
        try:
            self.client.update_item(
                TableName=self.name,
                Key=self._key(CLIENT_PREFIX + client_id),
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

    def _scan(self, prefix: str) -> Iterator[dict[str, Any]]:
        kwargs: dict[str, Any] = {
            "TableName": self.name,
            "FilterExpression": "begins_with(pk, :prefix)",
            "ExpressionAttributeValues": {":prefix": {"S": prefix}},
        }
        while True:
            page = self.client.scan(**kwargs)
            yield from page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                return
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def clients(self) -> Iterator[ClientRecord]:
        for item in self._scan(CLIENT_PREFIX):
            yield _record(item)

    def reservations(self) -> Iterator[tuple[str, int]]:
        """(number, created_at) of every place held by a registration in progress."""
        for item in self._scan(PENDING_PREFIX):
            yield item["pk"]["S"].removeprefix(PENDING_PREFIX), int(item["created_at"]["N"])

    def remove_client(self, client_id: str) -> None:
        """Delete a registered client's record, giving back its place if it held one."""
        counted = {
            "Delete": {
                "TableName": self.name,
                "Key": self._key(CLIENT_PREFIX + client_id),
                "ConditionExpression": "attribute_exists(counted)",
            }
        }
        if not self._transact(counted, self._count_change(-1)):
            self.client.delete_item(TableName=self.name, Key=self._key(CLIENT_PREFIX + client_id))

    # -- refresh-token families (the front door's rotation) ------------------------

    def start_family(self, family: RefreshFamily) -> None:
        self.client.put_item(
            TableName=self.name,
            Item={
                "pk": {"S": FAMILY_PREFIX + family.family_id},
                "client_id": {"S": family.client_id},
                "pool_client": {"S": family.pool_client},
                "pool_refresh": {"S": family.pool_refresh},
                "generation": {"N": str(family.generation)},
                "revoked": {"BOOL": family.revoked},
                "expires_at": {"N": str(family.expires_at)},
            },
            ConditionExpression="attribute_not_exists(pk)",
        )

    def family(self, family_id: str) -> RefreshFamily | None:
        item = self.client.get_item(
            TableName=self.name, Key=self._key(FAMILY_PREFIX + family_id), ConsistentRead=True
        ).get("Item")
        if item is None:
            return None
        return RefreshFamily(
            family_id=family_id,
            client_id=item["client_id"]["S"],
            pool_client=item["pool_client"]["S"],
            pool_refresh=item["pool_refresh"]["S"],
            generation=int(item["generation"]["N"]),
            revoked=bool(item["revoked"]["BOOL"]),
            expires_at=int(item["expires_at"]["N"]),
        )

    def advance_family(self, family_id: str, generation: int) -> bool:
        """Make ``generation + 1`` the family's good token if ``generation`` still is
        (one of two concurrent uses of a token wins); False otherwise."""
        try:
            self.client.update_item(
                TableName=self.name,
                Key=self._key(FAMILY_PREFIX + family_id),
                UpdateExpression="SET generation = :next",
                ConditionExpression="generation = :current AND revoked = :no",
                ExpressionAttributeValues={
                    ":next": {"N": str(generation + 1)},
                    ":current": {"N": str(generation)},
                    ":no": {"BOOL": False},
                },
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def revoke_family(self, family_id: str) -> None:
        with contextlib.suppress(self.client.exceptions.ConditionalCheckFailedException):
            self.client.update_item(
                TableName=self.name,
                Key=self._key(FAMILY_PREFIX + family_id),
                UpdateExpression="SET revoked = :yes",
                ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeValues={":yes": {"BOOL": True}},
            )

    # -- agent keys' app clients --------------------------------------------------

    def add_agent_client(self, record: AgentClientRecord) -> None:
        self.client.put_item(
            TableName=self.name,
            Item={
                "pk": {"S": AGENT_PREFIX + record.client_id},
                "workspace": {"S": record.workspace},
                "created_by": {"S": record.created_by},
                "name": {"S": record.name},
                "scopes": {"L": [{"S": scope} for scope in record.scopes]},
                "created_at": {"N": str(record.created_at)},
            },
            ConditionExpression="attribute_not_exists(pk)",
        )

    def agent_client(self, client_id: str) -> AgentClientRecord | None:
        item = self.client.get_item(
            TableName=self.name, Key=self._key(AGENT_PREFIX + client_id), ConsistentRead=True
        ).get("Item")
        if item is None:
            return None
        return AgentClientRecord(
            client_id=client_id,
            workspace=item["workspace"]["S"],
            created_by=item["created_by"]["S"],
            name=item["name"]["S"],
            scopes=[v["S"] for v in item["scopes"]["L"]],
            created_at=int(item["created_at"]["N"]),
        )

    def remove_agent_client(self, client_id: str) -> None:
        self.client.delete_item(TableName=self.name, Key=self._key(AGENT_PREFIX + client_id))


def _record(item: dict[str, Any]) -> ClientRecord:
    last_used = item.get("last_used")
    return ClientRecord(
        client_id=item["pk"]["S"].removeprefix(CLIENT_PREFIX),
        created_at=int(item["created_at"]["N"]),
        last_used=int(last_used["N"]) if last_used else None,
        name=item.get("name", {}).get("S", ""),
        redirect_uris=[v["S"] for v in item.get("redirect_uris", {}).get("L", [])],
        scopes=[v["S"] for v in item.get("scopes", {}).get("L", [])],
        counted=bool(item.get("counted", {}).get("BOOL", False)),
    )


def source_bucket(source_ip: str) -> str:
    """The rate bucket of one source (an IPv4 address, or the /64 of an IPv6 one): a
    hash, so the table holds no address."""
    try:
        address = ipaddress.ip_address(source_ip)
    except ValueError:
        source = source_ip
    else:
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        if isinstance(address, ipaddress.IPv6Address):
            source = str(ipaddress.ip_network(f"{address}/{IPV6_SOURCE_PREFIX}", strict=False))
        else:
            source = str(address)
    return "source:" + hashlib.sha256(source.encode()).hexdigest()[:24]


class UsageRecorder:
    """Registered clients' last use, as the MCP function sees a member's successful
    calls: at most one write per client per ``every_s`` per container (the first such
    call of the day), and a failure never fails the request."""

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
        except Exception as exc:  # the sweep may then remove a client early, no more
            logger.warning("could not record the use of client %s: %s", client_id, exc)
