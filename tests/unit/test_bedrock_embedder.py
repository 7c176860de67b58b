"""The Bedrock embedder through the real botocore client: the request it sends, the
answers it accepts, and every failure mapped to a lexical fallback's reason.

Bedrock's answers come from ``botocore.stub.Stubber`` (moto's bedrock-runtime returns an
empty body for every model, so it cannot stand in for Titan), and, where the client's
own timeouts and retries are what is tested, from an HTTP server on 127.0.0.1 that
answers as Bedrock does.
"""

from __future__ import annotations

import io
import json
import math
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber
from memory_server.data.bedrock_embedder import (
    TITAN_V2,
    BedrockEmbedder,
    bedrock_client,
    titan_max_chars,
)
from memory_server.domain.embedding import Embedder, EmbedderError, EmbeddingUnavailable
from memory_server.domain.limits import EMBED_MAX_ATTEMPTS, TITAN_MAX_TOKENS


def _client() -> Any:
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def _answer(vector: list[float]) -> dict[str, Any]:
    return _reply({"embedding": vector, "inputTextTokenCount": 7})


def _reply(payload: dict[str, Any]) -> dict[str, Any]:
    body = json.dumps(payload).encode()
    return {"body": StreamingBody(io.BytesIO(body), len(body)), "contentType": "application/json"}


def _request(text: str, dimensions: int) -> dict[str, Any]:
    body = {"inputText": text, "dimensions": dimensions, "normalize": True}
    return {
        "modelId": TITAN_V2,
        "body": json.dumps(body, ensure_ascii=False).encode(),
        "contentType": "application/json",
        "accept": "application/json",
    }


def test_the_request_body_and_the_vector() -> None:
    client = _client()
    embedder = BedrockEmbedder(client, dimensions=256)
    port: Embedder = embedder
    assert (port.model, port.dimensions) == (TITAN_V2, 256)
    with Stubber(client) as stub:
        # Titan normalises; a slightly long vector is normalised again here.
        stub.add_response("invoke_model", _answer([0.6, 0.8] + [0.0] * 254), _request("a b", 256))
        stub.add_response("invoke_model", _answer([3.0, 4.0] + [0.0] * 254), _request("é 日", 256))
        vectors = embedder.embed(["  a\n b ", "é 日"])  # whitespace collapsed, UTF-8 kept
        stub.assert_no_pending_responses()
    assert vectors[0][:2] == pytest.approx([0.6, 0.8])
    assert vectors[1][:2] == pytest.approx([0.6, 0.8])
    assert all(math.isclose(sum(v * v for v in vec), 1.0) for vec in vectors)


@pytest.mark.parametrize(
    ("code", "status", "reason"),
    [
        ("ThrottlingException", 429, "throttled"),
        ("ServiceQuotaExceededException", 400, "throttled"),
        ("AccessDeniedException", 403, "denied"),
        ("UnrecognizedClientException", 403, "denied"),
        ("ModelTimeoutException", 408, "timeout"),
        ("ValidationException", 400, "refused"),
        ("InternalServerException", 500, "unavailable"),
        ("ServiceUnavailableException", 503, "unavailable"),
        ("ModelNotReadyException", 429, "throttled"),  # Bedrock sends it as a 429
        ("ResourceNotFoundException", 404, "unavailable"),  # model not in this region
    ],
)
def test_errors_are_unavailable_with_their_reason(code: str, status: int, reason: str) -> None:
    client = _client()
    with Stubber(client) as stub:
        stub.add_client_error("invoke_model", code, "no", http_status_code=status)
        with pytest.raises(EmbeddingUnavailable) as raised:
            BedrockEmbedder(client, dimensions=512).embed(["deploy rules"])
    assert raised.value.reason == reason
    assert code in raised.value.detail


@pytest.mark.parametrize(
    "answer",
    [{"embedding": [0.1] * 100}, {"embedding": None}, {"message": "x"}, {"embedding": [0.0] * 256}],
)
def test_a_malformed_answer_is_unavailable(answer: dict[str, Any]) -> None:
    client = _client()
    with Stubber(client) as stub:
        stub.add_response("invoke_model", _reply(answer))
        with pytest.raises(EmbeddingUnavailable) as raised:
            BedrockEmbedder(client, dimensions=256).embed(["x"])
    assert raised.value.reason == "unavailable"


