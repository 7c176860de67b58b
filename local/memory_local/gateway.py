"""An API Gateway HTTP API emulator: Lambda authorizer, payload format 2.0, Lambda proxy.

``sam local`` needs a container runtime, so tests and ``make dev`` run the same
Lambda handlers behind this instead. It does what the deployed HTTP API does for
this service and nothing more:

- routes ``ANY /w/{workspace}/mcp`` and ``ANY /w/{workspace}/admin/{proxy+}`` (the
  Lambda authorizer) and ``GET /.well-known/oauth-protected-resource/w/{workspace}/mcp``
  (public) to the MCP handler, ``GET /.well-known/oauth-authorization-server`` and
  ``POST /register`` (public) to the management handler, ``GET``/``POST /authorize``
  (public: the product's authorization endpoint) to the authorization handler,
  ``GET /console`` and ``GET /console/{proxy+}`` (public: the web console's static
  files) to the console handler; everything else is 404 ``{"message":"Not Found"}``;
- runs the deployed authorizer code (``memory_server.signin.authorizer``) the way
  API Gateway calls it, with its result cache and its answers
  (:mod:`memory_local.authorizer`): 401 ``{"message":"Unauthorized"}`` and 403
  ``{"message":"Forbidden"}`` without any ``WWW-Authenticate`` header, exactly as in
  AWS, so clients find the metadata at the well-known path there and here;
- builds the same v2 event (decoded ``rawPath`` and path parameters, lower-cased
  headers with repeats joined by ``,``, ``cookies``, the authorizer's context) and
  maps the handler's result the way API Gateway does, including a 500 for a handler
  exception or a malformed result and a 503 past the integration timeout;
- stands in for the user pool's endpoints, which in AWS live on the pool's own
  domain: ``GET /.well-known/jwks.json``, ``POST /oauth2/token`` (client credentials,
  authorization code with PKCE, refresh) and ``/oauth2/authorize`` (a small sign-in
  page that picks a demo person; ``login_hint`` skips it), from
  :mod:`memory_local.tokens`;
- with ``origins`` (``make dev`` sets the loopback names), answers only requests
  whose ``Host`` and ``Origin`` pass the rules the MCP route's handler applies
  (:class:`~memory_server.gateway.origins.OriginPolicy`), on every route: the sign-in
  page, ``login_hint``, the token endpoint, registration, metadata, the admin API.
  A loopback server is what DNS rebinding reaches, and the user pool's endpoints it
  stands in for would otherwise hand a rebinding page a person's token. (In AWS the
  API answers only for its own domain, and Cognito serves the sign-in on its own.)
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import queue
import re
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import parse_qs, parse_qsl, quote, unquote, urlsplit

from memory_server.domain.errors import EdgeError
from memory_server.domain.limits import AUTHORIZER_CACHE_TTL_S
from memory_server.gateway.origins import OriginPolicy
from memory_server.signin.authorizer import TokenAuthorizer
from memory_server.signin.verify import KeySet

from .authorizer import LambdaAuthorizer
from .aws import LocalAws
from .lifecycle import StartsAndStops
from .tokens import LocalIssuer

Handler = Callable[[dict[str, Any], Any], Any]
JwksProvider = Callable[[], Mapping[str, Any]]

MAX_REQUEST_BODY = 10 * 1024 * 1024  # API Gateway's payload limit
MAX_LAMBDA_PAYLOAD = 6 * 1024 * 1024  # Lambda's synchronous request and response limit
MCP_ROUTE = "ANY /w/{workspace}/mcp"
ADMIN_ROUTE = "ANY /w/{workspace}/admin/{proxy+}"
METADATA_ROUTE = "GET /.well-known/oauth-protected-resource/w/{workspace}/mcp"
AS_METADATA_PATH = "/.well-known/oauth-authorization-server"
REGISTER_PATH = "/register"
PRODUCT_AUTHORIZE_PATH = "/authorize"  # the product's (signin.authorization)
CONSOLE_PATH = "/console"  # the web console (functions/console)
JWKS_PATH = "/.well-known/jwks.json"
TOKEN_PATH = "/oauth2/token"  # noqa: S105 - a URL path, not a secret
AUTHORIZE_PATH = "/oauth2/authorize"
ACCOUNT_ID = "123456789012"  # moto's default account
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
# Response headers API Gateway computes itself, whatever the function returned.
_HOP_BY_HOP = frozenset({"content-length", "transfer-encoding", "connection", "keep-alive"})
_TOKEN_CHARS = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # RFC 9110 field-name


# -- routes ------------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    key: str  # the routeKey API Gateway puts in the event
    method: str | None  # None: ANY
    pattern: re.Pattern[str]  # over the decoded path; named groups are path parameters
    target: Literal[
        "lambda", "management", "authorization", "console", "jwks", "token", "authorize"
    ]
    authorized: bool = False  # behind the Lambda authorizer


ROUTES: tuple[Route, ...] = (
    Route(
        ADMIN_ROUTE,
        None,
        re.compile(r"^/w/(?P<workspace>[^/]+)/admin/(?P<proxy>.+)$"),
        "lambda",
        authorized=True,
    ),
    Route(MCP_ROUTE, None, re.compile(r"^/w/(?P<workspace>[^/]+)/mcp$"), "lambda", authorized=True),
    Route(
        METADATA_ROUTE,
        "GET",
        re.compile(r"^/\.well-known/oauth-protected-resource/w/(?P<workspace>[^/]+)/mcp$"),
        "lambda",
    ),
    Route(
        f"GET {AS_METADATA_PATH}",
        "GET",
        re.compile(rf"^{re.escape(AS_METADATA_PATH)}$"),
        "management",
    ),
    Route(
        f"POST {REGISTER_PATH}", "POST", re.compile(rf"^{re.escape(REGISTER_PATH)}$"), "management"
    ),
    *(
        Route(
            f"{method} {PRODUCT_AUTHORIZE_PATH}",
            method,
            re.compile(rf"^{re.escape(PRODUCT_AUTHORIZE_PATH)}$"),
            "authorization",
        )
        for method in ("GET", "POST")
    ),
    # The front door's token and revocation endpoints, and the pool's way back for
    # document clients.
    Route("POST /token", "POST", re.compile(r"^/token$"), "authorization"),
    Route("POST /revoke", "POST", re.compile(r"^/revoke$"), "authorization"),
    Route("GET /authorize/callback", "GET", re.compile(r"^/authorize/callback$"), "authorization"),
    Route(f"GET {CONSOLE_PATH}", "GET", re.compile(rf"^{re.escape(CONSOLE_PATH)}$"), "console"),
    Route(
        f"GET {CONSOLE_PATH}/{{proxy+}}",
        "GET",
        re.compile(rf"^{re.escape(CONSOLE_PATH)}/(?P<proxy>.*)$"),
        "console",
    ),
    # The user pool's endpoints (its own domain in AWS).
    Route(f"GET {JWKS_PATH}", "GET", re.compile(rf"^{re.escape(JWKS_PATH)}$"), "jwks"),
    Route(f"POST {TOKEN_PATH}", "POST", re.compile(rf"^{re.escape(TOKEN_PATH)}$"), "token"),
    Route("POST /oauth2/revoke", "POST", re.compile(r"^/oauth2/revoke$"), "token"),
    Route(
        f"GET {AUTHORIZE_PATH}", "GET", re.compile(rf"^{re.escape(AUTHORIZE_PATH)}$"), "authorize"
    ),
    Route(
        f"POST {AUTHORIZE_PATH}", "POST", re.compile(rf"^{re.escape(AUTHORIZE_PATH)}$"), "authorize"
    ),
)


def match_route(method: str, path: str) -> tuple[Route, dict[str, str]] | None:
    for route in ROUTES:
        found = route.pattern.match(path)
        if found and (route.method is None or route.method == method):
            return route, found.groupdict()
    return None


def claim_string(value: Any) -> str:
    """A claim as the authorizer context shows it: everything becomes a string.

    Arrays read ``[a b]`` (as API Gateway renders ``cognito:groups``), numbers and
    booleans their JSON text, objects their JSON.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list):
        return "[" + " ".join(claim_string(item) for item in value) + "]"
    return json.dumps(value, separators=(",", ":"))


