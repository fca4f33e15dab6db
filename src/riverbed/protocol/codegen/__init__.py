"""Generate the wire codec and the internal record formats from Kafka's schemas.

Run ``python -m riverbed.protocol.codegen`` from the repository root.  Two outputs:

* :mod:`riverbed.protocol.messages.generated`, the wire codec, from Kafka 4.4's
  ``../shared/kafka-protocol/kafka-4.4/messages`` (relative to the repository root),
  falling back to the Kafka 4.3 copy inside the kafka-python wheel
  (``kafka/protocol/schemas/resources``), which lacks a few newer schemas;
* :mod:`riverbed.protocol.messages.generated_records`, the records Kafka writes into its
  internal topics and files, from ``../shared/kafka-protocol/kafka-4.4/records/*/``.

Each is one module per schema plus ``__init__.py`` listing them all, written only where
the text changed.  Generation is deterministic: the same schemas give byte-identical
files, which ``tests/unit/protocol/test_codegen_current.py`` checks.
"""

from __future__ import annotations

from riverbed.protocol.codegen.generate import (
    GENERATED_DIR,
    RECORDS_GENERATED_DIR,
    default_records_dir,
    default_schema_dir,
    generate,
    generate_records,
    render_all,
    render_records,
)

__all__ = [
    "GENERATED_DIR",
    "RECORDS_GENERATED_DIR",
    "default_records_dir",
    "default_schema_dir",
    "generate",
    "generate_records",
    "render_all",
    "render_records",
]
