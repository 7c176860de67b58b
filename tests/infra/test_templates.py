"""The deployment templates: linted, transformed offline, and checked for what matters."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from memory_server.data import migrate
from memory_server.domain import limits
from memory_server.domain.grants import SCOPE_GRANTS
from memory_server.edge import aws_config, runtime
from memory_server.signin import authorization, authorizer, management, registration

from tests.infra.conftest import NESTED, ROOT, TEMPLATE, resources_of

IN_VPC = ("McpFunction", "AuditSweeperFunction", "MigrationFunction")
OUTSIDE_VPC = (
    "AuthorizerFunction",
    "ManagementFunction",
    "AuthorizationFunction",
    "ConsoleFunction",
)
FUNCTIONS = (*IN_VPC, *OUTSIDE_VPC)
ROLES = {
    "McpFunction": "McpRole",
    "AuditSweeperFunction": "AuditSweeperRole",
    "MigrationFunction": "MigrationRole",
    "AuthorizerFunction": "AuthorizerRole",
    "ManagementFunction": "ManagementRole",
    "AuthorizationFunction": "AuthorizationRole",
    "ConsoleFunction": "ConsoleRole",
}
MCP_PATH = "/w/{workspace}/mcp"
METADATA_PATH = "/.well-known/oauth-protected-resource/w/{workspace}/mcp"
ADMIN_PATH = "/w/{workspace}/admin/{proxy+}"
AS_METADATA_PATH = "/.well-known/oauth-authorization-server"
REGISTER_PATH = "/register"
AUTHORIZE_PATH = "/authorize"
CONSOLE = {("/console", "get"), ("/console/{proxy+}", "get")}  # static files
PUBLIC = {
    *CONSOLE,
    (METADATA_PATH, "get"),
    (AS_METADATA_PATH, "get"),
    (REGISTER_PATH, "post"),
    (AUTHORIZE_PATH, "get"),
    (AUTHORIZE_PATH, "post"),
    ("/authorize/callback", "get"),  # the pool's way back for metadata-document clients
    ("/token", "post"),  # the front door's token endpoint
    ("/revoke", "post"),  # and its revocation endpoint (RFC 7009)
}

# Actions AWS does not let a policy scope to a resource, and which are therefore
# granted on "*" (each named where it is used in template.yaml):
# - the EC2 network-interface actions a VPC-attached Lambda function needs
#   (the content of AWSLambdaVPCAccessExecutionRole),
# - X-Ray segment upload (AWSXRayDaemonWriteAccess).
UNSCOPABLE = {
    "ec2:CreateNetworkInterface",
    "ec2:DeleteNetworkInterface",
    "ec2:AssignPrivateIpAddresses",
    "ec2:UnassignPrivateIpAddresses",
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
}
READ_ONLY = re.compile(r"^[a-z0-9-]+:(Describe|Get|List)[A-Za-z]*$")


# -- lint and transform --------------------------------------------------------------


@pytest.fixture(scope="module")
def lint() -> subprocess.CompletedProcess[str]:
    # Once for all templates (a few seconds); cfn-lint applies the SAM transform itself.
    cfn_lint = Path(sys.executable).parent / "cfn-lint"
    files = [TEMPLATE, *NESTED.values()]
    return subprocess.run(
        [str(cfn_lint), "--format", "json", *map(str, files)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )


@pytest.mark.slow
def test_cfn_lint_passes_on_every_template(lint: subprocess.CompletedProcess[str]) -> None:
    findings = json.loads(lint.stdout or "[]")
    described = [
        f"{f['Rule']['Id']} {f['Filename']}:{f['Location']['Start']['LineNumber']} {f['Message']}"
        for f in findings
    ]
    assert lint.returncode == 0 and not findings, "\n".join(described) or lint.stderr


def test_sam_translator_transforms_offline(transformed: dict[str, Any]) -> None:
    kinds = {r["Type"] for r in transformed["Resources"].values()}
    assert "AWS::Serverless::Function" not in kinds
    for name in FUNCTIONS:
        assert transformed["Resources"][name]["Type"] == "AWS::Lambda::Function"
    assert resources_of(transformed, "AWS::ApiGatewayV2::Api")


def test_nested_stacks_are_wired_to_their_templates(
    sam_template: dict[str, Any], nested_templates: dict[str, dict[str, Any]]
) -> None:
    for name, path in NESTED.items():
        stack = sam_template["Resources"][name]
        assert stack["Type"] == "AWS::CloudFormation::Stack"
        assert stack["Properties"]["TemplateURL"] == path.relative_to(ROOT).as_posix()
        nested = nested_templates[name]
        passed = set(stack["Properties"].get("Parameters", {}))
        declared = nested["Parameters"]
        assert passed <= set(declared), f"{name}: unknown parameters {passed - set(declared)}"
        required = {p for p, spec in declared.items() if "Default" not in spec}
        assert required <= passed, f"{name}: missing parameters {required - passed}"
        used = set(re.findall(rf"{name}\.Outputs\.(\w+)", json.dumps(sam_template)))
        assert used <= set(nested["Outputs"]), (
            f"{name}: unknown outputs {used - set(nested['Outputs'])}"
        )


# -- API and authorization -----------------------------------------------------------


def _routes(transformed: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    (api,) = resources_of(transformed, "AWS::ApiGatewayV2::Api").values()
    for path, methods in api["Properties"]["Body"]["paths"].items():
        for method, spec in methods.items():
            yield path, method, spec


def test_authorizer_is_on_every_mcp_and_admin_route_and_only_sign_in_is_public(
    transformed: dict[str, Any], sam_template: dict[str, Any]
) -> None:
    routes = list(_routes(transformed))
    assert {path for path, _, _ in routes} == {MCP_PATH, ADMIN_PATH} | {p for p, _ in PUBLIC}
    for path, method, spec in routes:
        (security,) = spec["security"]
        if path not in (MCP_PATH, ADMIN_PATH):
            assert (path, method) in PUBLIC and security == {"NONE": []}
        else:
            # The Lambda authorizer on every method of both routes; which scope each
            # route needs is the authorizer's (and again the handler's) business.
            assert path in (MCP_PATH, ADMIN_PATH) and method == "x-amazon-apigateway-any-method"
            assert security == {"TokenAuthorizer": []}

    (api,) = resources_of(transformed, "AWS::ApiGatewayV2::Api").values()
    scheme = api["Properties"]["Body"]["components"]["securitySchemes"]["TokenAuthorizer"]
    config = scheme["x-amazon-apigateway-authorizer"]
    assert config["type"] == "request"
    assert config["authorizerPayloadFormatVersion"] == "2.0"
    assert config["enableSimpleResponses"] is True
    # The cache key is the token and the route, for the documented time.
    assert config["identitySource"] == ["$request.header.Authorization", "$context.routeKey"]
    assert config["authorizerResultTtlInSeconds"] == limits.AUTHORIZER_CACHE_TTL_S
    assert '["AuthorizerFunction", "Arn"]' in json.dumps(config["authorizerUri"])
    assert sam_template["Resources"]["HttpApi"]["Properties"]["Auth"]["DefaultAuthorizer"] == (
        "TokenAuthorizer"
    )
    # API Gateway may invoke the authorizer (else every request would be a 500).
    permissions = [
        p["Properties"]
        for p in resources_of(transformed, "AWS::Lambda::Permission").values()
        if p["Properties"]["FunctionName"] == {"Fn::GetAtt": ["AuthorizerFunction", "Arn"]}
    ]
    assert [p["Principal"] for p in permissions] == ["apigateway.amazonaws.com"]
    # The route keys the authorizer knows are the template's routes.
    assert {f"ANY {MCP_PATH}", f"ANY {ADMIN_PATH}"} == set(authorizer.ROUTE_SCOPES)


def test_no_jwt_authorizer_or_client_list_remains(sam_template: dict[str, Any]) -> None:
    text = json.dumps(sam_template)
    assert "JwtConfiguration" not in text and "AgentClientIds" not in text


def test_resource_server_declares_exactly_the_contract_scopes(sam_template: dict[str, Any]) -> None:
    server = sam_template["Resources"]["MemoryResourceServer"]["Properties"]
    scopes = {f"{server['Identifier']}/{s['ScopeName']}" for s in server["Scopes"]}
    assert scopes == set(SCOPE_GRANTS)
    people = sam_template["Resources"]["PeopleClient"]["Properties"]
    assert people["AllowedOAuthFlows"] == ["code"] and people["GenerateSecret"] is False
    agent = sam_template["Resources"]["ExampleAgentClient"]["Properties"]
    assert agent["AllowedOAuthFlows"] == ["client_credentials"] and agent["GenerateSecret"]
    assert set(agent["AllowedOAuthScopes"]) <= set(SCOPE_GRANTS)


# -- IAM -----------------------------------------------------------------------------


def _branches(value: Any) -> Iterator[Any]:
    """Both sides of an Fn::If (conditional statements and policies), dropping NoValue."""
    if isinstance(value, dict) and "Fn::If" in value:
        for side in value["Fn::If"][1:]:
            yield from _branches(side)
    elif value != {"Ref": "AWS::NoValue"}:
        yield value


def _statements(template: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for name, role in resources_of(template, "AWS::IAM::Role").items():
        for policy in role["Properties"].get("Policies", []):
            for branch in _branches(policy):
                for statement in branch["PolicyDocument"]["Statement"]:
                    yield name, statement


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_no_policy_grants_write_actions_on_wildcard_resources(
    transformed: dict[str, Any], nested_templates: dict[str, dict[str, Any]]
) -> None:
    templates = {"template.yaml": transformed, **nested_templates}
    checked = 0
    for template in templates.values():
        for role in resources_of(template, "AWS::IAM::Role").values():
            # Managed policies would hide what is granted; everything is inline.
            assert not role["Properties"].get("ManagedPolicyArns")
        assert not resources_of(template, "AWS::IAM::Policy")
        assert not resources_of(template, "AWS::IAM::ManagedPolicy")
        for role_name, statement in _statements(template):
            checked += 1
            assert statement["Effect"] == "Allow" and "NotAction" not in statement
            actions = _listed(statement["Action"])
            assert not [a for a in actions if "*" in a], f"{role_name}: wildcard action"
            resources = [r for value in _listed(statement["Resource"]) for r in _branches(value)]
            if "*" in resources:
                writes = [a for a in actions if not READ_ONLY.match(a) and a not in UNSCOPABLE]
                assert not writes, f"{role_name} grants {writes} on *"
            else:
                assert not [r for r in resources if isinstance(r, str) and "*" in r]
    assert checked >= 12


def _role_actions(template: dict[str, Any], role: str) -> dict[str, list[Any]]:
    granted: dict[str, list[Any]] = {}
    for name, statement in _statements(template):
        if name == role:
            for action in _listed(statement["Action"]):
                granted.setdefault(action, []).extend(_listed(statement["Resource"]))
    return granted


def test_each_function_gets_only_its_own_resources(transformed: dict[str, Any]) -> None:
    for function, role in ROLES.items():
        props = transformed["Resources"][function]["Properties"]
        assert props["Role"] == {"Fn::GetAtt": [role, "Arn"]}
    mcp = _role_actions(transformed, "McpRole")
    sweeper = _role_actions(transformed, "AuditSweeperRole")
    migration = _role_actions(transformed, "MigrationRole")
    table = {"Fn::GetAtt": ["IdempotencyTable", "Arn"]}
    bus = {"Fn::GetAtt": ["AuditBus", "Arn"]}
    for action in ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem"):
        assert mcp[action] == [table]
    assert mcp["events:PutEvents"] == [bus] and sweeper["events:PutEvents"] == [bus]
    assert not [a for a in sweeper if a.startswith(("dynamodb:", "secretsmanager:"))]
    # The cursor key, read at init: that one secret, nothing else of Secrets Manager.
    assert [a for a in mcp if a.startswith("secretsmanager:")] == ["secretsmanager:GetSecretValue"]
    assert mcp["secretsmanager:GetSecretValue"] == [{"Ref": "CursorSecret"}]
    management = _role_actions(transformed, "ManagementRole")
    signin = _role_actions(transformed, "AuthorizerRole")
    consent = _role_actions(transformed, "AuthorizationRole")
    signin_table = {"Fn::GetAtt": ["SigninTable", "Arn"]}
    pool = {"Fn::GetAtt": ["UserPool", "Arn"]}
    assert mcp["lambda:InvokeFunction"] == [{"Fn::GetAtt": ["ManagementFunction", "Arn"]}]
    assert {a: r for a, r in management.items() if a.startswith("cognito-idp:")} == {
        "cognito-idp:CreateUserPoolClient": [pool],
        "cognito-idp:DeleteUserPoolClient": [pool],
    }
    # GetItem: an agent client's owner, the count of registered clients (changed, with
    # the records, in TransactWriteItems, which needs no permission of its own).
    assert {a: r for a, r in management.items() if a.startswith("dynamodb:")} == {
        a: [signin_table]
        for a in (
            "dynamodb:GetItem",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
            "dynamodb:DeleteItem",
            "dynamodb:Scan",
        )
    }
    assert management["events:PutEvents"] == [bus]
    assert set(signin) == {"logs:CreateLogStream", "logs:PutLogEvents"}
    # The front door reads app clients and its one secret, and keeps refresh-token
    # families in the sign-in table; it writes nothing to the pool.
    assert consent == {
        "logs:CreateLogStream": [{"Fn::GetAtt": ["AuthorizationLogGroup", "Arn"]}],
        "logs:PutLogEvents": [{"Fn::GetAtt": ["AuthorizationLogGroup", "Arn"]}],
        "cognito-idp:DescribeUserPoolClient": [pool],
        "cognito-idp:ListUserPoolClients": [pool],
        "dynamodb:GetItem": [signin_table],
        "dynamodb:PutItem": [signin_table],
        "dynamodb:UpdateItem": [signin_table],
        "secretsmanager:GetSecretValue": [{"Ref": "ConsentSecret"}],
    }
    # The console function finds its app client by name; it changes nothing.
    assert _role_actions(transformed, "ConsoleRole") == {
        "logs:CreateLogStream": [{"Fn::GetAtt": ["ConsoleLogGroup", "Arn"]}],
        "logs:PutLogEvents": [{"Fn::GetAtt": ["ConsoleLogGroup", "Arn"]}],
        "cognito-idp:ListUserPoolClients": [pool],
    }
    # The MCP function records registered clients' last use, nothing else there.
    assert mcp["dynamodb:UpdateItem"] == [table, signin_table]
    assert [a for a in mcp if a.startswith("dynamodb:") and signin_table in mcp[a]] == [
        "dynamodb:UpdateItem"
    ]
    for role in ("AuthorizerRole", "ManagementRole", "AuthorizationRole"):
        assert not [a for a in _role_actions(transformed, role) if a.startswith(("ec2:", "rds"))]
    assert not [a for a in migration if a.startswith(("dynamodb:", "events:", "rds-db:"))]
    secrets = json.dumps(migration["secretsmanager:GetSecretValue"])
    for secret in ("OwnerDbSecret", "RuntimeDbSecret", "AuditorDbSecret", "MasterSecretArn"):
        assert secret in secrets


def test_only_the_management_function_may_write_to_the_user_pool(
    transformed: dict[str, Any],
) -> None:
    for role in resources_of(transformed, "AWS::IAM::Role"):
        cognito = [a for a in _role_actions(transformed, role) if a.startswith("cognito-idp:")]
        if role == "ManagementRole":
            assert cognito
        elif role == "AuthorizationRole":
            # Reads: a client for /authorize, the document clients' client by name.
            assert cognito == [
                "cognito-idp:DescribeUserPoolClient",
                "cognito-idp:ListUserPoolClients",
            ]
        elif role == "ConsoleRole":
            assert cognito == ["cognito-idp:ListUserPoolClients"]  # a read: its client's id
        else:
            # Not even a read: the MCP function reaches the pool only through the
            # management function, which is outside the VPC.
            assert cognito == [], f"{role} holds {cognito}"


def _db_user(template: dict[str, Any], role: str) -> str:
    (resource,) = _role_actions(template, role)["rds-db:connect"]
    arn = resource["Fn::Sub"][0]
    match = re.fullmatch(r"arn:\$\{AWS::Partition\}:rds-db:.*:dbuser:\$\{ProxyId\}/(\w+)", arn)
    assert match, arn
    return match[1]


def test_runtime_db_role_is_not_the_migration_role(
    transformed: dict[str, Any], sam_template: dict[str, Any]
) -> None:
    assert _db_user(transformed, "McpRole") == migrate.RUNTIME_ROLE
    assert _db_user(transformed, "AuditSweeperRole") == migrate.AUDITOR_ROLE

    def url_user(function: str) -> str:
        url = transformed["Resources"][function]["Properties"]["Environment"]["Variables"][
            "DATABASE_URL"
        ]["Fn::Sub"][0]
        return str(re.match(r"postgresql://(\w+)@", url)[1])  # type: ignore[index]

    assert url_user("McpFunction") == migrate.RUNTIME_ROLE
    assert url_user("AuditSweeperFunction") == migrate.AUDITOR_ROLE

    # The migration function logs in as the owner with the owner secret's password.
    env = sam_template["Resources"]["MigrationFunction"]["Properties"]["Environment"]["Variables"]
    assert env["OWNER_SECRET_ARN"] == {"Ref": "OwnerDbSecret"}
    secret_users = {
        name: json.loads(
            sam_template["Resources"][name]["Properties"]["GenerateSecretString"][
                "SecretStringTemplate"
            ]
        )["username"]
        for name in ("OwnerDbSecret", "RuntimeDbSecret", "AuditorDbSecret")
    }
    assert secret_users == {
        "OwnerDbSecret": migrate.OWNER_ROLE,
        "RuntimeDbSecret": migrate.RUNTIME_ROLE,
        "AuditorDbSecret": migrate.AUDITOR_ROLE,
    }
    assert migrate.RUNTIME_ROLE != migrate.OWNER_ROLE
    assert len({migrate.RUNTIME_ROLE, migrate.AUDITOR_ROLE, migrate.OWNER_ROLE}) == 3


# -- functions -----------------------------------------------------------------------


def test_mcp_environment_is_what_the_runtime_reads(transformed: dict[str, Any]) -> None:
    env = transformed["Resources"]["McpFunction"]["Properties"]["Environment"]["Variables"]
    assert set(env) == set(runtime.ENVIRONMENT) | set(aws_config.ENVIRONMENT)
    assert env["MANAGEMENT_FUNCTION"] == {"Ref": "ManagementFunction"}
    assert env["SIGNIN_TABLE"] == {"Ref": "SigninTable"}
    assert "USER_POOL_ID" not in env and "AUTH_ISSUER" not in env
    assert env["DB_IAM_AUTH"] == "true"
    # The X-Ray SDK is imported only when traces are recorded.
    assert env["POWERTOOLS_TRACE_DISABLED"] == {"Fn::If": ["TracingActive", "false", "true"]}
    assert env["IDEMPOTENCY_TABLE"] == {"Ref": "IdempotencyTable"}
    assert env["AUDIT_BUS_NAME"] == {"Ref": "AuditBus"}
    # The cursor key is not in the configuration: only where to read it.
    assert env["CURSOR_SECRET_ARN"] == {"Ref": "CursorSecret"}
    assert "CURSOR_SECRET" not in env and "resolve:secretsmanager" not in json.dumps(env)
    sweeper = transformed["Resources"]["AuditSweeperFunction"]["Properties"]["Environment"]
    for url in (env["DATABASE_URL"], sweeper["Variables"]["DATABASE_URL"]):
        assert url["Fn::Sub"][0].endswith("?sslmode=verify-full")


def test_the_migration_function_verifies_the_cluster(transformed: dict[str, Any]) -> None:
    """It sends the master password and sets the roles' passwords: only over TLS that
    checks the cluster's certificate and name (the code refuses anything weaker, and
    adds the RDS roots: tests/infra/test_migrations_function.py)."""
    env = transformed["Resources"]["MigrationFunction"]["Properties"]["Environment"]["Variables"]
    assert env["DB_SSLMODE"] == "verify-full"
    assert "DATABASE_ADMIN_URL" not in env  # the local/test form, which carries no TLS rule


def test_each_route_has_its_own_throttle(sam_template: dict[str, Any]) -> None:
    """Unauthenticated metadata and sign-in requests, admin calls and MCP calls do not
    share one bucket: each route is throttled on its own, and none is left to the
    stage's default."""
    api = sam_template["Resources"]["HttpApi"]["Properties"]
    routes = api["RouteSettings"]
    console = {f"{method.upper()} {path}" for path, method in CONSOLE}
    sign_in = {f"{method.upper()} {path}" for path, method in PUBLIC} - {
        f"GET {METADATA_PATH}",
        *console,
    }
    assert set(routes) == (
        {f"ANY {MCP_PATH}", f"ANY {ADMIN_PATH}", f"GET {METADATA_PATH}"} | sign_in | console
    )
    limits = {
        key: (value["ThrottlingRateLimit"]["Ref"], value["ThrottlingBurstLimit"]["Ref"])
        for key, value in routes.items()
    }
    # One parameter pair per route; the sign-in routes (one client's discovery,
    # registration and authorization) share theirs, the console's files theirs.
    assert len(set(limits.values())) == 5
    assert {limits[key] for key in console} == {("ConsoleRateLimit", "ConsoleBurstLimit")}
    assert {limits[key] for key in sign_in} == {("SigninRateLimit", "SigninBurstLimit")}
    params = sam_template["Parameters"]
    for rate, burst in limits.values():
        assert params[rate]["Default"] <= params[burst]["Default"]
    mcp_rate = params["McpRateLimit"]["Default"]
    for public in (f"GET {METADATA_PATH}", *sign_in, *console):
        assert params[limits[public][0]]["Default"] < mcp_rate, public
    # The routes the functions declare are exactly the keys throttled.
    declared = {
        f"{event['Properties']['Method']} {event['Properties']['Path']}"
        for function in (
            "McpFunction",
            "ManagementFunction",
            "AuthorizationFunction",
            "ConsoleFunction",
        )
        for event in sam_template["Resources"][function]["Properties"]["Events"].values()
        if event["Type"] == "HttpApi"
    }
    assert declared == set(routes)


