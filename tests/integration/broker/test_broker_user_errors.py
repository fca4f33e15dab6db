"""Mistakes a user makes starting ``riverbed broker`` end in one line, never a traceback.

Each case runs the real console script and checks the exit code (2: a bad flag or
setting, 1: the data dir or another runtime refusal), that stderr is exactly one
``riverbed: error: ...`` line, and what it names.  The read-only and permission cases
need root (a read-only tmpfs mount; ``setpriv`` dropping the capabilities that let root
ignore permission bits) and are skipped, saying so, without it.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from riverbed.broker.config import BrokerConfig

_SCRIPT = Path(sys.executable).parent / "riverbed"
CLI = (
    [str(_SCRIPT), "broker"]
    if _SCRIPT.exists()
    else [sys.executable, "-c", "from riverbed.cli.main import main; main()", "broker"]
)
DEADLINE_S = 30.0


def run_broker(*args: str, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, *CLI, "--listen", "127.0.0.1:0", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def assert_one_line(out: subprocess.CompletedProcess[str], code: int, *needles: str) -> str:
    """The process failed with ``code`` and one ``riverbed: error:`` line naming needles."""
    err = out.stderr.strip()
    assert out.returncode == code, out.stderr
    assert "Traceback" not in out.stderr, out.stderr
    assert "\n" not in err, out.stderr
    assert err.startswith("riverbed: error: "), err
    for needle in needles:
        assert needle in err, err
    return err


def test_unknown_log_level(tmp_path: Path) -> None:
    out = run_broker("--data-dir", str(tmp_path / "d"), "--log-level", "NOPE")
    assert_one_line(out, 2, "--log-level", "'NOPE'", "DEBUG, INFO")
    assert not (tmp_path / "d").exists()


def test_binary_config_file(tmp_path: Path) -> None:
    binary = tmp_path / "server.properties"
    binary.write_bytes(bytes(range(256)) * 4)
    out = run_broker("--data-dir", str(tmp_path / "d"), "--config-file", str(binary))
    assert_one_line(out, 2, str(binary), "binary")
    latin1 = tmp_path / "latin1.properties"
    latin1.write_bytes("num.partitions=3\n# caf\xe9\n".encode("latin-1"))
    out = run_broker("--data-dir", str(tmp_path / "d"), "--config-file", str(latin1))
    assert_one_line(out, 2, "not UTF-8", "0xe9")


def test_config_file_that_is_a_directory(tmp_path: Path) -> None:
    out = run_broker("--data-dir", str(tmp_path / "d"), "--config-file", str(tmp_path))
    assert_one_line(out, 2, "cannot read config file", "Is a directory")


def test_data_dir_under_a_regular_file(tmp_path: Path) -> None:
    regular = tmp_path / "file"
    regular.write_text("not a directory")
    out = run_broker("--data-dir", str(regular / "d"))
    assert_one_line(out, 1, f"data dir {regular / 'd'}", "not a directory (ENOTDIR)")
    out = run_broker("--data-dir", str(regular))
    assert_one_line(out, 1, f"data dir {regular} is a file, not a directory")


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    mount_point = tmp_path / "ro"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs here (needs root): {mounted.stderr}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], check=True)


def test_read_only_file_system(read_only_dir: Path) -> None:
    out = run_broker("--data-dir", str(read_only_dir / "d"))
    assert_one_line(out, 1, "read-only file system (EROFS)", str(read_only_dir / "d"))
    out = run_broker("--data-dir", str(read_only_dir))  # exists, cannot be written
    assert_one_line(out, 1, "read-only file system (EROFS)", str(read_only_dir))


def test_data_dir_without_permission(tmp_path: Path) -> None:
    """As root, permission bits only bite once the capabilities that bypass them are
    dropped: ``setpriv`` runs the broker as root without them, on a dir root does not
    own."""
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip(
            "needs root and setpriv to drop CAP_DAC_OVERRIDE (non-root runs are "
            "covered by the plain permission bits, but cannot own the setup here)"
        )
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o700)
    os.chown(locked, 65534, 65534)  # nobody: root without capabilities may not enter
    tmp_path.chmod(0o755)
    drop = (setpriv, "--bounding-set", "-dac_override,-dac_read_search,-fowner", "--")
    out = run_broker("--data-dir", str(locked / "d"), prefix=drop)
    assert_one_line(out, 1, "permission denied (EACCES)", str(locked / "d"))


def run_listeners(*args: str) -> subprocess.CompletedProcess[str]:
    """``riverbed broker`` without ``--listen``: the listeners setting names the sockets."""
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60)


def test_tls_and_sasl_listeners_with_bad_settings_are_refused(tmp_path: Path) -> None:
    """Served since TLS and SASL exist (tests/integration/security), but a TLS listener
    without a certificate, an unreadable one, or an unsupported mechanism is one line
    before the data dir is touched; so is ``--listen`` given with ``listeners``."""
    out = run_broker(
        "--data-dir", str(tmp_path / "d"), "--config", "listeners=PLAINTEXT://127.0.0.1:0"
    )
    assert_one_line(out, 2, "either with --listen or with the listeners setting")
    out = run_listeners(
        "--data-dir", str(tmp_path / "d"), "--config", "listeners=SSL://127.0.0.1:0"
    )
    assert_one_line(out, 2, "listener SSL (SSL)", "ssl.keystore.location")
    out = run_listeners(
        "--data-dir",
        str(tmp_path / "d"),
        "--config",
        "listeners=CLIENT://127.0.0.1:0",
        "--config",
        "listener.security.protocol.map=CLIENT:SASL_SSL",
        "--config",
        f"ssl.keystore.location={tmp_path / 'missing.pem'}",
    )
    assert_one_line(out, 2, "listener CLIENT (SASL_SSL)", "missing.pem", "No such file")
    out = run_listeners(
        "--data-dir",
        str(tmp_path / "d"),
        "--config",
        "listeners=SASL_PLAINTEXT://127.0.0.1:0",
        "--config",
        "sasl.enabled.mechanisms=GSSAPI",
    )
    assert_one_line(out, 2, "sasl.enabled.mechanisms", "GSSAPI")
    assert not (tmp_path / "d").exists()
    # A stock KRaft server.properties (plaintext plus a controller listener) still loads.
    BrokerConfig.from_props(
        {
            "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,"
            "SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
        }
    )


def test_port_in_use_is_reported_before_touching_the_data_dir(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = subprocess.run(
            [*CLI, "--data-dir", str(tmp_path / "d"), "--listen", f"127.0.0.1:{port}"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert_one_line(out, 2, f"cannot listen on 127.0.0.1:{port}", "in use")
    assert not (tmp_path / "d").exists()  # no internal topics created first


def test_negative_size_prefix_is_named_as_such(tmp_path: Path) -> None:
    log_path = tmp_path / "broker.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [*CLI, "--data-dir", str(tmp_path / "d"), "--listen", "127.0.0.1:0"], stderr=log
        )
    try:
        deadline = time.monotonic() + DEADLINE_S
        while (found := re.search(r"listening on [\d.]+:(\d+)", log_path.read_text())) is None:
            assert proc.poll() is None and time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.05)
        with socket.create_connection(("127.0.0.1", int(found.group(1))), timeout=10) as sock:
            sock.sendall(struct.pack(">i", -1))
            assert sock.recv(1) == b""  # closed by the broker
        while "negative frame size -1" not in log_path.read_text():
            assert time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.05)
        assert "socket.request.max.bytes" not in log_path.read_text()
    finally:
        proc.kill()
        proc.wait()


def test_empty_data_dir_is_refused_not_taken_as_the_current_dir(tmp_path: Path) -> None:
    out = subprocess.run(
        [*CLI, "--data-dir", "", "--listen", "127.0.0.1:0"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert_one_line(out, 2, "--data-dir", "empty")
    assert list(tmp_path.iterdir()) == []  # no broker files in the working directory
