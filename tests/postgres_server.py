"""A throwaway PostgreSQL server for the tests of a library shared on one (Debian's `postgresql`
package; the README's slow-lane command installs it): initdb in a folder of its own, a Unix
socket there and a port on 127.0.0.1 with a password, stopped and removed at the end.
PostgreSQL refuses to run as root, as CI does: there it runs as the package's `postgres` user,
in a folder under /tmp that user can reach (pytest's are private to root)."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

MEMBER_PASSWORD = "hunter2-Library-Key"  # a team member's, on the TCP port: never to be printed


def _bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if not found:
        raise RuntimeError(
            "PostgreSQL's server is not installed: the slow lane needs Debian's postgresql package "
            "(apt-get install -y postgresql, as the README's slow-lane command does)"
        )
    return Path(found[-1]).parent


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Server:
    folder: Path
    port: int

    @property
    def socket_url(self) -> str:
        """The superuser over the socket (trusted): what a test sets up and inspects with."""
        return f"postgresql://postgres@/cwread?host={self.folder}&port={self.port}"

    def url(self, database: str = "team", password: str = MEMBER_PASSWORD) -> str:
        """A team member over TCP, with a password."""
        return f"postgresql://member:{password}@127.0.0.1:{self.port}/{database}"

    def _as_owner(self, *command: str) -> subprocess.CompletedProcess:
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        return subprocess.run([*prefix, *command], capture_output=True, text=True, timeout=120, check=False)

    def start(self) -> None:
        options = f"-k {self.folder} -c listen_addresses=127.0.0.1 -p {self.port} -c fsync=off"
        done = self._as_owner(
            str(_bin() / "pg_ctl"), "-D", str(self.folder / "data"), "-o", options, "-l", str(self.folder / "log"), "-w", "start"
        )
        assert done.returncode == 0, done.stdout + done.stderr + self.log()

    def stop(self, mode: str = "fast") -> None:
        self._as_owner(str(_bin() / "pg_ctl"), "-D", str(self.folder / "data"), "-m", mode, "-w", "stop")

    def log(self) -> str:
        path = self.folder / "log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def sql(self, statement: str, database: str = "team", arguments: tuple = ()) -> list[tuple]:
        import psycopg

        with psycopg.connect(f"postgresql://postgres@/{database}?host={self.folder}&port={self.port}", autocommit=True) as db:
            cursor = db.execute(statement, arguments or None)
            return cursor.fetchall() if cursor.description else []


def start_server() -> Server:
    folder = Path(tempfile.mkdtemp(prefix="cwread-pg-", dir="/tmp"))
    folder.chmod(0o755)
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
    server = Server(folder, _free_port())
    done = server._as_owner(
        str(_bin() / "initdb"), "-D", str(folder / "data"), "-U", "postgres", "-E", "UTF8", "--no-sync",
        "--auth-local=trust", "--auth-host=scram-sha-256",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    server.start()
    server.sql("CREATE DATABASE cwread", "postgres")
    server.sql(f"CREATE ROLE member LOGIN PASSWORD '{MEMBER_PASSWORD}'", "postgres")
    server.sql("CREATE DATABASE team OWNER member", "postgres")
    return server


def remove_server(server: Server) -> None:
    server.stop("immediate")
    shutil.rmtree(server.folder, ignore_errors=True)