# -- requests, responses, the Lambda context ------------------------------------


@dataclass
class HttpRequest:
    method: str
    target: str  # the request-target as sent: path and query, still encoded
    headers: list[tuple[str, str]]  # in arrival order, repeats kept
    body: bytes
    source_ip: str
    body_too_large: bool = False

    def header(self, name: str) -> str | None:
        """A header's value, repeats joined with ``,`` (as the event shows them)."""
        name = name.lower()
        values = [v for k, v in self.headers if k.lower() == name]
        return ",".join(values) if values else None


@dataclass
class HttpResponse:
    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    close: bool = False
    note: str = ""  # why, for the log line only (never sent to the client)


def _json_response(
    status: int, payload: Any, headers: Iterable[tuple[str, str]] = ()
) -> HttpResponse:
    body = json.dumps(payload, separators=(",", ":")).encode()
    return HttpResponse(status, [("Content-Type", "application/json"), *headers], body)


def _message(status: int, message: str) -> HttpResponse:
    return _json_response(status, {"message": message})


@dataclass
class LambdaContext:
    """What the Python runtime passes as ``context`` (the parts handlers use)."""

    aws_request_id: str
    function_name: str
    memory_limit_in_mb: str  # a string in the real runtime (read from the environment)
    invoked_function_arn: str
    deadline: float  # time.monotonic() at which the function times out
    function_version: str = "$LATEST"
    log_group_name: str = ""
    log_stream_name: str = "local"
    identity: Any = None
    client_context: Any = None

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.deadline - time.monotonic()) * 1000))


