"""The checked-in generated codec is exactly what the generator makes from the schemas."""

from __future__ import annotations

import pytest

from riverbed.protocol.codegen import GENERATED_DIR, default_schema_dir, render_all
from riverbed.protocol.codegen.generate import (
    RECORDS_GENERATED_DIR,
    SHARED_MESSAGES,
    default_records_dir,
    render_records,
)

SHARED = SHARED_MESSAGES


def test_generated_code_is_current() -> None:
    if default_schema_dir() != SHARED:
        pytest.skip(
            f"no {SHARED}: the checked-in codec comes from Kafka 4.4's schemas, and "
            "kafka-python's copy (Kafka 4.3) differs"
        )
    rendered = render_all(SHARED)
    checked_in = {p.name for p in GENERATED_DIR.glob("*.py")}
    assert set(rendered) == checked_in, "regenerate: python -m riverbed.protocol.codegen"
    for name, text in sorted(rendered.items()):
        on_disk = (GENERATED_DIR / name).read_text(encoding="utf-8")
        assert on_disk == text, f"{name} is stale: run python -m riverbed.protocol.codegen"


def test_generation_is_deterministic() -> None:
    schema_dir = default_schema_dir()
    if schema_dir is None:
        pytest.skip("no schemas available")
    assert render_all(schema_dir) == render_all(schema_dir)


def test_generated_records_are_current() -> None:
    records_dir = default_records_dir()
    if records_dir is None:
        pytest.skip("no internal record schemas (../shared/kafka-protocol/kafka-4.4/records)")
    rendered = render_records(records_dir)
    checked_in = {p.name for p in RECORDS_GENERATED_DIR.glob("*.py")}
    assert set(rendered) == checked_in, "regenerate: python -m riverbed.protocol.codegen"
    for name, text in sorted(rendered.items()):
        on_disk = (RECORDS_GENERATED_DIR / name).read_text(encoding="utf-8")
        assert on_disk == text, f"{name} is stale: run python -m riverbed.protocol.codegen"
    assert render_records(records_dir) == rendered