def test_functions_run_python_312_on_arm64_and_only_the_database_users_in_the_vpc(
    transformed: dict[str, Any],
) -> None:
    for name in FUNCTIONS:
        props = transformed["Resources"][name]["Properties"]
        assert props["Runtime"] == "python3.12" and props["Architectures"] == ["arm64"]
        assert props["LoggingConfig"]["LogGroup"]["Ref"].endswith("LogGroup")
        if name in IN_VPC:
            assert props["VpcConfig"]["SecurityGroupIds"]
        else:
            # The authorizer and the management function talk to Cognito (JWKS,
            # app clients), which a VPC could reach only through a NAT gateway.
            assert "VpcConfig" not in props, name
    mcp = transformed["Resources"]["McpFunction"]["Properties"]
    assert mcp["SnapStart"] == {"ApplyOn": "PublishedVersions"}
    assert resources_of(transformed, "AWS::Lambda::Alias")
    assert transformed["Resources"]["McpFunction"]["DependsOn"] == "DatabaseMigrations" or (
        "DatabaseMigrations" in transformed["Resources"]["McpFunction"]["DependsOn"]
    )


def test_sweeper_runs_every_minute_by_default(sam_template: dict[str, Any]) -> None:
    sweeper = sam_template["Resources"]["AuditSweeperFunction"]["Properties"]
    assert sweeper["Events"]["Sweep"]["Type"] == "Schedule"
    assert sweeper["Events"]["Sweep"]["Properties"]["Schedule"] == {"Ref": "AuditSweepSchedule"}
    assert sam_template["Parameters"]["AuditSweepSchedule"]["Default"] == "rate(1 minute)"
    assert set(sweeper["Environment"]["Variables"]) == {
        "DATABASE_URL",
        "DB_IAM_AUTH",
        "AUDIT_BUS_NAME",
    }


def test_migrations_ship_as_a_layer_of_the_repository_sql(
    sam_template: dict[str, Any], transformed: dict[str, Any]
) -> None:
    layer = sam_template["Resources"]["MigrationsLayer"]
    # infra/ whole: the numbered migrations and, next to them, the current-state files.
    assert layer["Properties"]["ContentUri"] == "infra/"
    assert "Metadata" not in layer  # no build step: packaged exactly as it is
    assert migrate.load_migrations(ROOT / "infra" / "migrations")
    assert migrate.load_schema_files(migrate.schema_dir(ROOT / "infra" / "migrations"))
    props = transformed["Resources"]["MigrationFunction"]["Properties"]
    # Layers mount at /opt: the layer's migrations folder, with its schema folder beside.
    assert props["Environment"]["Variables"]["MIGRATIONS_DIR"] == "/opt/migrations"
    layer_refs = json.dumps(props["Layers"])
    assert "MigrationsLayer" in layer_refs and "CoreLayer" in layer_refs
    custom = transformed["Resources"]["DatabaseMigrations"]
    assert custom["Properties"]["ServiceToken"] == {"Fn::GetAtt": ["MigrationFunction", "Arn"]}
    # A new layer version (changed SQL or shared code) changes the properties: Update.
    assert custom["Properties"]["MigrationsLayer"]["Ref"].startswith("MigrationsLayer")
    assert custom["Properties"]["CoreLayer"]["Ref"].startswith("CoreLayer")


