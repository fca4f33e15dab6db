"""Drive the emitter over a folder of schemas and write (or just render) the modules."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from riverbed.protocol.codegen.emit import emit_index, emit_module, module_name
from riverbed.protocol.codegen.schema import load_all

GENERATED_DIR = Path(__file__).resolve().parents[1] / "messages" / "generated"
REPO_ROOT = Path(__file__).resolve().parents[4]


def default_schema_dir() -> Path | None:
    """``../shared/kafka-protocol/messages`` beside the repo, else the kafka-python copy."""
    shared = REPO_ROOT.parent / "shared" / "kafka-protocol" / "messages"
    if shared.is_dir():
        return shared
    spec = importlib.util.find_spec("kafka")
    if spec is not None and spec.origin is not None:
        wheel = Path(spec.origin).parent / "protocol" / "schemas" / "resources"
        if wheel.is_dir():
            return wheel
    return None


def render_all(schema_dir: Path, with_index: bool = True) -> dict[str, str]:
    """File name -> source text for every schema in ``schema_dir`` (plus the index)."""
    messages = load_all(schema_dir)
    files = {f"{module_name(m)}.py": emit_module(m) for m in messages}
    if with_index:
        files["__init__.py"] = emit_index(messages)
    return files


def generate(schema_dir: Path, out_dir: Path = GENERATED_DIR) -> list[Path]:
    """Write the generated modules into ``out_dir``; returns the files that changed."""
    out_dir.mkdir(parents=True, exist_ok=True)
    changed: list[Path] = []
    for name, text in render_all(schema_dir).items():
        path = out_dir / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed
