"""An upgrade keeps data: a database the previous release made and filled through its
own tools is migrated by today's code, and every record, revision, grant and audit row
is still there, each seen by exactly the callers who saw it before.

The previous releases are pinned commits of this repository (git must hold them: a
clone of the repository does), each taken out with ``git archive`` and run in a
subprocess of its own with its ``layers/core`` on the path, so its code, migrations and
schema files are the ones that release shipped. Two are upgraded: the release that
landed last, and the last release of the schema version before that one's, as a
deployment that skipped releases would be. Each release sets ``RELEASES`` by that rule
(docs/deploy.md, Releases and rollback).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from memory_server.data.migrate import (
    SCHEMA_VERSION,
    default_migrations_dir,
    drop_database,
    load_schema_files,
    schema_dir,
)
from memory_server.data.pool import Database
from memory_server.data.provision import Passwords, provision

from tests.upgrade.release_data import (
    DUPLICATE_HANDLES,
    EMBEDDED,
    UNIQUE_HANDLES_SINCE,
    HashEmbedder,
    stored_handle,
)

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("release_data.py")


@dataclass(frozen=True)
class Release:
    commit: str
    schema_version: int  # the newest migration it shipped


# The release that landed last (schema 7), and the last release of the schema version
# before it (schema 6), as a deployment that skipped releases has it.
RELEASES = (
    Release("64dc33505726ac9ddc11c75bbfec6242aca83e35", 7),
    Release("f08b501ded39c9ded0e8c0ab5c6b402924577e04", 6),
)

pytestmark = pytest.mark.slow


def _previous_release(release: Release, target: Path) -> Path:
    archive = target / "release.tar"
    made = subprocess.run(
        [
            "git",
            "-C",
            str(ROOT),
            "archive",
            "--format=tar",
            "-o",
            str(archive),
            release.commit,
            "layers/core",
            "infra/migrations",
            "infra/schema",
        ],
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, (
        f"the previous release ({release.commit}) is not in this repository's git "
        f"history, which the upgrade test needs: {made.stderr.strip()}"
    )
    with tarfile.open(archive) as tar:
        tar.extractall(target / "release", filter="data")
    return target / "release"


def _run(code: Path | None, *args: str) -> str:
    """The data script with one release's code: ``code`` (its tree), else today's."""
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = str(code / "layers" / "core")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout


@pytest.fixture(scope="module", params=RELEASES, ids=lambda r: f"schema-{r.schema_version}")
def upgraded(cluster, tmp_path_factory: pytest.TempPathFactory, request: Any) -> Any:  # type: ignore[no-untyped-def]
    previous: Release = request.param
    work = tmp_path_factory.mktemp("upgrade")
    release = _previous_release(previous, work)
    database = f"memupgrade_{uuid.uuid4().hex[:12]}"
    passwords = {"owner": cluster.passwords["owner"], "runtime": cluster.passwords["runtime"]}
    try:
        urls = json.loads(_run(release, "fill", cluster.admin_url, database, json.dumps(passwords)))
        _run(release, "describe", urls["owner_url"], urls["runtime_url"], str(work / "before.json"))
        old_version = Database(urls["runtime_url"], min_size=1, max_size=1)
        try:
            found_before = old_version.schema_version()
        finally:
            old_version.close()
        with psycopg.connect(urls["owner_url"]) as owner:
            ledger = dict(owner.execute("SELECT name, checksum FROM memory.schema_files"))
        made = provision(cluster.admin_url, Passwords(**passwords), database=database)
        _run(None, "describe", made.owner_url, made.runtime_url, str(work / "after.json"))
        new_version = Database(made.runtime_url, min_size=1, max_size=1)
        try:
            found_after = new_version.schema_version()
        finally:
            new_version.close()
        yield {
            "before": json.loads((work / "before.json").read_text()),
            "after": json.loads((work / "after.json").read_text()),
            "applied": made.applied,
            "versions": (found_before, found_after),
            "release": release,
            "previous": previous,
            "ledger": ledger,
        }
    finally:
        drop_database(cluster.admin_url, database)


def test_released_migrations_never_change(upgraded: Any) -> None:
    released = sorted((upgraded["release"] / "infra" / "migrations").glob("*.sql"))
    assert len(released) == upgraded["previous"].schema_version
    for migration in released:
        today = ROOT / "infra" / "migrations" / migration.name
        assert today.read_bytes() == migration.read_bytes(), f"{migration.name} was rewritten"


def test_the_upgrade_moves_the_schema_to_this_releases_version(upgraded: Any) -> None:
    # The previous release reported its own version; the upgrade applied every migration
    # after its newest, and the current-state files again where any of them differs
    # from what the release applied (or a migration ran): all of them, else none.
    previous = upgraded["previous"].schema_version
    assert upgraded["versions"] == (previous, SCHEMA_VERSION)
    newer = [n for n in upgraded["applied"] if n[:4].isdigit() and int(n[:4]) > previous]
    assert len(newer) == SCHEMA_VERSION - previous
    today = {f.name: f.checksum for f in load_schema_files(schema_dir(default_migrations_dir()))}
    again = [n for n in upgraded["applied"] if not n[:4].isdigit()]
    changed = bool(newer) or upgraded["ledger"] != today
    assert again == (sorted(today) if changed else [])


def test_the_previous_release_filled_what_the_test_needs(upgraded: Any) -> None:
    before = upgraded["before"]
    rows = before["rows"]
    assert len(rows["memories"]) > 80 and len(rows["revisions"]) > len(rows["memories"])
    assert len(rows["audit_outbox"]) >= len(rows["revisions"])
    assert len(rows["idempotency_keys"]) >= 4
    assert {r["kind"] for r in rows["principals"]} == {"person", "service"}
    assert any(r["pinned"] for r in rows["memories"])
    # Vectors of the previous release's model, and records still queued for one.
    assert len(rows["search_embeddings"]) == EMBEDDED
    assert {r["model"] for r in rows["search_embeddings"]} == {HashEmbedder.model}
    assert len(rows["embedding_queue"]) > 0
    assert any(r["expires_at"] for r in rows["memories"])
    assert {"create", "replace", "merge", "move", "delete"} <= {
        r["operation"] for r in rows["revisions"]
    }
    kinds = {r["kind"] for r in rows["memories"]}
    assert kinds == {"memories", "notes", "skills"}
    contexts = {r["context_key"] for r in rows["memories"]}
    assert {"channel:leads", "dm:alice-release-bot", "channel:general/thread:t1"} <= contexts
    # Who is listening matters: the DM's records are not seen from a channel.
    views = before["views"]
    in_dm = set(views["acme alice dm:alice-release-bot"]["listed"])
    in_channel = set(views["acme alice channel:general"]["listed"])
    assert any("dm-alice-release-bot" in uri for uri in in_dm)
    assert not any("dm-alice-release-bot" in uri for uri in in_channel)
    listing_errors = {
        entry.split(" ")[1] for v in views.values() if v for entry in v["listed"] if " " in entry
    }
    assert listing_errors <= {"not_found"}  # a service without a personal namespace
    assert views["initech alice workspace"] is None  # memory off: no caller at all
    assert views["acme dave channel:leads"] is None  # not a member of the private channel
    assert not any("channel-leads" in uri for uri in views["acme dave workspace"]["listed"])
    assert any("channel-leads" in uri for uri in views["acme carol channel:leads"]["listed"])


def test_every_row_is_still_there_as_it_was(upgraded: Any) -> None:
    for table, before in upgraded["before"]["rows"].items():
        after = upgraded["after"]["rows"][table]
        assert len(after) == len(before), table
        for old, new in zip(before, after, strict=True):
            # New columns may come; every old one keeps its value.
            assert {k: new.get(k) for k in old} == old, (table, old)


def test_duplicate_handles_upgrade_flagged_and_keep_their_records(upgraded: Any) -> None:
    # A release before 0006 let acme hold alice and Alice, carol and CAROL: the upgrade
    # does not fail on them; it flags exactly those members (for the admin to see and
    # the principal to rename), and their records and history stay theirs. A release
    # with the rule gave the twins handles of their own: nothing to flag.
    before, after = upgraded["before"]["rows"], upgraded["after"]["rows"]
    handles = {r["id"]: r["handle"] for r in after["principals"]}
    slugs = {r["id"]: r["slug"] for r in after["workspaces"]}
    flagged = {
        (slugs[r["workspace_id"]], handles[r["principal_id"]])
        for r in after["memberships"]
        if r["handle_conflict"]
    }
    previous = upgraded["previous"].schema_version
    twins = {("acme", h) for h in DUPLICATE_HANDLES}
    assert flagged == (twins if previous < UNIQUE_HANDLES_SINCE else set())
    twin = next(pid for pid, h in handles.items() if h == stored_handle("Alice", previous))
    written = [r for r in before["revisions"] if r["writer_id"] == twin]
    assert written and written == [r for r in after["revisions"] if r["writer_id"] == twin]
    assert all(r["handle_key"] for r in after["memberships"])


def test_every_caller_sees_exactly_what_it_saw(upgraded: Any) -> None:
    before, after = upgraded["before"]["views"], upgraded["after"]["views"]
    assert before.keys() == after.keys()
    seen = 0
    for key, view in before.items():
        assert after[key] == view, key
        seen += 0 if view is None else len(view["records"])
    assert seen > 500  # the same records, read by many callers from many contexts