# -- data stores ---------------------------------------------------------------------


def test_database_is_private_encrypted_and_can_pause(
    nested_templates: dict[str, dict[str, Any]],
) -> None:
    db = nested_templates["DatabaseStack"]
    (cluster,) = resources_of(db, "AWS::RDS::DBCluster").values()
    props = cluster["Properties"]
    assert props["StorageEncrypted"] is True and props["Engine"] == "aurora-postgresql"
    assert props["ManageMasterUserPassword"] is True and "MasterUserPassword" not in props
    assert cluster["DeletionPolicy"] == "Snapshot"
    assert props["ServerlessV2ScalingConfiguration"]["MinCapacity"] == {"Ref": "MinCapacity"}
    assert db["Parameters"]["MinCapacity"]["Default"] == 0
    version = db["Parameters"]["EngineVersion"]["Default"]
    assert re.fullmatch(r"16\.\d+", version) and int(version.split(".")[1]) >= 3
    instances = resources_of(db, "AWS::RDS::DBInstance")
    assert instances
    for instance in instances.values():
        assert instance["Properties"]["PubliclyAccessible"] is False
        assert instance["Properties"]["DBInstanceClass"] == "db.serverless"


def test_proxy_requires_iam_and_tls_and_admits_only_the_functions(
    nested_templates: dict[str, dict[str, Any]],
) -> None:
    db = nested_templates["DatabaseStack"]
    (proxy,) = resources_of(db, "AWS::RDS::DBProxy").values()
    assert proxy["Properties"]["RequireTLS"] is True
    auth = proxy["Properties"]["Auth"]
    assert auth and all(a["IAMAuth"] == "REQUIRED" for a in auth)
    assert {a["SecretArn"]["Ref"] for a in auth} == {"RuntimeSecretArn", "AuditorSecretArn"}
    for group in resources_of(db, "AWS::EC2::SecurityGroup").values():
        for rule in group["Properties"].get("SecurityGroupIngress", []):
            assert "CidrIp" not in rule and "CidrIpv6" not in rule  # security groups only
            assert (rule["FromPort"], rule["ToPort"]) == (5432, 5432)


