"""Kafka's own share-coordinator serde reads the records we write, byte for byte.

A workload on a :class:`SharePartition` (snapshots, updates with and without a start
offset, acknowledged, archived and available batches) and a tombstone are encoded by
:mod:`riverbed.share.share_state_records`; a small Java program reads them with Kafka
4.4.0's ``ShareCoordinatorRecordSerde`` (the class Kafka's share coordinator loads
``__share_group_state`` with) and serialises them again: Kafka must decode every record
and write exactly our bytes back.

Needs javac and Kafka 4.4.0's jars (Maven Central, cached in ~/.cache/riverbed; a first
run downloads them with mvn); marked ``kafka``.
"""

from __future__ import annotations

import shutil
import subprocess
import textwrap
import uuid
from pathlib import Path

import pytest

from riverbed.share import (
    SharePartition,
    SharePartitionConfig,
    ShareStateRecord,
    ShareStateTombstone,
)
from riverbed.testing.kafka_reference import resolve_jars

pytestmark = pytest.mark.kafka

DECODER = textwrap.dedent("""
    import java.nio.ByteBuffer;
    import java.nio.file.Files;
    import java.nio.file.Path;
    import java.util.HexFormat;
    import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
    import org.apache.kafka.coordinator.share.ShareCoordinatorRecordSerde;

    public class DecodeShareState {
        public static void main(String[] args) throws Exception {
            ShareCoordinatorRecordSerde serde = new ShareCoordinatorRecordSerde();
            HexFormat hex = HexFormat.of();
            for (String line : Files.readAllLines(Path.of(args[0]))) {
                String[] parts = line.trim().split(" ");
                ByteBuffer key = ByteBuffer.wrap(hex.parseHex(parts[0]));
                ByteBuffer value =
                    parts[1].equals("-") ? null : ByteBuffer.wrap(hex.parseHex(parts[1]));
                CoordinatorRecord record = serde.deserialize(key, value);
                byte[] k = serde.serializeKey(record);
                byte[] v = serde.serializeValue(record);
                String vs = v == null ? "-" : hex.formatHex(v);
                System.out.println(hex.formatHex(k) + " " + vs + " " + record);
            }
        }
    }
""")


def workload() -> list[ShareStateRecord | ShareStateTombstone]:
    cfg = SharePartitionConfig(snapshot_update_records=2, delivery_count_limit=2)
    sp = SharePartition("grp", uuid.UUID(int=5), 2, cfg, start_offset=10)
    out: list[ShareStateRecord | ShareStateTombstone] = [sp.snapshot(1000)]
    out += sp.acquire("m", [(10, 20), (23, 25)], 100, 1001).records  # 21-22: a gap
    out += sp.acknowledge("m", [(12, 14, [1, 2, 3])], 1002).records
    out += sp.acknowledge("m", [(10, 11, [1])], 1003).records
    out += sp.acknowledge("m", [(15, 20, [1])], 1004).records
    out += sp.acquire("n", [(13, 13)], 1, 1005).records
    out += sp.expire_locks(10**9).records
    out.append(ShareStateTombstone(sp.key))
    return out


def test_kafka_serde_round_trips_our_records(tmp_path: Path) -> None:
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("javac/java not on PATH")
    try:
        libs = resolve_jars("4.4.0")
    except Exception as exc:  # no mvn, no network and no cache
        pytest.skip(f"Kafka 4.4.0 jars unavailable: {exc}")
    classpath = ":".join(str(j) for j in sorted(libs.glob("*.jar")))
    (tmp_path / "DecodeShareState.java").write_text(DECODER)
    subprocess.run(
        ["javac", "-cp", classpath, "-d", str(tmp_path), str(tmp_path / "DecodeShareState.java")],
        check=True,
        timeout=180,
    )
    records = workload()
    lines = []
    for r in records:
        value = r.value_bytes().hex() if isinstance(r, ShareStateRecord) else "-"
        lines.append(f"{r.key_bytes().hex()} {value}")
    (tmp_path / "records.txt").write_text("\n".join(lines) + "\n")
    done = subprocess.run(
        [
            "java",
            "-cp",
            f"{tmp_path}:{classpath}",
            "DecodeShareState",
            str(tmp_path / "records.txt"),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=180,
    )
    answers = done.stdout.splitlines()
    assert len(answers) == len(records), done.stderr
    kinds = set()
    for line, answer in zip(lines, answers, strict=True):
        key, value, described = answer.split(" ", 2)
        assert f"{key} {value}" == line, described  # Kafka writes our bytes back exactly
        kinds.add(described.split("(", 2)[1])
        assert "groupId='grp'" in described and "partition=2" in described
    assert kinds == {"key=ShareSnapshotKey", "key=ShareUpdateKey"}
    assert answers[-1].endswith("value=null)")  # the tombstone
    assert "startOffset=10" in answers[0] and "deliveryState=4" in answers[1]  # the gap
