"""Scenarios driven by Kafka's own Java client, through ``tests/compat/java/ClientScenario.java``.

:meth:`JavaClient.build` compiles the program with ``javac`` against the jars that
:mod:`riverbed.testing.kafka_reference` resolved (kafka-clients, Jackson, compression
codecs) into ``<cache>/java-classes/<sha256 of the source>``, once per source version.
Each call starts a JVM (~1 s), writes the scenario as JSON to stdin and parses the JSON
lines it prints; shapes match :mod:`.confluent`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from riverbed.testing.kafka_reference import DEFAULT_KAFKA_VERSION, cache_dir, resolve_jars
from riverbed.testing.scenarios.records import ConsumedRecord, Record, RoundTrip

MAIN_CLASS = "ClientScenario"


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def _unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


@dataclass(frozen=True, slots=True)
class JavaClient:
    """A compiled ``ClientScenario`` and the classpath to run it with."""

    classes: Path
    libs: Path

    @classmethod
    def build(cls, source: Path, version: str = DEFAULT_KAFKA_VERSION) -> JavaClient:
        libs = resolve_jars(version)
        digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
        classes = cache_dir(version) / "java-classes" / digest
        if not (classes / f"{MAIN_CLASS}.class").exists():
            javac = shutil.which("javac")
            if javac is None:
                raise RuntimeError("javac not found on PATH (Debian: openjdk-17-jdk-headless)")
            tmp = classes.with_name(digest + ".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            subprocess.run(
                [javac, "-d", str(tmp), "-cp", str(libs / "*"), str(source)],
                check=True,
                capture_output=True,
                timeout=300,
            )
            shutil.rmtree(classes, ignore_errors=True)
            tmp.rename(classes)
        return cls(classes, libs)

    def run(self, scenario: dict[str, Any], timeout_s: float = 120.0) -> list[dict[str, Any]]:
        """Run one scenario; the JSON lines it printed."""
        classpath = f"{self.classes}:{self.libs / '*'}"
        proc = subprocess.run(
            ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", classpath, MAIN_CLASS],
            input=json.dumps(scenario).encode(),
            capture_output=True,
            timeout=timeout_s,
            check=False,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"java scenario failed:\n{proc.stderr.decode()[-4000:]}")
        return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith(b"{")]

    def roundtrip(
        self, bootstrap: str, topic: str, codec: str, records: Sequence[Record]
    ) -> RoundTrip:
        lines = self.run(
            {
                "op": "roundtrip",
                "bootstrap": bootstrap,
                "topic": topic,
                "codec": codec,
                "records": [
                    {
                        "partition": r.partition,
                        "key": _b64(r.key),
                        "value": _b64(r.value),
                        "timestamp": r.timestamp_ms,
                        "headers": [[name, _b64(value)] for name, value in r.headers],
                    }
                    for r in records
                ],
            }
        )
        delivered = tuple((d["delivered"][0], d["delivered"][1]) for d in lines if "delivered" in d)
        consumed = tuple(
            sorted(
                (
                    ConsumedRecord(
                        c["partition"],
                        c["offset"],
                        _unb64(c["key"]),
                        _unb64(c["value"]),
                        tuple((h[0], _unb64(h[1])) for h in c["headers"]),
                        c["timestamp"],
                    )
                    for c in (line["consumed"] for line in lines if "consumed" in line)
                ),
                key=lambda r: (r.partition, r.offset),
            )
        )
        return RoundTrip(delivered, consumed)

    def offsets_for_times(
        self, bootstrap: str, topic: str, partition: int, timestamps: Sequence[int]
    ) -> dict[int, int | None]:
        lines = self.run(
            {
                "op": "offsets_for_times",
                "bootstrap": bootstrap,
                "topic": topic,
                "partition": partition,
                "timestamps": list(timestamps),
            }
        )
        return {line["timestamp"]: line["offset"] for line in lines}
