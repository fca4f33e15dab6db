"""``python -m riverbed.protocol.codegen [--schemas DIR] [--out DIR] [--records DIR]
[--records-out DIR]``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from riverbed.protocol.codegen.generate import (
    GENERATED_DIR,
    RECORDS_GENERATED_DIR,
    default_records_dir,
    default_schema_dir,
    generate,
    generate_records,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m riverbed.protocol.codegen")
    parser.add_argument("--schemas", type=Path, default=None, help="folder of *.json schemas")
    parser.add_argument("--out", type=Path, default=GENERATED_DIR, help="output folder")
    parser.add_argument(
        "--records",
        type=Path,
        default=None,
        help="folder of <owner>/*.json internal record schemas",
    )
    parser.add_argument(
        "--records-out",
        type=Path,
        default=RECORDS_GENERATED_DIR,
        help="output folder of the internal record classes",
    )
    args = parser.parse_args(argv)
    schemas: Path | None = args.schemas or default_schema_dir()
    records: Path | None = args.records or default_records_dir()
    if schemas is None or records is None:
        print("no schema folder found; pass --schemas and --records", file=sys.stderr)
        return 2
    changed = generate(schemas, args.out)
    print(f"{len(changed)} file(s) written to {args.out} from {schemas}")
    changed = generate_records(records, args.records_out)
    print(f"{len(changed)} file(s) written to {args.records_out} from {records}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
