"""The deployed embedder: Amazon Titan Text Embeddings V2 through Bedrock's InvokeModel.

One ``InvokeModel`` call per text (the model takes one ``inputText``), with
``normalize: true``; the vector is normalised again here, so the port's promise of
unit vectors does not rest on the service alone. The client gives up within the
bounds of ``domain/limits.py`` (``EMBED_*``: short timeouts, botocore's standard retry
mode with one retry), and every way the call can fail (throttled, denied, timed out,
a 5xx, the text refused) is an :class:`EmbeddingUnavailable` whose ``reason`` says
which: the caller searches by words alone and flags it.

Titan reads at most 8,192 tokens and 50,000 characters. Its tokenizer is not public,
so the text is cut to a conservative estimate (:func:`titan_max_chars`) rather than
sent whole and refused.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from memory_server.domain.embedding import (
    EmbedderError,
    EmbeddingUnavailable,
    prepare_text,
    require_text,
)
from memory_server.domain.limits import (
    EMBED_CONNECT_TIMEOUT_S,
    EMBED_MAX_ATTEMPTS,
    EMBED_READ_TIMEOUT_S,
    TITAN_ASCII_CHARS_PER_TOKEN,
    TITAN_MAX_CHARS,
    TITAN_MAX_TOKENS,
)

TITAN_V2 = "amazon.titan-embed-text-v2:0"
TITAN_DIMENSIONS = (256, 512, 1024)

_THROTTLED = {
    "ThrottlingException",
    "TooManyRequestsException",
    "ServiceQuotaExceededException",
}
_DENIED = {
    "AccessDeniedException",
    "UnrecognizedClientException",
    "ExpiredTokenException",
    "InvalidSignatureException",
    "IncompleteSignature",
}
_TIMEOUT = {"ModelTimeoutException", "RequestTimeout", "RequestTimeoutException"}
_REFUSED = {"ValidationException"}


def titan_max_chars(text: str) -> int:
    """The longest prefix of ``text``, in characters, whose estimated token count
    stays within Titan's 8,192 (and never past its 50,000 characters)."""
    budget = TITAN_MAX_TOKENS * TITAN_ASCII_CHARS_PER_TOKEN  # in ASCII-character units
    for n, char in enumerate(text[:TITAN_MAX_CHARS]):
        budget -= 1 if char.isascii() else TITAN_ASCII_CHARS_PER_TOKEN
        if budget < 0:
            return max(n, 1)
    return TITAN_MAX_CHARS


def _within_tokens(text: str) -> str:
    limit = titan_max_chars(text)
    return text if limit >= len(text) else prepare_text(text, limit) or text[:limit]


def bedrock_client(
    *,
    region: str | None = None,
    endpoint_url: str | None = None,
    connect_timeout_s: float = EMBED_CONNECT_TIMEOUT_S,
    read_timeout_s: float = EMBED_READ_TIMEOUT_S,
    max_attempts: int = EMBED_MAX_ATTEMPTS,
) -> Any:
    """A ``bedrock-runtime`` client that gives up within the given bounds (by default
    the query path's; a backfill worker may pass longer ones)."""
    import boto3
    from botocore.config import Config

    config = Config(
        connect_timeout=connect_timeout_s,
        read_timeout=read_timeout_s,
        retries={"total_max_attempts": max_attempts, "mode": "standard"},
    )
    return boto3.client(
        "bedrock-runtime", region_name=region, endpoint_url=endpoint_url, config=config
    )


class BedrockEmbedder:
    """:class:`memory_server.domain.embedding.Embedder` over Titan Text Embeddings V2.

    ``client`` is a ``bedrock-runtime`` client (``bedrock_client()`` when omitted);
    ``dimensions`` is one of Titan V2's 256, 512 or 1024, checked here, at start.
    """

    def __init__(
        self, client: Any = None, *, dimensions: int = 1024, model_id: str = TITAN_V2
    ) -> None:
        if dimensions not in TITAN_DIMENSIONS:
            raise EmbedderError(
                f"{model_id} offers {', '.join(map(str, TITAN_DIMENSIONS))} dimensions, "
                f"not {dimensions}"
            )
        self._client = client if client is not None else bedrock_client()
        self._dimensions = dimensions
        self._model_id = model_id

    @property
    def model(self) -> str:
        """The Bedrock model id; with :attr:`dimensions` it names the vector space
        (Titan's 256-dimension vectors are not a prefix of its 1024 ones)."""
        return self._model_id

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        prepared = require_text(texts, TITAN_MAX_CHARS)
        return [self._one(_within_tokens(text)) for text in prepared]

    def _one(self, text: str) -> list[float]:
        from botocore.exceptions import (
            BotoCoreError,
            ClientError,
            ConnectTimeoutError,
            NoCredentialsError,
            ReadTimeoutError,
        )

        body = {"inputText": text, "dimensions": self._dimensions, "normalize": True}
        try:
            response = self._client.invoke_model(
                modelId=self._model_id,
                body=json.dumps(body, ensure_ascii=False).encode(),
                contentType="application/json",
                accept="application/json",
            )
            answer = json.loads(response["body"].read())
        except ClientError as exc:
            raise _client_error(exc) from exc
        except (ReadTimeoutError, ConnectTimeoutError) as exc:
            raise EmbeddingUnavailable("timeout", str(exc)) from exc
        except NoCredentialsError as exc:
            raise EmbeddingUnavailable("denied", str(exc)) from exc
        except BotoCoreError as exc:  # connection refused or closed, DNS, and the like
            raise EmbeddingUnavailable("unavailable", str(exc)) from exc
        except ValueError as exc:  # a body that is not JSON
            raise EmbeddingUnavailable("unavailable", f"unreadable answer: {exc}") from exc
        return self._vector(answer)

    def _vector(self, answer: Any) -> list[float]:
        vector = answer.get("embedding") if isinstance(answer, dict) else None
        if not isinstance(vector, list) or len(vector) != self._dimensions:
            size = len(vector) if isinstance(vector, list) else "no"
            raise EmbeddingUnavailable(
                "unavailable", f"answer has {size} values, expected {self._dimensions}"
            )
        try:
            values = [float(v) for v in vector]
        except (TypeError, ValueError) as exc:
            raise EmbeddingUnavailable("unavailable", "answer has non-numeric values") from exc
        norm = math.sqrt(sum(v * v for v in values))
        if not math.isfinite(norm) or norm == 0.0:
            raise EmbeddingUnavailable("unavailable", "answer is not a direction")
        return [v / norm for v in values]


def _client_error(exc: Any) -> EmbeddingUnavailable:
    """The ``reason`` for an error Bedrock answered (after botocore's retries)."""
    error = exc.response.get("Error", {})
    code = str(error.get("Code", ""))
    status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
    detail = f"{code} ({status}): {error.get('Message', '')}"
    if code in _THROTTLED or status == 429:
        return EmbeddingUnavailable("throttled", detail)
    if code in _DENIED or status == 403:
        return EmbeddingUnavailable("denied", detail)
    if code in _TIMEOUT or status == 408:
        return EmbeddingUnavailable("timeout", detail)
    if code in _REFUSED:
        return EmbeddingUnavailable("refused", detail)
    return EmbeddingUnavailable("unavailable", detail)  # 5xx, model not ready, unknown
