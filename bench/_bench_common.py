"""What the broker benchmarks share: a ``riverbed broker`` subprocess on a temp data dir
(optionally under cProfile, or imported from another source tree for before/after runs),
and the process figures they report (CPU seconds from ``/proc/PID/stat``, load average).

Imported by module name: a script run as ``python bench/NAME.py`` has ``bench/`` first on
``sys.path``.  ``bench_produce_consume`` re-exports :func:`riverbed_subprocess` and
:data:`BROKER_PIDS` for the scripts that import them from there.
"""

from __future__ import annotations

import contextlib
import os
import pstats
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
BROKER_PIDS: dict[str, int] = {}  # bootstrap -> broker process, for the CPU figures
# ``--config`` of peer ``riverbed-nofsync``: Kafka's flush policy (no fsync before the ack).
NO_FSYNC = ("flush.messages=9223372036854775807", "flush.ms=9223372036854775807")

PROFILED_BROKER = """
import cProfile, sys
from riverbed.cli.main import main
profile_path = sys.argv.pop(1)
profiler = cProfile.Profile()
profiler.enable()
try:
    main()
except SystemExit:
    pass
finally:
    profiler.disable()
    profiler.dump_stats(profile_path)
"""


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid``, all threads (fields 14, 15 of /proc/PID/stat)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def peak_rss_mb(pid: int) -> float:
    """The peak resident set of ``pid`` so far, in MiB (``VmHWM`` of /proc/PID/status:
    the high-water mark over the process's life, all threads)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def load1() -> float:
    """The 1-minute load average."""
    return os.getloadavg()[0]


def write_back() -> None:
    """``os.sync()``: write back every dirty page of the box before a run (untimed).
    Between alternating peers this keeps one peer's deferred write-back (Kafka
    acknowledges from the page cache; the kernel writes its data back up to 30 s later)
    out of the next peer's run, where it would slow every fsync on the same disk."""
    os.sync()


def pretouch(gib: float) -> float:
    """Write ``gib`` GiB of fresh memory in a child process, then free it (untimed; returns
    the seconds it took).  On a VM whose host backs guest memory lazily and takes freed
    pages back (Firecracker here: ``virtio_balloon`` free page reporting), the first write
    to each guest page costs a host fault: writing 16 GiB once took 20.7 s of system time
    here (1.3 s/GiB).  A broker pays that for every page-cache page its writes land on
    (Kafka and Riverbed alike), the librdkafka mock, which keeps a bounded tail in the
    client's memory, mostly does not, so ratios to the mock moved with the guest's memory
    history (a broker's CPU per GB rose ~1.6x after ~3.5 GB written in a session).  Touched
    just before a run, the pages the run's writes get are host-backed, as on a server that
    has been up for a while (docs/benchmarks.md "Guest memory first touch")."""
    if gib <= 0:
        return 0.0
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", f"b = bytearray(b'\\x01') * {int(gib * (1 << 30))}"], check=True
    )
    return time.perf_counter() - started


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_accepting(port: int, proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    """Return once 127.0.0.1:``port`` accepts a connection; raise if ``proc`` exits first
    or ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"riverbed broker exited with {proc.returncode}")
        with contextlib.suppress(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        time.sleep(0.02)  # polling interval; the condition is the port accepting
    raise RuntimeError(f"riverbed broker did not accept connections in {timeout_s}s")


def print_profile(path: Path, limit: int = 25) -> None:
    stats = pstats.Stats(str(path))
    stats.strip_dirs()
    for key in ("cumulative", "tottime"):
        print(f"\n== riverbed broker profile: top {limit} by {key} ==")
        stats.sort_stats(key).print_stats(limit)


@contextlib.contextmanager
def riverbed_subprocess(
    profile: bool,
    src: str | None = None,
    config: tuple[str, ...] = (),
    env: Mapping[str, str] | None = None,
    profile_limit: int = 25,
) -> Iterator[str]:
    """``riverbed broker`` in a temp dir: yields its bootstrap address, and its pid is
    :data:`BROKER_PIDS` [bootstrap] while it runs.  SIGTERM at exit (SIGKILL after 60 s),
    then the data dir is removed.

    ``profile``: run it under cProfile (event-loop thread) and print its top
    ``profile_limit`` functions at exit.  ``src``: import ``riverbed`` from this source
    tree instead (``PYTHONPATH``), e.g. a copy of ``src/`` taken before a change, to
    compare both brokers in one run.  ``config``: ``KEY=VALUE`` settings passed as
    ``--config``.  ``env``: variables added to its environment.
    """
    workdir = Path(tempfile.mkdtemp(prefix="riverbed-bench-"))
    port = free_port()
    args = [
        "broker",
        "--data-dir",
        str(workdir / "data"),
        "--listen",
        f"127.0.0.1:{port}",
        "--log-level",
        "WARNING",
    ]
    for item in config:
        args += ["--config", item]
    profile_path = workdir / "broker.prof"
    if profile:
        cmd = [sys.executable, "-c", PROFILED_BROKER, str(profile_path), *args]
    else:
        cmd = [sys.executable, "-c", "from riverbed.cli.main import main; main()", *args]
    child_env = dict(os.environ)
    if src is not None:
        child_env["PYTHONPATH"] = src
    child_env.update(env or {})
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, env=child_env)
    bootstrap = f"127.0.0.1:{port}"
    try:
        wait_accepting(port, proc, 60)  # a loaded 2-core box can take this long
        BROKER_PIDS[bootstrap] = proc.pid
        yield bootstrap
    finally:
        BROKER_PIDS.pop(bootstrap, None)
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if profile and profile_path.exists():
            print_profile(profile_path, profile_limit)
        shutil.rmtree(workdir, ignore_errors=True)


def disk_write_seconds(directory: Path, nbytes: int, chunk: int = 1 << 20) -> float:
    """Seconds to write ``nbytes`` of random bytes to a new file in ``directory`` in
    ``chunk``-byte writes and ``fdatasync`` it once at the end, the file then removed: the
    most favourable way to put those bytes on this disk, so ``nbytes`` over it bounds any
    broker that makes every acknowledged byte durable (fsync before the ack)."""
    block = os.urandom(chunk)
    fd, name = tempfile.mkstemp(prefix="disk-ceiling-", dir=directory)
    try:
        start = time.perf_counter()
        left = nbytes
        while left > 0:
            left -= os.write(fd, block[: min(chunk, left)])
        os.fdatasync(fd)
        return time.perf_counter() - start
    finally:
        os.close(fd)
        os.unlink(name)
