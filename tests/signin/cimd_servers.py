"""Local https servers for the metadata-document fetch, and the certificate they share.

Each server answers every request with what its ``behaviour`` says (a document, a
redirect, a slow or endless body) and counts the requests it got, so a test can show
that a refused fetch never reached it. The fetcher is pointed at them through a fake
resolver: a name of the test's choosing resolves to whatever address the test says.
"""

from __future__ import annotations

import datetime
import socket
import ssl
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

HOSTS = ("client.test", "other.test")


@dataclass(frozen=True)
class Certificate:
    cert_pem: bytes
    key_pem: bytes

    def client_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cadata=self.cert_pem.decode())

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        with tempfile.TemporaryDirectory() as folder:
            cert, key = Path(folder, "cert.pem"), Path(folder, "key.pem")
            cert.write_bytes(self.cert_pem)
            key.write_bytes(self.key_pem)
            context.load_cert_chain(cert, key)
        return context


def make_certificate(hosts: tuple[str, ...] = HOSTS) -> Certificate:
    """A self-signed certificate for ``hosts``, its own authority."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(h) for h in hosts]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    return Certificate(
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )


# What a server sends on its socket: (the TLS socket, the request's head) -> None.
Behaviour = Callable[[ssl.SSLSocket, bytes], None]


def answer(body: bytes, status: str = "200 OK", headers: dict[str, str] | None = None) -> Behaviour:
    def send(sock: ssl.SSLSocket, request: bytes) -> None:
        lines = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", "Connection: close"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)

    return send


def drip(every_s: float, chunk: bytes = b" ") -> Behaviour:
    """A 200 whose body comes one small chunk at a time, never ending."""

    def send(sock: ssl.SSLSocket, request: bytes) -> None:
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{")
        while True:
            time.sleep(every_s)
            sock.sendall(chunk)

    return send


def endless(chunk: bytes = b" " * 65536) -> Behaviour:
    """A 200 without a length whose body never ends, as fast as it can."""

    def send(sock: ssl.SSLSocket, request: bytes) -> None:
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n[")
        while True:
            sock.sendall(chunk)

    return send


def by_url(documents: dict[str, bytes], headers: dict[str, str] | None = None) -> Behaviour:
    """Each https URL's own body (by the request's Host and path), 404 for any other."""

    def send(sock: ssl.SSLSocket, request: bytes) -> None:
        head = request.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
        path = head[0].split(" ")[1]
        host = next(
            (
                line.split(":", 1)[1].strip()
                for line in head[1:]
                if line.lower().startswith("host:")
            ),
            "",
        )
        # The test server's port is in Host; the documents' URLs name none (443).
        body = documents.get(f"https://{host.rsplit(':', 1)[0]}{path}")
        if body is None:
            answer(b"not here", "404 Not Found")(sock, request)
        else:
            answer(body, headers={"Content-Type": "application/json", **(headers or {})})(
                sock, request
            )

    return send


@dataclass
class Server:
    port: int
    behaviour: Behaviour
    requests: list[bytes] = field(default_factory=list)


@contextmanager
def https_server(certificate: Certificate, behaviour: Behaviour) -> Iterator[Server]:
    """A server on 127.0.0.1 that runs ``behaviour`` for each request it reads."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    server = Server(listener.getsockname()[1], behaviour)
    context = certificate.server_context()
    stop = threading.Event()

    def serve_one(raw: socket.socket) -> None:
        try:
            with context.wrap_socket(raw, server_side=True) as sock:
                sock.settimeout(5)
                request = b""
                while b"\r\n\r\n" not in request:
                    data = sock.recv(4096)
                    if not data:
                        return
                    request += data
                server.requests.append(request)
                server.behaviour(sock, request)
        except OSError:
            pass  # the client hung up: what a refused fetch does

    def serve() -> None:
        while not stop.is_set():
            try:
                raw, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=serve_one, args=(raw,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        stop.set()
        thread.join(2)
        listener.close()
