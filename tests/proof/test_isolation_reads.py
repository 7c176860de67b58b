"""Isolation matrix, continued (tests/proof/test_isolation.py has the rest, and the
method): reads by id, by path, of a revision and as of a time. The longest part of the
matrix, in a module of its own so two test workers share the matrix (this module
writes its own markers)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from tests.proof.harness import (
    invoke,
    no_problems,
)
from tests.proof.isolation import (
    NEVER,
    Lifecycle,
    Marker,
    for_each_observer,
)
from tests.proof.model import (
    Cell,
    visible,
)

pytestmark = pytest.mark.slow  # a generated matrix over the stack: seconds per test


def test_reads_by_id_path_and_revision_answer_only_inside_the_view(
    stack: Any, markers: list[Marker], lifecycle: Lifecycle
) -> None:
    """memory_read by id and by path, as of a time after the markers were written and
    before any record was, and the revision resource: the content when visible;
    otherwise exactly the error a never-existing record gets. An expired record
    answers everyone so, its writer too."""

    async def check(client: Any, observer: Cell) -> list[str]:
        problems = []
        never = await invoke(client, "memory_read", uri=f"memory://record/{uuid.uuid4()}")
        assert never.code == "not_found"
        never_revision = await _resource_error(
            client, f"memory://record/{uuid.uuid4()}/revisions/1"
        )
        assert never_revision is not None
        for marker in markers:
            shown = visible(marker.placed, observer)
            for uri in (f"memory://record/{marker.id}", marker.uri):
                read = await invoke(client, "memory_read", uri=uri)
                if shown:
                    got = (read.is_error, read.structured.get("content"), read.structured.get("id"))
                    if got != (False, marker.body, marker.id) or (
                        read.structured["context"] != marker.writer.context
                        or read.structured["trust"] != "recorded-data"
                    ):
                        problems.append(f"read {uri} of visible {marker.word}: {read.structured}")
                elif read.structured != never.structured:
                    problems.append(f"read {uri} of hidden {marker.word}: {read.structured}")
            by_id = f"memory://record/{marker.id}"
            then = await invoke(client, "memory_read", uri=by_id, as_of=lifecycle.since)
            if shown and (then.is_error or then.structured["content"] != marker.body):
                problems.append(f"read of visible {marker.word} as of then: {then.structured}")
            elif not shown and then.structured != never.structured:
                problems.append(f"read of hidden {marker.word} as of then: {then.structured}")
            before = await invoke(client, "memory_read", uri=marker.uri, as_of=NEVER)
            if before.structured != never.structured:
                problems.append(f"read of {marker.word} before it existed: {before.structured}")
            revision_uri = f"memory://record/{marker.id}/revisions/1"
            error = await _resource_error(client, revision_uri)
            if shown and error is not None:
                problems.append(f"revision of visible {marker.word} refused: {error}")
            elif shown:
                resource = await client.read_resource(revision_uri)
                if resource.contents[0].text != marker.body:
                    problems.append(f"revision of {marker.word} has other content")
            elif error is None or error[:2] != never_revision[:2]:
                problems.append(f"revision of hidden {marker.word}: {error}, not {never_revision}")
        for gone in lifecycle.expired:
            for uri, as_of in (
                (f"memory://record/{gone.id}", None),
                (gone.uri, None),
                (f"memory://record/{gone.id}", lifecycle.since),
                (gone.uri, lifecycle.since),
            ):
                read = await invoke(client, "memory_read", uri=uri, as_of=as_of)
                if read.structured != never.structured:
                    problems.append(f"read {uri} of expired {gone.word}: {read.structured}")
            error = await _resource_error(client, f"memory://record/{gone.id}/revisions/1")
            if error is None or error[:2] != never_revision[:2]:
                problems.append(f"revision of expired {gone.word}: {error}")
        return problems

    no_problems(for_each_observer(stack, check))


async def _resource_error(client: Any, uri: str) -> tuple[int, str, Any] | None:
    try:
        await client.read_resource(uri)
    except MCPError as caught:
        return caught.error.code, caught.error.message, caught.error.data
    return None
