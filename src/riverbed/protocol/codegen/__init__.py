"""Generate the wire codec (:mod:`riverbed.protocol.messages.generated`) from Kafka's schemas.

Run ``python -m riverbed.protocol.codegen`` from the repository root.  Schemas come from
``../shared/kafka-protocol/messages`` (relative to the repository root), falling back to
the copy inside the kafka-python wheel (``kafka/protocol/schemas/resources``), which lacks
a few newer schemas.  Output: one module per schema plus ``__init__.py`` listing them all,
written only where the text changed.  Generation is deterministic: the same schemas give
byte-identical files, which ``tests/unit/protocol/test_codegen_current.py`` checks.
"""

from __future__ import annotations

from riverbed.protocol.codegen.generate import (
    GENERATED_DIR,
    default_schema_dir,
    generate,
    render_all,
)

__all__ = ["GENERATED_DIR", "default_schema_dir", "generate", "render_all"]
