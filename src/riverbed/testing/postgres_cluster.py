"""A private PostgreSQL cluster for tests and benchmarks: ``initdb``, ``wal_level=logical``,
a free port on 127.0.0.1, its own socket directory; stopped (``-m immediate``) and removed
at the end.

::

    with PostgresCluster.create(tmp_path) as pg:
        dsn = pg.dsn()            # superuser "riverbed", password "riverbed"

Debian's PostgreSQL 15 binaries (``/usr/lib/postgresql/15/bin``) refuse to run as root, so
when this process is root they run as the ``postgres`` OS user, which then owns the data
dir, socket dir and log (the recipe in FIELD-NOTES.md, ~1 s from nothing to accepting).
:func:`postgres_bin_dir` is None when the binaries are absent: tests skip with that reason.
Driven by one thread; not thread-safe.  If the driving process dies, the postmaster keeps
running on its port until killed (its pid is in ``DATA/postmaster.pid``).
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

from riverbed.testing.kafka_reference import free_port
from riverbed.testing.lifecycle import ClosingContext
from riverbed.testing.waiting import wait_until

__all__ = ["SUPERUSER", "SUPERUSER_PASSWORD", "PostgresCluster", "postgres_bin_dir"]

SUPERUSER = "riverbed"
SUPERUSER_PASSWORD = "riverbed"
_CANDIDATE_BIN_DIRS = (
    "/usr/lib/postgresql/15/bin",
    "/usr/lib/postgresql/16/bin",
    "/usr/lib/postgresql/17/bin",
)


def postgres_bin_dir() -> Path | None:
    """The directory holding ``initdb``/``pg_ctl``/``postgres``, or None when not installed."""
    override = os.environ.get("RIVERBED_PG_BIN")
    for candidate in (override,) if override else _CANDIDATE_BIN_DIRS:
        path = Path(candidate)
        if (path / "initdb").is_file() and (path / "pg_ctl").is_file():
            return path
    return None


def _traversable(path: Path) -> bool:
    """Whether every directory from ``/`` down to ``path`` may be entered by others."""
    return all(os.stat(p).st_mode & 0o001 for p in [path.resolve(), *path.resolve().parents])


class PostgresCluster(ClosingContext):
    """One ``postgres`` server on ``127.0.0.1:port`` over a fresh data directory."""

    def __init__(
        self, root: Path, bin_dir: Path, port: int, settings: dict[str, str] | None = None
    ) -> None:
        self.root = root
        self.bin_dir = bin_dir
        self.port = port
        self.data_dir = root / "data"
        self.socket_dir = root / "sock"
        self.log_path = root / "postgres.log"
        self.settings = {
            "wal_level": "logical",
            "max_replication_slots": "10",
            "max_wal_senders": "10",
            "fsync": "off",
            **(settings or {}),
        }
        self._user: str | None = "postgres" if os.geteuid() == 0 else None

    @classmethod
    def create(
        cls, parent: Path | None = None, settings: dict[str, str] | None = None
    ) -> PostgresCluster:
        """initdb a new cluster in a fresh directory under ``parent`` (the system temp dir
        when the ``postgres`` user could not enter ``parent``) and start it."""
        bin_dir = postgres_bin_dir()
        if bin_dir is None:
            raise RuntimeError("PostgreSQL binaries not found (apt-get install postgresql)")
        if os.geteuid() == 0 and parent is not None and not _traversable(parent):
            parent = None  # pytest's tmp dirs are 0700: the postgres user could not enter
        root = Path(tempfile.mkdtemp(prefix="riverbed-pg-", dir=parent))
        os.chmod(root, 0o755)
        cluster = cls(root, bin_dir, free_port(), settings)
        try:
            cluster._initdb()
            cluster.start()
        except BaseException:
            cluster.close()
            raise
        return cluster

    def _run(self, *args: str, timeout_s: float = 60) -> str:
        done = subprocess.run(
            [str(self.bin_dir / args[0]), *args[1:]],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            user=self._user,
            group=self._user,
            cwd=self.root,
            stdin=subprocess.DEVNULL,
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"{args[0]} failed ({done.returncode}): {done.stderr.strip()}\n{self.log_tail()}"
            )
        return done.stdout

    def _chown(self, path: Path) -> None:
        if self._user is not None:
            entry = pwd.getpwnam(self._user)
            os.chown(path, entry.pw_uid, entry.pw_gid)

    def _initdb(self) -> None:
        pwfile = self.root / "pwfile"
        pwfile.write_text(SUPERUSER_PASSWORD + "\n")
        for directory in (self.data_dir, self.socket_dir):
            directory.mkdir(mode=0o700)
            self._chown(directory)
        self.log_path.touch()
        for path in (pwfile, self.log_path):
            self._chown(path)
        self._run(
            "initdb",
            "-D",
            str(self.data_dir),
            "-U",
            SUPERUSER,
            f"--pwfile={pwfile}",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        )
        pwfile.unlink()
        self.write_settings(
            listen_addresses="'127.0.0.1'",
            port=str(self.port),
            unix_socket_directories=f"'{self.socket_dir}'",
            **self.settings,
        )

    def write_settings(self, **settings: str) -> None:
        """Append ``name = value`` lines to postgresql.conf (they win; a restart applies)."""
        with open(self.data_dir / "postgresql.conf", "a") as conf:
            for name, value in settings.items():
                conf.write(f"{name} = {value}\n")

    def start(self) -> None:
        """Start the server; returns once it accepts connections (``pg_ctl -w``)."""
        self._run(
            "pg_ctl", "-D", str(self.data_dir), "-l", str(self.log_path), "-w", "-t", "60", "start"
        )

    def stop(self, mode: str = "immediate") -> None:
        """Stop the server (``immediate``: like a crash, WAL replayed at the next start)."""
        self._run("pg_ctl", "-D", str(self.data_dir), "-m", mode, "-w", "stop")

    def restart(self, mode: str = "immediate") -> None:
        self.stop(mode)
        self.start()

    def running(self) -> bool:
        return (self.data_dir / "postmaster.pid").exists()

    def dsn(
        self, user: str = SUPERUSER, password: str = SUPERUSER_PASSWORD, dbname: str = "postgres"
    ) -> str:
        """A libpq keyword DSN for TCP on 127.0.0.1 (scram-sha-256 authentication)."""
        return f"host=127.0.0.1 port={self.port} user={user} password={password} dbname={dbname}"

    def create_database(self) -> str:
        """Create a fresh empty database (``db_`` and 10 random hex digits) and return its
        name."""
        import psycopg2

        dbname = f"db_{uuid.uuid4().hex[:10]}"
        admin = psycopg2.connect(self.dsn())
        admin.autocommit = True
        try:
            with admin.cursor() as cur:
                cur.execute(f"CREATE DATABASE {dbname}")
        finally:
            admin.close()
        return dbname

    def drop_database(self, dbname: str, timeout_s: float = 60) -> None:
        """Drop ``dbname`` and its replication slots, waiting up to ``timeout_s`` for each
        slot to be released (a slot is dropped only once inactive: its walsender gone);
        ``AssertionError`` if they are not all released in time.  Frees the slots of a
        cluster with few (``max_replication_slots``) for the next test."""
        import psycopg2

        admin = psycopg2.connect(self.dsn())
        admin.autocommit = True
        try:

            def released() -> bool:
                with admin.cursor() as cur:
                    cur.execute(
                        "SELECT slot_name, active FROM pg_replication_slots WHERE database = %s",
                        (dbname,),
                    )
                    slots = cur.fetchall()
                    for slot, active in slots:
                        if not active:
                            cur.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
                    return all(not active for _slot, active in slots)

            wait_until(released, timeout_s, f"the slots of {dbname} to be released")
            with admin.cursor() as cur:
                cur.execute(f"DROP DATABASE {dbname} WITH (FORCE)")
        finally:
            admin.close()

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def close(self) -> None:
        """Stop the server if it runs and delete its directory."""
        try:
            if self.running():
                self.stop()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
