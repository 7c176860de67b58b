"""Template fixtures: the SAM template, its offline transform, and the nested stacks.

Nothing here talks to AWS. The SAM translator needs S3 code locations (``sam package``
puts them there) and a managed-policy map (fetched from IAM when online); both are
stubbed. It also asks boto3 for a Region, which only reads configuration.
"""

from __future__ import annotations

import copy
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
NESTED = {
    "NetworkStack": ROOT / "infra" / "network.yaml",
    "DatabaseStack": ROOT / "infra" / "database.yaml",
}


class OfflinePolicyLoader:
    """Stands in for ``ManagedPolicyLoader``: the template names no managed policy."""

    def load(self) -> dict[str, str]:
        return {}


def load_yaml(path: Path) -> dict[str, Any]:
    # samtranslator's loader understands the short intrinsic forms (!Ref, !Sub, …).
    return dict(yaml_parse(path.read_text(encoding="utf-8")))


def packaged(template: dict[str, Any]) -> dict[str, Any]:
    """What ``sam package`` hands CloudFormation: local code paths become S3 objects."""
    out = copy.deepcopy(template)
    for resource in out["Resources"].values():
        props = resource.get("Properties", {})
        for key in ("CodeUri", "ContentUri"):
            if isinstance(props.get(key), str) and not props[key].startswith("s3://"):
                props[key] = f"s3://artifacts/{props[key].strip('/')}.zip"
    return out


@pytest.fixture(scope="session")
def sam_template() -> dict[str, Any]:
    return load_yaml(TEMPLATE)


@pytest.fixture(scope="session")
def nested_templates() -> dict[str, dict[str, Any]]:
    return {name: load_yaml(path) for name, path in NESTED.items()}


@pytest.fixture(scope="session")
def transformed(sam_template: dict[str, Any]) -> Iterator[dict[str, Any]]:
    with pytest.MonkeyPatch.context() as env:
        env.setenv("AWS_DEFAULT_REGION", "us-east-1")
        env.delenv("AWS_PROFILE", raising=False)
        yield transform(packaged(sam_template), {}, OfflinePolicyLoader())  # type: ignore[arg-type]


def resources_of(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {name: r for name, r in template["Resources"].items() if r["Type"] == kind}


def load_function(name: str) -> ModuleType:
    """A function's ``app.py`` (functions/ is not a package: each folder is a CodeUri)."""
    path = ROOT / "functions" / name / "app.py"
    spec = importlib.util.spec_from_file_location(f"function_{name}_app", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through it
    spec.loader.exec_module(module)
    return module