def test_a_dimension_titan_does_not_offer_is_refused_at_construction() -> None:
    with pytest.raises(EmbedderError, match="256, 512, 1024"):
        BedrockEmbedder(_client(), dimensions=384)


def test_empty_text_is_never_sent() -> None:
    client = _client()
    with Stubber(client) as stub, pytest.raises(ValueError, match="empty"):
        BedrockEmbedder(client).embed([" "])
        stub.assert_no_pending_responses()


def test_long_text_is_cut_to_titans_bounds() -> None:
    english = "deploy " * 20_000  # 140,000 characters
    chinese = "部署规则" * 10_000  # 40,000 characters, each possibly a token
    assert titan_max_chars(english) <= TITAN_MAX_TOKENS * 3
    assert titan_max_chars(chinese) <= TITAN_MAX_TOKENS
    assert titan_max_chars("short text") == 50_000
    client = _client()
    sent: list[str] = []
    client.meta.events.register(
        "before-parameter-build.bedrock-runtime.InvokeModel",
        lambda params, **_: sent.append(json.loads(params["body"])["inputText"]),
    )
    with Stubber(client) as stub:
        for _ in range(2):
            stub.add_response("invoke_model", _answer([1.0] + [0.0] * 1023))
        BedrockEmbedder(client).embed([english, chinese])
    assert len(sent[0]) <= TITAN_MAX_TOKENS * 3 and sent[0].endswith("deploy")  # a whole word
    assert len(sent[1]) <= TITAN_MAX_TOKENS and chinese.startswith(sent[1])


# -- the client's own timeouts and retries, against a server on loopback ----------------


class _Bedrock(BaseHTTPRequestHandler):
    """Answers InvokeModel as the test sets ``mode``: ok, slow, 503 or 429."""

    mode: ClassVar[str] = "ok"
    seen: ClassVar[list[tuple[str, dict[str, Any]]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append((self.path, body))
        if self.mode == "slow":
            time.sleep(1.0)
        if self.mode in ("503", "429"):
            error = "ServiceUnavailableException" if self.mode == "503" else "ThrottlingException"
            self._send(int(self.mode), {"message": "try later"}, error)
        else:
            self._send(200, {"embedding": [1.0] + [0.0] * 255, "inputTextTokenCount": 2})

    def _send(self, status: int, payload: dict[str, Any], error: str | None = None) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if error:
                self.send_header("x-amzn-ErrorType", error)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up first
            pass

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    _Bedrock.mode, _Bedrock.seen = "ok", []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Bedrock)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _embedder(url: str) -> BedrockEmbedder:
    client = bedrock_client(region="us-east-1", endpoint_url=url, read_timeout_s=0.2)
    return BedrockEmbedder(client, dimensions=256)


def test_the_wire_request(server: str) -> None:
    assert _embedder(server).embed(["who owns the deploy rules?"])[0][0] == 1.0
    [(path, body)] = _Bedrock.seen
    assert path == "/model/amazon.titan-embed-text-v2%3A0/invoke"
    assert body == {"inputText": "who owns the deploy rules?", "dimensions": 256, "normalize": True}


@pytest.mark.parametrize(("mode", "reason"), [("503", "unavailable"), ("429", "throttled")])
def test_a_failing_service_is_tried_within_the_budget(server: str, mode: str, reason: str) -> None:
    _Bedrock.mode = mode
    with pytest.raises(EmbeddingUnavailable) as raised:
        _embedder(server).embed(["incident review"])
    assert raised.value.reason == reason
    assert len(_Bedrock.seen) == EMBED_MAX_ATTEMPTS


def test_a_slow_service_times_out(server: str) -> None:
    _Bedrock.mode = "slow"
    started = time.monotonic()
    with pytest.raises(EmbeddingUnavailable) as raised:
        _embedder(server).embed(["vendor contract"])
    assert raised.value.reason == "timeout"
    assert len(_Bedrock.seen) == EMBED_MAX_ATTEMPTS
    assert time.monotonic() - started < 5  # two 0.2 s reads and one backoff, not a hang


def test_no_service_at_all_is_unavailable(server: str) -> None:
    import socket

    with socket.socket() as probe:  # a loopback port that nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(EmbeddingUnavailable) as raised:
        _embedder(f"http://127.0.0.1:{port}").embed(["architecture decision"])
    assert raised.value.reason == "unavailable"
