"""A private PostgreSQL server for tests and ``make dev``.

Binaries come from the ``pgserver`` wheel (PostgreSQL 16, pip-installed) or, failing
that, the system's. PostgreSQL refuses to run as root, so under root the server runs
as the unprivileged ``nobody`` user; only directories this module creates (inside
the project) change owner. It listens on a loopback port only, with password
(SCRAM) authentication, and no Unix socket.
"""

from __future__ import annotations

import contextlib
import glob
import importlib.util
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg

SUPERUSER = "postgres"
RUN_AS = "nobody"
OWNER_FILE = "owner.pid"  # the process that started the server, beside the data folder
STALE_STOP_TIMEOUT_S = 30.0


class EmbeddedPostgresError(RuntimeError):
    pass


def find_bin_dir() -> Path:
    """Directory holding ``initdb`` and ``postgres``."""
    override = os.environ.get("PG_BIN")
    candidates: list[Path] = [Path(override)] if override else []
    spec = importlib.util.find_spec("pgserver")
    if spec and spec.origin:
        candidates.append(Path(spec.origin).parent / "pginstall" / "bin")
    candidates += [Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)]
    for candidate in candidates:
        if (candidate / "postgres").exists() and (candidate / "initdb").exists():
            return candidate
    raise EmbeddedPostgresError(
        "no PostgreSQL binaries found: install the pgserver wheel (make install) "
        "or set PG_BIN, or set DATABASE_URL to use an existing server"
    )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _parent_and_state(pid: int) -> tuple[int, str] | None:
    """``(parent pid, state letter)`` of a process, or None when there is none."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), fields[0]


def _alive(pid: int) -> bool:
    found = _parent_and_state(pid)
    return found is not None and found[1] != "Z"


def running_postmaster(data_dir: Path) -> int | None:
    """The postmaster that ``data_dir/postmaster.pid`` names, when that process is
    alive and is ``postgres -D data_dir`` (not a stale file, nor a reused pid)."""
    try:
        pid = int((data_dir / "postmaster.pid").read_text().split()[0])
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError, IndexError):
        return None
    args = [os.fsdecode(arg) for arg in argv]
    if not args or Path(args[0]).name != "postgres" or not _alive(pid):
        return None
    named = [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "-D"]
    if not any(Path(d).resolve() == data_dir.resolve() for d in named):
        return None
    return pid


@dataclass
class EmbeddedPostgres:
    """A server whose files live under ``root`` (``root/data`` is the cluster)."""

    root: Path
    port: int = 0
    durable: bool = True  # False for throwaway test clusters: no fsync
    # False: a commit does not wait for its WAL flush (data stays consistent; a crash
    # may lose the last fraction of a second of commits). make dev's opt-in.
    synchronous_commit: bool = True
    process: subprocess.Popen[bytes] | None = None
    # The pid of a server left running on this data folder that ``start`` stopped.
    stopped_stale: int | None = None

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def password_file(self) -> Path:
        return self.root / "superuser.password"

    def admin_url(self, database: str = "postgres") -> str:
        password = self.password_file.read_text().strip()
        return f"postgresql://{SUPERUSER}:{password}@127.0.0.1:{self.port}/{database}"

    def _user_kwargs(self) -> dict[str, object]:
        if os.geteuid() != 0:
            return {}
        entry = pwd.getpwnam(RUN_AS)
        return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}

    def _chown(self, path: Path) -> None:
        if os.geteuid() == 0:
            entry = pwd.getpwnam(RUN_AS)
            os.chown(path, entry.pw_uid, entry.pw_gid)

    def init(self) -> None:
        if (self.data_dir / "PG_VERSION").exists():
            return
        bin_dir = find_bin_dir()
        self.root.mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o711)  # our own directory: the server user must traverse it
        self.data_dir.mkdir(mode=0o700, exist_ok=True)
        self._chown(self.data_dir)
        password = secrets.token_urlsafe(24)
        self.password_file.write_text(password + "\n")
        self.password_file.chmod(0o600)
        pwfile = self.data_dir.parent / ".initdb-pw"
        pwfile.write_text(password + "\n")
        self._chown(pwfile)
        try:
            result = subprocess.run(
                [
                    str(bin_dir / "initdb"),
                    "-D",
                    str(self.data_dir),
                    "-U",
                    SUPERUSER,
                    "--auth=scram-sha-256",
                    f"--pwfile={pwfile}",
                    "-E",
                    "UTF8",
                    "--no-locale",
                    "--no-instructions",
                ],
                capture_output=True,
                text=True,
                check=False,
                **self._user_kwargs(),  # type: ignore[call-overload]
            )
        finally:
            pwfile.unlink(missing_ok=True)
        if result.returncode != 0:
            raise EmbeddedPostgresError(f"initdb failed: {result.stderr.strip()}")

    def start(self, timeout: float = 30.0) -> str:
        """Start the server (initialising it first if needed); returns the admin URL."""
        self.init()
        self._stop_stale_postmaster()
        if self.port == 0:
            self.port = free_port()
        settings = {
            "listen_addresses": "127.0.0.1",
            "port": str(self.port),
            "unix_socket_directories": "",
            "max_connections": "200",
            "shared_buffers": "256MB",
            "logging_collector": "off",
            # Aurora PostgreSQL's default (PostgreSQL's is a minute): dead vectors do not
            # linger in the HNSW index (infra/migrations/0007_embeddings_vacuum.sql).
            "autovacuum_naptime": "5s",
        }
        if not self.durable:
            settings |= {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
        elif not self.synchronous_commit:
            settings |= {"synchronous_commit": "off"}
        args = [str(find_bin_dir() / "postgres"), "-D", str(self.data_dir)]
        for name, value in settings.items():
            args += ["-c", f"{name}={value}"]
        log = (self.root / "server.log").open("ab")
        self.process = subprocess.Popen(  # type: ignore[call-overload]
            args,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            **self._user_kwargs(),
        )
        (self.root / OWNER_FILE).write_text(f"{os.getpid()}\n")
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                tail = (self.root / "server.log").read_text(errors="replace")[-2000:]
                raise EmbeddedPostgresError(f"PostgreSQL exited while starting:\n{tail}")
            try:
                with psycopg.connect(self.admin_url(), connect_timeout=2):
                    return self.admin_url()
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise EmbeddedPostgresError("PostgreSQL did not accept connections") from None
                time.sleep(0.1)

    def _stop_stale_postmaster(self) -> None:
        """Stop a server still running on this data folder whose starter is gone (a
        ``make dev`` killed before it could stop it): otherwise this start fails. One
        whose starter still runs it is in use, and is left alone."""
        pid = running_postmaster(self.data_dir)
        if pid is None:
            return
        try:
            owner = int((self.root / OWNER_FILE).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            owner = None
        found = _parent_and_state(pid)
        if owner is not None and found is not None and found[0] == owner:
            raise EmbeddedPostgresError(
                f"PostgreSQL on {self.data_dir} is in use by process {owner}: stop that first"
            )
        os.kill(pid, signal.SIGINT)  # fast shutdown: sessions end, data stays consistent
        deadline = time.monotonic() + STALE_STOP_TIMEOUT_S
        while _alive(pid):
            if time.monotonic() > deadline:
                raise EmbeddedPostgresError(
                    f"PostgreSQL left running on {self.data_dir} (pid {pid}) did not stop"
                )
            time.sleep(0.05)
        self.stopped_stale = pid

    def stop(self) -> None:
        """Fast shutdown of the server this object started."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def destroy(self) -> None:
        self.stop()
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(self.root)


@contextlib.contextmanager
def admin_server(
    root: Path, *, durable: bool = False, keep: bool = False
) -> Iterator[tuple[str, bool]]:
    """An administrative URL: ``DATABASE_URL`` when set, otherwise an embedded server
    under ``root``, started here and on leaving stopped (``keep``) or removed.

    Yields the URL and whether the server is ours (embedded).
    """
    external = os.environ.get("DATABASE_URL")
    if external:
        yield external, False
        return
    embedded = EmbeddedPostgres(root, durable=durable)
    url = embedded.start()
    try:
        yield url, True
    finally:
        if keep:
            embedded.stop()
        else:
            embedded.destroy()