def test_network_has_no_internet_route_and_the_endpoints_it_needs(
    nested_templates: dict[str, dict[str, Any]],
) -> None:
    net = nested_templates["NetworkStack"]
    for kind in ("AWS::EC2::InternetGateway", "AWS::EC2::NatGateway", "AWS::EC2::Route"):
        assert not resources_of(net, kind)
    endpoints = {
        r["Properties"]["ServiceName"]["Fn::Sub"].rsplit(".", 1)[1]: r["Properties"][
            "VpcEndpointType"
        ]
        for r in resources_of(net, "AWS::EC2::VPCEndpoint").values()
    }
    assert endpoints == {
        "dynamodb": "Gateway",
        "s3": "Gateway",  # the custom resource's response URL
        "events": "Interface",
        "secretsmanager": "Interface",
        "lambda": "Interface",  # the admin API invokes the management function
        "bedrock-runtime": "Interface",  # hybrid recall's embeddings (when Embedder=bedrock)
    }
    subnets = resources_of(net, "AWS::EC2::Subnet")
    zones = {json.dumps(s["Properties"]["AvailabilityZone"]) for s in subnets.values()}
    assert len(subnets) == 2 and len(zones) == 2


def test_sign_in_functions_get_what_their_code_reads(
    transformed: dict[str, Any], sam_template: dict[str, Any]
) -> None:
    resources = transformed["Resources"]
    auth_env = resources["AuthorizerFunction"]["Properties"]["Environment"]["Variables"]
    assert set(auth_env) == set(authorizer.ENVIRONMENT)
    assert auth_env["AUTH_ISSUER"] == {
        "Fn::Sub": "https://cognito-idp.${AWS::Region}.amazonaws.com/${UserPool}"
    }
    mgmt_env = resources["ManagementFunction"]["Properties"]["Environment"]["Variables"]
    assert set(mgmt_env) == set(management.ENVIRONMENT)
    # Registration's https allow-list: the parameter's default is the code's default.
    assert mgmt_env["ALLOWED_REDIRECT_URIS"] == {"Ref": "AllowedRedirectUris"}
    parameter = sam_template["Parameters"]["AllowedRedirectUris"]
    assert registration.allowed_redirect_uris(parameter["Default"]) == set(
        registration.DEFAULT_ALLOWED_REDIRECT_URIS
    )
    pattern = re.compile(parameter["AllowedPattern"])
    for good in (parameter["Default"], "", "https://a.example/cb"):
        assert pattern.fullmatch(good), good
    for bad in ("http://a.example/cb", "https://a.example/cb, https://b.example/cb", "*"):
        assert not pattern.fullmatch(bad), bad
    consent_env = resources["AuthorizationFunction"]["Properties"]["Environment"]["Variables"]
    assert set(consent_env) == set(authorization.ENVIRONMENT)
    assert consent_env["CONSENT_SECRET_ARN"] == {"Ref": "ConsentSecret"}
    assert consent_env["OAUTH_BASE_URL"] == mgmt_env["OAUTH_BASE_URL"]
    assert mgmt_env["CLIENT_IDLE_DAYS"] == {"Ref": "RegisteredClientIdleDays"}
    assert sam_template["Parameters"]["RegisteredClientIdleDays"]["Default"] == (
        limits.REGISTERED_CLIENT_IDLE_DAYS
    )
    assert mgmt_env["APP_CLIENT_QUOTA"] == {"Ref": "UserPoolAppClientQuota"}
    quota = sam_template["Parameters"]["UserPoolAppClientQuota"]
    assert quota["Default"] == limits.USER_POOL_APP_CLIENT_QUOTA
    # Whatever the quota is set to, registration keeps a ceiling.
    assert quota["MinValue"] > limits.APP_CLIENTS_RESERVED
    sweep = sam_template["Resources"]["ManagementFunction"]["Properties"]["Events"]["SweepClients"]
    assert sweep["Type"] == "Schedule"
    assert json.loads(sweep["Properties"]["Input"]) == {"action": "sweep_clients"}
    minutes = re.fullmatch(r"rate\((\d+) minutes\)", sweep["Properties"]["Schedule"])
    assert minutes and int(minutes[1]) * 60 == limits.CLIENT_SWEEP_EVERY_S
    table = sam_template["Resources"]["SigninTable"]["Properties"]
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    # Resource binding (RFC 8707) needs the Essentials (or Plus) feature plan.
    assert sam_template["Resources"]["UserPool"]["Properties"]["UserPoolTier"] == "ESSENTIALS"