# -- the gateway ----------------------------------------------------------------


class ApiGateway(StartsAndStops):
    """The HTTP API in front of ``handler``, served on ``host:port`` from a thread.

    ``issuer`` is either the :class:`LocalIssuer` (its ``issuer`` is the expected
    ``iss``, its key set verifies tokens and is served at ``/.well-known/jwks.json``,
    and with ``aws`` it backs ``/oauth2/token`` and ``/oauth2/authorize``) or just the
    expected ``iss``, with ``jwks`` saying where keys come from. ``jwks`` may be given
    with a LocalIssuer too, e.g. this gateway's own JWKS URL, to exercise the fetch path.

    ``authorizer`` is the Lambda authorizer's handler; by default the deployed
    ``TokenAuthorizer`` over that issuer and key set, with this gateway's URL as the
    public base URL (made on ``start``). ``management`` is the management function's
    handler (RFC 8414 metadata, registration), ``authorization`` the authorization
    function's (``/authorize``) and ``console`` the console function's (``/console/``);
    without them those routes answer 404.

    ``max_concurrency`` bounds simultaneous invocations (1 imitates one Lambda
    container for a handler whose per-container state is not thread-safe); by
    default requests run concurrently, as many containers would.

    ``origins``, when given, is checked on every request before anything else (see
    the module's docstring).
    """

    def __init__(
        self,
        handler: Handler,
        *,
        issuer: LocalIssuer | str,
        aws: LocalAws | None = None,
        jwks: str | JwksProvider | None = None,
        authorizer: Handler | None = None,
        management: Handler | None = None,
        authorization: Handler | None = None,
        console: Handler | None = None,
        authorizer_ttl_s: float = AUTHORIZER_CACHE_TTL_S,
        host: str = "127.0.0.1",
        port: int = 0,
        quiet: bool = False,
        function_name: str = "McpFunction",
        timeout_s: float = 30.0,
        memory_limit_in_mb: int = 1024,
        max_concurrency: int | None = None,
        origins: OriginPolicy | None = None,
    ) -> None:
        self.handler = handler
        self.origins = origins
        self.local_issuer = issuer if isinstance(issuer, LocalIssuer) else None
        if jwks is None:
            if self.local_issuer is None:
                raise ValueError("give jwks (a URL or a provider) with an issuer string")
            jwks = self.local_issuer.jwks
        self.issuer_url = issuer.issuer if isinstance(issuer, LocalIssuer) else issuer
        self.jwks = jwks
        self.authorizer_handler = authorizer
        self.authorizer = LambdaAuthorizer(self._authorize, ttl_s=authorizer_ttl_s)
        self.management = management
        self.authorization = authorization
        self.console = console
        self.aws = aws
        self.host = host
        self.port = port
        self.quiet = quiet
        self.function_name = function_name
        self.timeout_s = timeout_s
        self.memory_limit_in_mb = memory_limit_in_mb
        self.api_id = "local"
        self._slots = threading.BoundedSemaphore(max_concurrency) if max_concurrency else None
        self._invoker = _Invoker()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._log_lock = threading.Lock()

    # -- lifecycle --

    def start(self) -> ApiGateway:
        if self._server is not None:
            return self
        server = _Server((self.host, self.port), _RequestHandler)
        server.gateway = self
        self.port = int(server.server_address[1])
        self._server = server
        if self.authorizer_handler is None:
            # As the template configures it: the pool's issuer and keys, and the
            # service's public origin (this gateway) for RFC 8707 resources.
            self.authorizer_handler = TokenAuthorizer(
                self.issuer_url, KeySet(self.jwks), public_base_url=self.url
            ).authorize
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name=f"apigw-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._invoker.stop()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("ApiGateway is not started")
        return f"http://{self.host}:{self.port}"

    def mcp_url(self, workspace: str) -> str:
        return f"{self.url}/w/{_segment(workspace)}/mcp"

    def resource_metadata_url(self, workspace: str) -> str:
        return f"{self.url}/.well-known/oauth-protected-resource/w/{_segment(workspace)}/mcp"

    def log(self, line: str) -> None:
        with self._log_lock:
            sys.stderr.write(f"apigw: {line}\n")
            sys.stderr.flush()

    # -- request handling --

    def handle(self, request: HttpRequest) -> HttpResponse:
        """One request, start to finish; never raises."""
        request_id = base64.b64encode(os.urandom(10)).decode()
        try:
            response = self._route(request, request_id)
        except Exception:
            self.log(f"internal error {request_id}:\n{traceback.format_exc()}")
            response = _message(500, "Internal Server Error")
        response.headers.append(("apigw-requestid", request_id))
        return response

    def _route(self, request: HttpRequest, request_id: str) -> HttpResponse:
        if request.body_too_large:
            response = _message(413, "Request Entity Too Large")
            response.close = True
            return response
        refused = self._foreign(request)
        if refused is not None:
            return refused
        parts = urlsplit(request.target)
        # HTTP APIs match routes on, and pass, the decoded path.
        path = unquote(parts.path, errors="replace")
        matched = match_route(request.method, path)
        if matched is None:
            return _message(404, "Not Found")
        route, parameters = matched
        if route.target == "jwks":
            if self.local_issuer is None:
                return _message(404, "Not Found")
            return _json_response(200, self.local_issuer.jwks())
        if route.target == "token":
            return self._token(request)

        if route.target == "authorize":
            return self._authorize_page(request)
        if route.target == "management":
            if self.management is None:
                return _message(404, "Not Found")
            event = self.build_event(request, route, parameters, None, request_id)
            return self._invoke(event, self.management, "ManagementFunction")
        if route.target == "authorization":
            if self.authorization is None:
                return _message(404, "Not Found")
            event = self.build_event(request, route, parameters, None, request_id)
            return self._invoke(event, self.authorization, "AuthorizationFunction")
        if route.target == "console":
            if self.console is None:
                return _message(404, "Not Found")
            event = self.build_event(request, route, parameters, None, request_id)
            return self._invoke(event, self.console, "ConsoleFunction")

        context: dict[str, Any] | None = None
        if route.authorized:
            event = self.build_event(request, route, parameters, None, request_id)
            outcome = self.authorizer.authorize(
                self.authorizer_event(event), request.header("authorization")
            )
            if outcome.kind != "allow":
                message = {401: "Unauthorized", 403: "Forbidden"}.get(
                    outcome.status, "Internal Server Error"
                )
                response = _message(outcome.status, message)
                response.note = outcome.note.strip().splitlines()[-1] if outcome.note else ""
                return response
            context = outcome.context
        event = self.build_event(request, route, parameters, context, request_id)
        return self._invoke(event)

    def _foreign(self, request: HttpRequest) -> HttpResponse | None:
        """The 403 for a request from a host name or web origin not allowed here."""
        if self.origins is None:
            return None
        seen = {
            "headers": {name.lower(): request.header(name) for name, _ in request.headers},
            "requestContext": {"domainName": f"{self.host}:{self.port}"},
        }
        try:
            self.origins.check(seen)
        except EdgeError as refused:
            response = _json_response(refused.status, refused.body or {"error": refused.code})
            response.note = refused.code
            return response
        return None

    def _authorize(self, event: dict[str, Any], context: Any) -> Any:
        """The Lambda authorizer's handler (set on ``start`` unless one was given)."""
        assert self.authorizer_handler is not None, "ApiGateway is not started"
        return self.authorizer_handler(event, context)

    def authorizer_event(self, event: dict[str, Any]) -> dict[str, Any]:
        """The payload 2.0 REQUEST authorizer event for a request's integration event:
        the same fields without the body, plus the identity sources and route ARN."""
        context = event["requestContext"]
        method = context["http"]["method"]
        return {
            "version": "2.0",
            "type": "REQUEST",
            "routeArn": (
                f"arn:aws:execute-api:us-east-1:{ACCOUNT_ID}:{self.api_id}/$default/"
                f"{method}{event['rawPath']}"
            ),
            "identitySource": [event["headers"].get("authorization", ""), event["routeKey"]],
            **{k: v for k, v in event.items() if k not in ("body", "isBase64Encoded")},
        }

    def _authorize_page(self, request: HttpRequest) -> HttpResponse:
        if self.local_issuer is None or self.aws is None:
            return _message(404, "Not Found")
        if request.method == "POST":
            content_type = (request.header("content-type") or "").split(";")[0].strip().lower()
            if content_type != "application/x-www-form-urlencoded":
                return _message(400, "Bad Request")
            raw = request.body.decode("utf-8", errors="replace")
        else:
            raw = urlsplit(request.target).query
        fields = parse_qs(raw, keep_blank_values=True)
        status, headers, body = self.local_issuer.authorize(
            self.aws, fields, submitted=request.method == "POST"
        )
        return HttpResponse(status, list(headers.items()), body)

    def _token(self, request: HttpRequest) -> HttpResponse:
        if self.local_issuer is None or self.aws is None:
            return _message(404, "Not Found")
        content_type = (request.header("content-type") or "").split(";")[0].strip().lower()
        if content_type != "application/x-www-form-urlencoded":
            return _json_response(
                400,
                {"error": "invalid_request", "error_description": "Expected a form body"},
            )
        try:
            form = parse_qs(request.body.decode("utf-8"), keep_blank_values=True)
        except (UnicodeDecodeError, ValueError):
            return _json_response(
                400, {"error": "invalid_request", "error_description": "Malformed form"}
            )
        if urlsplit(request.target).path == "/oauth2/revoke":
            status, payload, headers = self.local_issuer.revoke(
                self.aws, form=form, authorization=request.header("authorization")
            )
            return _json_response(status, payload, headers.items())
        status, payload, headers = self.local_issuer.token_endpoint(
            self.aws, form=form, authorization=request.header("authorization")
        )
        return _json_response(status, payload, headers.items())

    def build_event(
        self,
        request: HttpRequest,
        route: Route,
        path_parameters: Mapping[str, str],
        authorizer_context: Mapping[str, Any] | None,
        request_id: str,
    ) -> dict[str, Any]:
        """The payload format 2.0 event API Gateway would send for this request."""
        parts = urlsplit(request.target)
        path, raw_query = unquote(parts.path, errors="replace"), parts.query
        headers: dict[str, str] = {}
        cookies: list[str] = []
        for name, value in request.headers:
            lower = name.lower()
            if lower == "cookie":  # 2.0 moves cookies out of the headers
                cookies += [c.strip() for c in value.split(";") if c.strip()]
                continue
            headers[lower] = f"{headers[lower]},{value}" if lower in headers else value
        forwarded = headers.get("x-forwarded-for")
        headers["x-forwarded-for"] = (
            f"{forwarded}, {request.source_ip}" if forwarded else request.source_ip
        )
        headers["x-forwarded-port"] = str(self.port)
        headers["x-forwarded-proto"] = "http"
        headers["x-amzn-trace-id"] = f"Root=1-{int(time.time()):08x}-{uuid.uuid4().hex[:24]}"

        now = time.time()
        stamp = time.gmtime(now)
        domain = f"{self.host}:{self.port}"
        context: dict[str, Any] = {
            "accountId": ACCOUNT_ID,
            "apiId": self.api_id,
            "domainName": domain,
            "domainPrefix": self.host.split(".")[0],
            "http": {
                "method": request.method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": request.source_ip,
                "userAgent": headers.get("user-agent", ""),
            },
            "requestId": request_id,
            "routeKey": route.key,
            "stage": "$default",
            "time": (
                f"{stamp.tm_mday:02d}/{_MONTHS[stamp.tm_mon - 1]}/{stamp.tm_year}:"
                f"{stamp.tm_hour:02d}:{stamp.tm_min:02d}:{stamp.tm_sec:02d} +0000"
            ),
            "timeEpoch": int(now * 1000),
        }
        if authorizer_context is not None:
            context["authorizer"] = {"lambda": dict(authorizer_context)}
        event: dict[str, Any] = {
            "version": "2.0",
            "routeKey": route.key,
            "rawPath": path,
            "rawQueryString": raw_query,
        }
        if cookies:
            event["cookies"] = cookies
        event["headers"] = headers
        if raw_query:
            query: dict[str, str] = {}
            for name, value in parse_qsl(raw_query, keep_blank_values=True):
                query[name] = f"{query[name]},{value}" if name in query else value
            event["queryStringParameters"] = query
        if path_parameters:
            event["pathParameters"] = dict(path_parameters)
        event["requestContext"] = context
        if request.body:
            try:
                event["body"] = request.body.decode("utf-8")
                event["isBase64Encoded"] = False
            except UnicodeDecodeError:
                event["body"] = base64.b64encode(request.body).decode()
                event["isBase64Encoded"] = True
        else:
            event["isBase64Encoded"] = False
        return event

    def _invoke(
        self, event: dict[str, Any], handler: Handler | None = None, function_name: str = ""
    ) -> HttpResponse:
        """Run a handler (the MCP function's unless given) in its own thread, bounded by
        the integration timeout."""
        handler = handler or self.handler
        function_name = function_name or self.function_name
        request_id = str(event["requestContext"]["requestId"])
        if len(json.dumps(event).encode()) > MAX_LAMBDA_PAYLOAD:
            # Lambda refuses a synchronous invocation over 6 MB, so a body API
            # Gateway accepted (up to 10 MB) can still never reach the function.
            response = _message(413, "Request Entity Too Large")
            response.note = f"event exceeds Lambda's {MAX_LAMBDA_PAYLOAD} bytes"
            return response
        deadline = time.monotonic() + self.timeout_s
        if self._slots is not None and not self._slots.acquire(timeout=self.timeout_s):
            self.log(f"{request_id}: no free slot within {self.timeout_s}s")
            return _message(503, "Service Unavailable")
        context = LambdaContext(
            aws_request_id=str(uuid.uuid4()),
            function_name=function_name,
            memory_limit_in_mb=str(self.memory_limit_in_mb),
            invoked_function_arn=(
                f"arn:aws:lambda:us-east-1:{ACCOUNT_ID}:function:{function_name}"
            ),
            deadline=deadline,
            log_group_name=f"/aws/lambda/{function_name}",
        )
        outcome: list[tuple[bool, Any]] = []
        done = threading.Event()

        def run() -> None:
            try:
                outcome.append((True, handler(event, context)))
            except BaseException:
                outcome.append((False, traceback.format_exc()))
            finally:
                if self._slots is not None:
                    self._slots.release()
                done.set()

        self._invoker.run(run)
        done.wait(max(0.0, deadline - time.monotonic()))
        if not outcome:
            # API Gateway gives up at its integration timeout; the function runs on.
            self.log(f"{request_id}: handler still running after {self.timeout_s}s")
            return _message(503, "Service Unavailable")
        ok, value = outcome[0]
        if not ok:
            self.log(f"{request_id}: handler raised:\n{value}")
            return _message(500, "Internal Server Error")
        return self.map_result(value, request_id)

    def map_result(self, result: Any, request_id: str = "-") -> HttpResponse:
        """The HTTP response API Gateway makes of a function result (payload 2.0)."""
        # The runtime serialises the result as JSON; what does not serialise, or is
        # over Lambda's response limit, is a function error, so 500.
        try:
            payload = json.dumps(result)
        except (TypeError, ValueError) as exc:
            self.log(f"{request_id}: result is not JSON-serialisable: {exc}")
            return _message(500, "Internal Server Error")
        if len(payload.encode()) > MAX_LAMBDA_PAYLOAD:
            self.log(f"{request_id}: result exceeds Lambda's {MAX_LAMBDA_PAYLOAD} bytes")
            return _message(500, "Internal Server Error")
        value = json.loads(payload)
        if not (isinstance(value, dict) and "statusCode" in value):
            # No statusCode: 200, and the result itself is the JSON body.
            body = value if isinstance(value, str) else payload
            return HttpResponse(200, [("Content-Type", "application/json")], body.encode())
        try:
            return _structured_response(value)
        except ValueError as exc:
            self.log(f"{request_id}: malformed function response: {exc}")
            return _message(500, "Internal Server Error")


