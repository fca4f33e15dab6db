"""The wheel as a new user gets it: built with ``python -m build``, installed into a fresh
venv, commands run from that venv's ``riverbed`` script.

Offline and fast: the wheel is built without isolation (this venv's setuptools) from a
copy of the source, and the fresh venv gets its dependencies not from an index but from a
view of *this* venv's site-packages holding exactly the distributions the wheel's own
metadata asks for (``Requires-Dist``, resolved transitively): the base install, then the
base plus the ``spark`` extra.  A dependency missing from the metadata is therefore missing
in the fresh venv, as it would be after ``pip install riverbed`` -- without copying 500 MB
of pyspark.  The venvs are built once per module (~10 s).
"""

from __future__ import annotations

import importlib.metadata as md
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from email.parser import Parser
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from packaging.markers import Marker
from packaging.requirements import Requirement

from riverbed.testing.embedded import EmbeddedBroker

REPO = Path(__file__).resolve().parents[3]
SITE = Path(md.distribution("click").locate_file(""))  # this venv's site-packages


def requirements(metadata: str, extra: str) -> list[Requirement]:
    """Requires-Dist entries that apply to ``extra`` ('' for the base install)."""
    reqs = [
        Requirement(line) for line in Parser().parsestr(metadata).get_all("Requires-Dist") or []
    ]
    return [r for r in reqs if r.marker is None or r.marker.evaluate({"extra": extra})]


def closure(roots: list[Requirement]) -> set[str]:
    """Installed distribution names needed by ``roots``, transitively (extras honoured)."""
    seen: set[str] = set()
    done: set[tuple[str, frozenset[str]]] = set()
    todo = [(r.name, frozenset(r.extras)) for r in roots]
    while todo:
        name, extras = todo.pop()
        dist = md.distribution(name)  # PackageNotFoundError: the pin is not installed here
        key = dist.metadata["Name"].lower().replace("_", "-")
        if (key, extras) in done:
            continue
        done.add((key, extras))
        seen.add(key)
        for line in dist.requires or []:
            req = Requirement(line)
            wanted = ["", *sorted(extras)]
            if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in wanted):
                todo.append((req.name, frozenset(req.extras)))
    return seen


def link_view(dists: set[str], target: Path) -> Path:
    """A directory of symlinks to the site-packages entries of ``dists``."""
    target.mkdir(parents=True)
    for name in dists:
        for file in md.distribution(name).files or []:
            top = file.parts[0]
            if top == ".." or (target / top).exists():
                continue  # console scripts live outside site-packages
            (target / top).symlink_to(SITE / top)
    return target


@dataclass(frozen=True)
class Venv:
    root: Path
    site: Path

    def run(self, *args: str, stdin: bytes = b"") -> tuple[int, str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")
        }
        done = subprocess.run(
            [str(self.root / "bin" / args[0]), *args[1:]],
            input=stdin,
            capture_output=True,
            timeout=120,
            env=env,
            cwd=self.root,
        )
        return done.returncode, done.stdout.decode(), done.stderr.decode()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(
        REPO / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    dist = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--outdir",
            str(dist),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    [found] = dist.glob("riverbed-*.whl")
    return found


@pytest.fixture(scope="module")
def metadata(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as archive:
        [name] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return archive.read(name).decode()


@pytest.fixture(scope="module")
def venv(wheel: Path, metadata: str, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    root = tmp_path_factory.mktemp("venv") / "fresh"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120
    )
    [site] = root.glob("lib/python*/site-packages")
    installed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(root / "bin" / "python"),
            "install",
            "--no-deps",
            "--no-index",
            "--disable-pip-version-check",
            "--quiet",
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stderr
    base = link_view(closure(requirements(metadata, "")), root.parent / "deps-base")
    (site / "riverbed_test_deps.pth").write_text(f"{base}\n")
    return Venv(root, site)


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with EmbeddedBroker(tmp_path_factory.mktemp("wheel-broker")) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic("installed", 2, 1)])["installed"].result(30)
        yield broker.bootstrap_servers


def test_metadata_puts_the_kafka_client_in_the_base_install(metadata: str) -> None:
    base = {r.name: str(r.specifier) for r in requirements(metadata, "")}
    spark = {r.name for r in requirements(metadata, "spark")} - set(base)
    assert base["confluent-kafka"] == "==2.16.1"
    assert spark == {"pyspark", "pandas", "pyarrow"}
    assert Marker("extra == 'spark'").evaluate({"extra": "spark"})  # packaging works here