def test_idempotency_table_is_on_demand_with_ttl(sam_template: dict[str, Any]) -> None:
    table = sam_template["Resources"]["IdempotencyTable"]["Properties"]
    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["KeySchema"] == [{"AttributeName": "id", "KeyType": "HASH"}]
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expiration", "Enabled": True}


def test_audit_bus_has_an_archive(sam_template: dict[str, Any]) -> None:
    resources = sam_template["Resources"]
    assert resources["AuditBus"]["Type"] == "AWS::Events::EventBus"
    assert sam_template["Parameters"]["AuditBusName"]["Default"] == "memory-audit"
    archives = resources_of(sam_template, "AWS::Events::Archive")
    assert [a["Properties"]["SourceArn"] for a in archives.values()] == [
        {"Fn::GetAtt": ["AuditBus", "Arn"]}
    ]


def test_outputs_name_the_endpoint_pool_issuer_bus_and_table(sam_template: dict[str, Any]) -> None:
    outputs = sam_template["Outputs"]
    endpoint = outputs["McpEndpointUrlPattern"]["Value"]["Fn::Sub"]
    assert (
        endpoint == "https://${HttpApi}.execute-api.${AWS::Region}.amazonaws.com/w/{workspace}/mcp"
    )
    for name in (
        "UserPoolId",
        "UserPoolIssuer",
        "AuditBusName",
        "IdempotencyTableName",
        "AuthorizationServerMetadataUrl",
        "RegistrationEndpoint",
        "AuthorizationEndpoint",
        "ManagementFunctionName",
    ):
        assert name in outputs


