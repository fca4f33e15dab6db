"""``python -m riverbed.protocol.codegen [--schemas DIR] [--out DIR]``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from riverbed.protocol.codegen.generate import GENERATED_DIR, default_schema_dir, generate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m riverbed.protocol.codegen")
    parser.add_argument("--schemas", type=Path, default=None, help="folder of *.json schemas")
    parser.add_argument("--out", type=Path, default=GENERATED_DIR, help="output folder")
    args = parser.parse_args(argv)
    schemas: Path | None = args.schemas or default_schema_dir()
    if schemas is None:
        print("no schema folder found; pass --schemas", file=sys.stderr)
        return 2
    changed = generate(schemas, args.out)
    print(f"{len(changed)} file(s) written to {args.out} from {schemas}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