def _structured_response(value: dict[str, Any]) -> HttpResponse:
    status = value["statusCode"]
    if not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599:
        raise ValueError(f"statusCode {status!r}")
    headers: list[tuple[str, str]] = []
    raw_headers = value.get("headers") or {}
    if not isinstance(raw_headers, dict):
        raise ValueError("headers is not an object")
    for name, raw in raw_headers.items():
        if name.lower() in _HOP_BY_HOP:
            continue
        if isinstance(raw, dict | list) or raw is None:
            raise ValueError(f"header {name!r} is not a scalar")
        text = claim_string(raw)
        headers.append((name, text))
    # Payload 2.0 has no multiValueHeaders: API Gateway ignores them, so do we.
    for cookie in value.get("cookies") or []:
        if not isinstance(cookie, str):
            raise ValueError("cookies must be strings")
        headers.append(("Set-Cookie", cookie))
    for name, text in headers:
        if not _TOKEN_CHARS.match(name) or any(c in text for c in "\r\n\0"):
            raise ValueError(f"header {name!r} is not valid in HTTP")
    body = value.get("body")
    if body is None:
        data = b""
    elif not isinstance(body, str):
        raise ValueError("body is not a string")
    elif value.get("isBase64Encoded") is True:
        try:
            data = base64.b64decode(body, validate=True)
        except binascii.Error as exc:
            raise ValueError(f"body is not base64: {exc}") from None
    else:
        data = body.encode()
    return HttpResponse(status, headers, data)