# -- samconfig -----------------------------------------------------------------------


def test_samconfig_defines_dev_and_prod(sam_template: dict[str, Any]) -> None:
    config = tomllib.loads((ROOT / "samconfig.toml").read_text(encoding="utf-8"))
    for env, stack in (("default", "memory-server-dev"), ("prod", "memory-server-prod")):
        deploy = config[env]["deploy"]["parameters"]
        assert deploy["stack_name"] == stack
        assert deploy["confirm_changeset"] is True
        assert set(deploy["capabilities"].split()) == {"CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND"}
        overrides = dict(re.findall(r'(\w+)="([^"]*)"', deploy["parameter_overrides"]))
        assert overrides["Environment"] == ("prod" if env == "prod" else "dev")
        assert set(overrides) <= set(sam_template["Parameters"]), set(overrides) - set(
            sam_template["Parameters"]
        )
    prod = dict(
        re.findall(
            r'(\w+)="([^"]*)"', config["prod"]["deploy"]["parameters"]["parameter_overrides"]
        )
    )
    assert prod["DbDeletionProtection"] == "true"


def test_hybrid_recall_is_bedrock_by_default_and_off_takes_its_parts_away(
    sam_template: dict[str, Any], nested_templates: dict[str, dict[str, Any]]
) -> None:
    params = sam_template["Parameters"]
    assert params["Embedder"]["Default"] == "bedrock"
    assert params["Embedder"]["AllowedValues"] == ["bedrock", "off"]
    assert params["EmbeddingDimensions"]["AllowedValues"] == ["256", "512", "1024"]
    resources = sam_template["Resources"]
    for function in ("McpFunction", "MigrationFunction"):
        env = resources[function]["Properties"]["Environment"]["Variables"]
        assert env["EMBEDDER"] == {"Ref": "Embedder"}
        assert env["EMBEDDING_DIMENSIONS"] == {"Ref": "EmbeddingDimensions"}
    for role in ("McpRole", "MigrationRole"):
        (policy,) = [
            p["Fn::If"]
            for p in resources[role]["Properties"]["Policies"]
            if "Fn::If" in p and p["Fn::If"][1].get("PolicyName") == "bedrock-embeddings"
        ]
        condition, granted, absent = policy
        assert condition == "EmbedWithBedrock" and absent == {"Ref": "AWS::NoValue"}
        (statement,) = granted["PolicyDocument"]["Statement"]
        assert statement["Action"] == "bedrock:InvokeModel"
        assert statement["Resource"]["Fn::Sub"].endswith(
            "::foundation-model/amazon.titan-embed-text-v2:0"
        )
    schedule = resources["MigrationFunction"]["Properties"]["Events"]["EmbedBacklog"]
    assert schedule["Properties"]["Input"] == '{"operator": "embed"}'
    net = nested_templates["NetworkStack"]
    endpoint = net["Resources"]["BedrockRuntimeEndpoint"]
    assert endpoint["Condition"] == "WithBedrock"
