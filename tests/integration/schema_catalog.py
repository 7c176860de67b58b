"""A normalized catalog of the ``memory`` schema: what a database built from
``infra/`` holds, independent of how it got there.

``tests/integration/test_schema.py`` compares a database built from the baseline and
the current-state files with ``catalog.json``, the catalog recorded from a database
built the way it was before (first every migration from 0001 to 0020, before they were
folded into the baseline; since then, the schema after its last reviewed change). After a deliberate
change to the schema, record the catalog again and review the difference:

    PYTHONPATH=layers/core:cli:local:. python -m tests.integration.schema_catalog

It builds a fresh database on a private embedded server, provisioned exactly as the
service's is, and writes ``tests/integration/catalog.json``.

Function bodies are compared by a hash of their text with comments dropped and white
space folded (a comment or a line break is not a change); policies, triggers, views,
indexes and constraints by PostgreSQL's own rendering of them. The migrator's ledgers
(``schema_migrations``, ``schema_files``) are not part of the schema.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parents[2]
CATALOG = Path(__file__).resolve().parent / "catalog.json"
SCHEMA = "memory"
LEDGERS = ("schema_migrations", "schema_files")

Catalog = dict[str, dict[str, Any]]

_COMMENT = re.compile(r"--[^\n]*|/\*.*?\*/", re.DOTALL)


def body_hash(text: str) -> str:
    """The hash of a function body with comments dropped and white space folded."""
    folded = " ".join(_COMMENT.sub(" ", text).split())
    return hashlib.sha256(folded.encode()).hexdigest()[:16]


def _acl(items: list[str] | None) -> list[str] | None:
    return None if items is None else sorted(items)


_FUNCTIONS = """
SELECT p.oid::regprocedure::text AS signature, p.proname,
       pg_get_function_result(p.oid) AS result, l.lanname AS language,
       p.provolatile AS volatility, p.prosecdef AS security_definer, p.proisstrict AS strict,
       p.proleakproof AS leakproof, p.proparallel AS parallel, p.proconfig AS config,
       pg_get_userbyid(p.proowner) AS owner, p.proacl::text[] AS acl,
       coalesce(pg_get_function_sqlbody(p.oid), p.prosrc) AS body
FROM pg_proc AS p
JOIN pg_namespace AS n ON n.oid = p.pronamespace
JOIN pg_language AS l ON l.oid = p.prolang
WHERE n.nspname = %(schema)s
"""

_POLICIES = """
SELECT tablename, policyname, cmd, roles::text[] AS roles, permissive, qual, with_check
FROM pg_policies WHERE schemaname = %(schema)s
"""

_TRIGGERS = """
SELECT c.relname, t.tgname, pg_get_triggerdef(t.oid) AS definition, t.tgenabled
FROM pg_trigger AS t
JOIN pg_class AS c ON c.oid = t.tgrelid
JOIN pg_namespace AS n ON n.oid = c.relnamespace
WHERE n.nspname = %(schema)s AND NOT t.tgisinternal
"""

_RELATIONS = """
SELECT c.oid, c.relname, c.relkind, pg_get_userbyid(c.relowner) AS owner,
       c.relacl::text[] AS acl, c.relrowsecurity, c.relforcerowsecurity,
       c.reloptions, CASE WHEN c.relkind = 'v' THEN pg_get_viewdef(c.oid) END AS view
FROM pg_class AS c
JOIN pg_namespace AS n ON n.oid = c.relnamespace
WHERE n.nspname = %(schema)s AND c.relkind IN ('r', 'p', 'v', 'm', 'S')
"""

_COLUMNS = """
SELECT a.attname, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull,
       pg_get_expr(d.adbin, d.adrelid) AS expression, a.attgenerated, a.attidentity,
       co.collname, a.attstorage, a.attacl::text[] AS acl
FROM pg_attribute AS a
LEFT JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
LEFT JOIN pg_collation AS co ON co.oid = a.attcollation AND a.attcollation <> 100
WHERE a.attrelid = %(relation)s AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum
"""

_CONSTRAINTS = """
SELECT conname, pg_get_constraintdef(oid) AS definition, convalidated
FROM pg_constraint WHERE conrelid = %(relation)s
"""

_INDEXES = """
SELECT i.relname, t.relname AS table_name, pg_get_indexdef(i.oid) AS definition,
       i.reloptions
FROM pg_index AS x
JOIN pg_class AS i ON i.oid = x.indexrelid
JOIN pg_class AS t ON t.oid = x.indrelid
JOIN pg_namespace AS n ON n.oid = t.relnamespace
WHERE n.nspname = %(schema)s
"""

_TYPES = """
SELECT t.typname, t.typtype, format_type(t.typbasetype, t.typtypmod) AS base,
       (SELECT array_agg(e.enumlabel ORDER BY e.enumsortorder)
        FROM pg_enum AS e WHERE e.enumtypid = t.oid) AS labels