def _segment(workspace: str) -> str:
    """A path segment for a URL we print: percent-encoded, so no quote or CRLF gets in."""
    return quote(workspace, safe="-._~!$&'()*+,;=:@")


class _Invoker:
    """Runs invocations on daemon threads that are reused, as Lambda reuses warm
    containers: starting a thread for each call cost the emulator more CPU than the
    rest of its work for that call. A thread still busy past the integration timeout
    stays busy (the function runs on, as in Lambda); the next call takes another."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[queue.SimpleQueue[Callable[[], None] | None]] = []
        self._stopped = False

    def run(self, job: Callable[[], None]) -> None:
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
        if inbox is None:
            inbox = queue.SimpleQueue()
            threading.Thread(target=self._serve, args=(inbox,), name="lambda", daemon=True).start()
        inbox.put(job)

    def _serve(self, inbox: queue.SimpleQueue[Callable[[], None] | None]) -> None:
        while (job := inbox.get()) is not None:
            job()  # never raises (ApiGateway._invoke's run)
            with self._lock:
                if self._stopped:
                    return
                self._idle.append(inbox)

    def stop(self) -> None:
        """End the idle threads now and the busy ones when their call returns."""
        with self._lock:
            self._stopped = True
            idle, self._idle = self._idle, []
        for inbox in idle:
            inbox.put(None)


# -- the HTTP layer -------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog (5) resets connections when dozens of clients
    # connect at once; a real API Gateway does not.
    request_queue_size = 128
    gateway: ApiGateway


class _RequestHandler(BaseHTTPRequestHandler):
    """Turns HTTP/1.1 into :class:`HttpRequest` and back; the gateway decides."""

    server: _Server
    protocol_version = "HTTP/1.1"  # keep-alive, as clients expect of API Gateway
    timeout = 30  # idle keep-alive connections do not hold a thread for ever
    # TCP_NODELAY on every accepted connection: a response is also written in one
    # piece (_write), but nothing the server sends may wait for the client's delayed
    # ACK of what it sent before (the Nagle / delayed-ACK stall on kept-alive
    # connections, ~40 ms a call).
    disable_nagle_algorithm = True

    def _handle(self) -> None:
        started = time.monotonic()
        gateway = self.server.gateway
        request = self._read_request()
        if request is None:
            return
        response = gateway.handle(request)
        self._write(response)
        if not gateway.quiet:
            elapsed = (time.monotonic() - started) * 1000
            path = urlsplit(self.path).path
            note = f" ({response.note})" if response.note else ""
            gateway.log(f"{self.command} {path} {response.status} {elapsed:.1f}ms{note}")

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_HEAD = _handle

    def _read_request(self) -> HttpRequest | None:
        headers: Message = self.headers
        request = HttpRequest(
            method=self.command,
            target=self.path,
            headers=[(k, v) for k, v in headers.items()],
            body=b"",
            source_ip=self.client_address[0],
        )
        try:
            if (headers.get("Transfer-Encoding") or "").lower() == "chunked":
                body = self._read_chunked()
            else:
                length = int(headers.get("Content-Length") or 0)
                if length < 0:
                    raise ValueError(length)
                body = None if length > MAX_REQUEST_BODY else self.rfile.read(length)
        except ValueError:  # a malformed length or chunk size
            self._write(_message(400, "Bad Request"), close=True)
            return None
        if body is None:
            request.body_too_large = True
        else:
            request.body = body
        return request

    def _read_chunked(self) -> bytes | None:
        chunks: list[bytes] = []
        total = 0
        while True:
            size_line = self.rfile.readline(1024).split(b";")[0].strip()
            size = int(size_line or b"0", 16)
            if size == 0:
                while self.rfile.readline(1024).strip():  # trailers
                    pass
                return b"".join(chunks)
            total += size
            if total > MAX_REQUEST_BODY:
                return None
            chunks.append(self.rfile.read(size))
            self.rfile.readline(1024)  # the CRLF after each chunk

    def _write(self, response: HttpResponse, *, close: bool = False) -> None:
        # send_response_only: no ``Server`` header (API Gateway sends none).
        self.send_response_only(response.status)
        self.send_header("Date", self.date_time_string())
        for name, value in response.headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(response.body)))
        if close or response.close:
            self.send_header("Connection", "close")
            self.close_connection = True
        # Status line, headers and body leave in one write (end_headers would send
        # the head on its own, and the body after it).
        # (An HTTP/0.9 request gets no head at all: no buffer.)
        head: list[bytes] = getattr(self, "_headers_buffer", [])
        if head:
            head.append(b"\r\n")
        body = response.body if self.command != "HEAD" else b""
        self._headers_buffer: list[bytes] = []
        self.wfile.write(b"".join([*head, body]))
        self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        """Silenced: the gateway logs one line per request itself."""
