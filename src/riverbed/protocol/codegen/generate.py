"""Drive the emitter over the schema folders and write (or just render) the modules.

Two outputs, both checked in:

* ``messages/generated/``: the wire codec, from ``kafka-4.4/messages/*.json``;
* ``messages/generated_records/``: the formats Kafka writes into its internal topics and
  files, from ``kafka-4.4/records/<owner>/*.json`` (``group-coordinator``,
  ``transaction-coordinator``, ``share-coordinator``, ``storage``).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from riverbed.protocol.codegen.emit import (
    emit_index,
    emit_module,
    emit_records_index,
    module_name,
)
from riverbed.protocol.codegen.schema import load_all, load_tree

GENERATED_DIR = Path(__file__).resolve().parents[1] / "messages" / "generated"
RECORDS_GENERATED_DIR = Path(__file__).resolve().parents[1] / "messages" / "generated_records"
REPO_ROOT = Path(__file__).resolve().parents[4]
KAFKA_PROTOCOL = REPO_ROOT.parent / "shared" / "kafka-protocol" / "kafka-4.4"
SHARED_MESSAGES = KAFKA_PROTOCOL / "messages"
SHARED_RECORDS = KAFKA_PROTOCOL / "records"


def default_schema_dir() -> Path | None:
    """``../shared/kafka-protocol/kafka-4.4/messages`` beside the repo, else the (older,
    partial) copy inside the kafka-python wheel."""
    if SHARED_MESSAGES.is_dir():
        return SHARED_MESSAGES
    spec = importlib.util.find_spec("kafka")
    if spec is not None and spec.origin is not None:
        wheel = Path(spec.origin).parent / "protocol" / "schemas" / "resources"
        if wheel.is_dir():
            return wheel
    return None


def default_records_dir() -> Path | None:
    """``../shared/kafka-protocol/kafka-4.4/records`` beside the repo (no fallback)."""
    return SHARED_RECORDS if SHARED_RECORDS.is_dir() else None


def render_all(schema_dir: Path, with_index: bool = True) -> dict[str, str]:
    """File name -> source text for every schema in ``schema_dir`` (plus the index)."""
    messages = load_all(schema_dir)
    files = {f"{module_name(m)}.py": emit_module(m) for m in messages}
    if with_index:
        files["__init__.py"] = emit_index(messages)
    return files


def render_records(records_dir: Path) -> dict[str, str]:
    """File name -> source text for every internal record schema (plus the index)."""
    records = load_tree(records_dir)
    files = {f"{module_name(m)}.py": emit_module(m) for m in records}
    files["__init__.py"] = emit_records_index(records)
    return files


def write_files(files: dict[str, str], out_dir: Path) -> list[Path]:
    """Write ``files`` into ``out_dir`` where the text changed; returns those paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    changed: list[Path] = []
    for name, text in files.items():
        path = out_dir / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed


def generate(schema_dir: Path, out_dir: Path = GENERATED_DIR) -> list[Path]:
    """Write the generated modules into ``out_dir``; returns the files that changed."""
    return write_files(render_all(schema_dir), out_dir)


def generate_records(records_dir: Path, out_dir: Path = RECORDS_GENERATED_DIR) -> list[Path]:
    """Write the generated internal record modules; returns the files that changed."""
    return write_files(render_records(records_dir), out_dir)