FROM pg_type AS t
JOIN pg_namespace AS n ON n.oid = t.typnamespace
LEFT JOIN pg_class AS c ON c.oid = t.typrelid
WHERE n.nspname = %(schema)s AND t.typtype IN ('e', 'd', 'c') AND t.typelem = 0
  AND (c.relkind IS NULL OR c.relkind = 'c')
"""

_SCHEMA = """
SELECT pg_get_userbyid(nspowner) AS owner, nspacl::text[] AS acl
FROM pg_namespace WHERE nspname = %(schema)s
"""


def catalog(conn: psycopg.Connection[Any]) -> Catalog:
    """The normalized catalog of the ``memory`` schema, as plain JSON data."""
    params = {"schema": SCHEMA}
    out: Catalog = {
        "schema": {},
        "functions": {},
        "policies": {},
        "triggers": {},
        "views": {},
        "tables": {},
        "indexes": {},
        "sequences": {},
        "types": {},
    }
    owner, acl = conn.execute(_SCHEMA, params).fetchone() or (None, None)
    out["schema"][SCHEMA] = {"owner": owner, "acl": _acl(acl)}
    for row in conn.execute(_FUNCTIONS, params).fetchall():
        (signature, _, result, language, volatility, definer, strict, leakproof, parallel) = row[:9]
        config, owner, acl, body = row[9:]
        out["functions"][signature] = {
            "result": result,
            "language": language,
            "volatility": volatility,
            "security_definer": definer,
            "strict": strict,
            "leakproof": leakproof,
            "parallel": parallel,
            "config": sorted(config) if config else None,
            "owner": owner,
            "acl": _acl(acl),
            "body": body_hash(body or ""),
        }
    for table, name, cmd, roles, permissive, qual, check in conn.execute(
        _POLICIES, params
    ).fetchall():
        out["policies"][f"{table}.{name}"] = {
            "command": cmd,
            "roles": sorted(roles),
            "permissive": permissive,
            "using": qual,
            "with_check": check,
        }
    for table, name, definition, enabled in conn.execute(_TRIGGERS, params).fetchall():
        out["triggers"][f"{table}.{name}"] = {"definition": definition, "enabled": enabled}
    for oid, name, kind, owner, acl, rls, force, options, view in conn.execute(
        _RELATIONS, params
    ).fetchall():
        if name in LEDGERS:
            continue
        shared = {"owner": owner, "acl": _acl(acl), "options": sorted(options or [])}
        if kind == "S":
            out["sequences"][name] = shared
            continue
        columns = [
            {
                "name": c[0],
                "type": c[1],
                "not_null": c[2],
                "expression": c[3],
                "generated": c[4],
                "identity": c[5],
                "collation": c[6],
                "storage": c[7],
                "acl": _acl(c[8]),
            }
            for c in conn.execute(_COLUMNS, {"relation": oid}).fetchall()
        ]
        if kind in ("v", "m"):
            out["views"][name] = {**shared, "definition": view, "columns": columns}
            continue
        constraints = {
            c[0]: {"definition": c[1], "validated": c[2]}
            for c in conn.execute(_CONSTRAINTS, {"relation": oid}).fetchall()
        }
        out["tables"][name] = {
            **shared,
            "row_security": rls,
            "force_row_security": force,
            "columns": columns,
            "constraints": constraints,
        }
    for name, table, definition, options in conn.execute(_INDEXES, params).fetchall():
        if table in LEDGERS:
            continue
        out["indexes"][name] = {
            "table": table,
            "definition": definition,
            "options": sorted(options or []),
        }
    for name, kind, base, labels in conn.execute(_TYPES, params).fetchall():
        out["types"][name] = {"kind": kind, "base": base, "labels": labels}
    return {section: dict(sorted(items.items())) for section, items in out.items()}


def differences(expected: Catalog, actual: Catalog) -> list[str]:
    """One line per object that is missing, extra or different, as ``section name``."""
    lines = []
    for section in sorted(expected.keys() | actual.keys()):
        before, after = expected.get(section, {}), actual.get(section, {})
        for name in sorted(before.keys() | after.keys()):
            if name not in after:
                lines.append(f"{section} {name}: missing")
            elif name not in before:
                lines.append(f"{section} {name}: not in the recorded catalog")
            elif before[name] != after[name]:
                changed = sorted(
                    k
                    for k in before[name].keys() | after[name].keys()
                    if before[name].get(k) != after[name].get(k)
                )
                lines.append(f"{section} {name}: differs in {', '.join(changed)}")
    return lines


def built_catalog() -> Catalog:
    """The catalog of a fresh database provisioned from this checkout's ``infra/``, on
    a private embedded server (role passwords are server-wide: a shared server's
    users would lose theirs)."""
    from memory_local.postgres import EmbeddedPostgres
    from memory_server.data.provision import Passwords, provision

    server = EmbeddedPostgres(ROOT / ".tmp" / f"catalog-{os.getpid()}", durable=False)
    try:
        made = provision(server.start(), Passwords.generate(), database="catalog")
        with psycopg.connect(made.owner_url) as owner:
            return catalog(owner)
    finally:
        server.destroy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=CATALOG)
    args = parser.parse_args()
    args.output.write_text(json.dumps(built_catalog(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