def test_base_install_runs_the_kafka_commands(venv: Venv, bootstrap: str) -> None:
    code, out, _ = venv.run("python", "-c", "import riverbed; print(riverbed.__file__)")
    assert code == 0 and out.startswith(str(venv.site)), out  # the wheel, not the checkout
    code, out, err = venv.run("riverbed", "--version")
    assert (code, err) == (0, "") and out.split()[-1] == md.version("riverbed")
    code, out, err = venv.run("riverbed", "topics", "list", "--bootstrap-server", bootstrap)
    assert (code, out, err) == (0, "installed 2\n", "")
    code, _, err = venv.run(
        "riverbed",
        "produce",
        "installed",
        "-p",
        "1",
        "--bootstrap-server",
        bootstrap,
        stdin=b"from the wheel\n",
    )
    assert (code, err) == (0, "")
    code, out, err = venv.run(
        "riverbed",
        "consume",
        "installed",
        "--from-beginning",
        "-e",
        "--bootstrap-server",
        bootstrap,
    )
    assert (code, out, err) == (0, "from the wheel\n", "")


def test_base_install_runs_the_broker(venv: Venv, tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    bootstrap = f"127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    broker = subprocess.Popen(
        [
            str(venv.root / "bin" / "riverbed"),
            "broker",
            "--data-dir",
            str(tmp_path / "data"),
            "--listen",
            bootstrap,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        deadline = time.monotonic() + 120  # a fresh data dir fsyncs a lot on a busy disk
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert broker.poll() is None, broker.stderr.read()  # type: ignore[union-attr]
                assert time.monotonic() < deadline, "the broker did not start listening"
                time.sleep(0.1)  # polling interval of a condition check
        assert (
            venv.run(
                "riverbed",
                "topics",
                "create",
                "t",
                "--partitions",
                "1",
                "--bootstrap-server",
                bootstrap,
            )[0]
            == 0
        )
        assert (
            venv.run(
                "riverbed", "produce", "t", "--bootstrap-server", bootstrap, stdin=b"stored\n"
            )[0]
            == 0
        )
        assert venv.run(
            "riverbed",
            "consume",
            "t",
            "--from-beginning",
            "-c",
            "1",
            "--bootstrap-server",
            bootstrap,
        )[:2] == (0, "stored\n")
        broker.send_signal(signal.SIGTERM)
        assert broker.wait(timeout=60) == 0
    finally:
        if broker.poll() is None:
            broker.kill()
            broker.wait()
    assert "Traceback" not in broker.stderr.read().decode()  # type: ignore[union-attr]


def test_base_install_names_the_missing_extra(venv: Venv) -> None:
    code, out, err = venv.run("python", "-c", "import pyspark")
    assert code == 1 and "No module named 'pyspark'" in err  # the view really lacks Spark
    code, out, err = venv.run("riverbed", "demo", "--duration", "1")
    assert (code, out) == (2, "")
    assert err == (
        "riverbed: error: the demo needs the 'spark' extra (no module named "
        "'pyspark'): pip install 'riverbed[spark]'\n"
    )


def test_spark_extra_is_enough_for_the_spark_api_and_the_demo(venv: Venv, metadata: str) -> None:
    spark = closure(requirements(metadata, "spark"))
    view = link_view(spark, venv.root.parent / "deps-spark")
    (venv.site / "riverbed_test_deps_spark.pth").write_text(f"{view}\n")
    try:
        code, _, err = venv.run(
            "python",
            "-c",
            "import riverbed.spark, riverbed.demo.runner, riverbed.pipelines.pageviews",
        )
        assert code == 0, err
        code, out, err = venv.run("riverbed", "demo", "--help")
        assert code == 0 and "Usage: riverbed demo" in out, err
    finally:
        (venv.site / "riverbed_test_deps_spark.pth").unlink()


@pytest.mark.slow
def test_spark_extra_runs_the_demo(venv: Venv, metadata: str, tmp_path: Path) -> None:
    """``pip install 'riverbed[spark]'`` then ``riverbed demo``: the whole quick path (an
    embedded broker, the clickstream, Spark) from the wheel (~40 s)."""
    pth = venv.site / "riverbed_test_deps_spark.pth"
    view = venv.root.parent / "deps-spark"
    if not view.exists():
        link_view(closure(requirements(metadata, "spark")), view)
    pth.write_text(f"{view}\n")
    try:
        code, out, err = venv.run(
            "riverbed",
            "demo",
            "--duration",
            "3",
            "--rate",
            "50",
            "--data-dir",
            str(tmp_path / "demo"),
        )
    finally:
        pth.unlink()
    assert code == 0, out[-2000:] + err[-2000:]
    assert "Traceback" not in err
    assert "tumbling" in out  # the per-user-per-hour table's header
