"""Plot produce throughput and p99 latency vs message size, Riverbed beside Apache Kafka.

Runs ``bench/bench_produce_consume.py`` (peers riverbed and kafka, sizes 100 B, 1 KiB and
10 KiB, ``--repeat`` runs each, medians) with ``--json``, or reads such a JSON file
(``--from-json``), and writes a PNG (default ``docs/benchmarks/throughput_latency.png``)
with two panels: produce MB/s and p99 delivery latency (ms, log scale) against the value
size (log scale), one line per peer.  The title carries the machine's CPU count and the
load average of the run, since a shared box moves every absolute figure.

Run: ``.venv/bin/python bench/plot_benchmarks.py [--messages 100000] [--repeat 3]
[--from-json PATH] [--out docs/benchmarks/throughput_latency.png]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display: write files only
import matplotlib.pyplot as plt

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "docs" / "benchmarks" / "throughput_latency.png"
SIZES = "100,1024,10240"
PEERS = "riverbed,kafka"


def run_benchmark(messages: int, repeat: int, out: Path) -> None:
    cmd = [
        sys.executable,
        str(ROOT / "bench" / "bench_produce_consume.py"),
        "--sizes",
        SIZES,
        "--peers",
        PEERS,
        "--messages",
        str(messages),
        "--repeat",
        str(repeat),
        "--json",
        str(out),
    ]
    subprocess.run(cmd, check=True)


def plot(data: dict[str, object], out: Path) -> None:
    medians = data["medians"]
    assert isinstance(medians, list)
    fig, (ax_tp, ax_lat) = plt.subplots(1, 2, figsize=(11, 4.2))
    for peer, style in (("riverbed", "o-"), ("kafka", "s--")):
        rows = sorted((m for m in medians if m["peer"] == peer), key=lambda m: m["size"])
        if not rows:
            continue
        sizes = [m["size"] for m in rows]
        ax_tp.plot(sizes, [m["produce_mbs"] for m in rows], style, label=peer)
        ax_lat.plot(sizes, [m["p99_ms"] for m in rows], style, label=peer)
        for m in rows:
            ax_tp.annotate(
                f"{m['produce_msgs'] / 1000:.0f}k/s",
                (m["size"], m["produce_mbs"]),
                textcoords="offset points",
                xytext=(4, 4),
                fontsize=7,
            )
    for ax in (ax_tp, ax_lat):
        ax.set_xscale("log")
        ax.set_xlabel("value size (bytes)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    ax_tp.set_ylabel("produce MB/s (10^6 B, values only)")
    ax_tp.set_title("throughput (saturating, acks=all, idempotent)")
    ax_lat.set_yscale("log")
    ax_lat.set_ylabel("p99 delivery latency (ms)")
    ax_lat.set_title("p99 latency under saturation")
    fig.suptitle(
        f"Riverbed vs Apache Kafka, confluent-kafka producer, linger.ms=5; "
        f"{data.get('cpus')} CPUs, load {float(data.get('load1', 0.0)):.1f}, "  # type: ignore[arg-type]
        f"median of {data.get('repeat')} runs",
        fontsize=9,
    )
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--from-json", type=Path, help="plot this bench_produce_consume JSON")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    if args.from_json is not None:
        path = args.from_json
    else:
        path = Path(tempfile.mkdtemp(prefix="plot-bench-")) / "produce.json"
        run_benchmark(args.messages, args.repeat, path)
    plot(json.loads(path.read_text()), args.out)


if __name__ == "__main__":
    main()
