"""Kafka's JSON message schemas, parsed into a small model the emitter walks.

The schema files are JSON with ``//`` line comments (``SCHEMA-FORMAT.md`` beside them
describes the format).  Loading resolves ``commonStructs`` and struct types declared once
and referenced again by name, converts version strings ("0+", "3-7", "none") into
inclusive ranges and applies :data:`~riverbed.protocol.codegen.overrides.MIN_VERSION_OVERRIDES`
(the ranges we extend downward, e.g. Produce v0-2 for librdkafka, KAFKA-18659) and
:data:`~riverbed.protocol.codegen.overrides.LEGACY_FIELDS` (the fields those need).

Pure functions over files; no state.
"""

from __future__ import annotations

import copy
import json
import keyword
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from riverbed.protocol.codegen.overrides import LEGACY_FIELDS, MIN_VERSION_OVERRIDES

OPEN_END = 0x7FFF
VersionRange = tuple[int, int]

FIXED_TYPES: dict[str, tuple[str, int]] = {
    "bool": ("?", 1),
    "int8": ("b", 1),
    "int16": ("h", 2),
    "uint16": ("H", 2),
    "int32": ("i", 4),
    "uint32": ("I", 4),
    "int64": ("q", 8),
    "float64": ("d", 8),
}
VARIABLE_TYPES = {"string", "bytes", "records", "uuid"}

_COMMENT = re.compile(r"^\s*//.*$", re.MULTILINE)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def parse_versions(text: str | None) -> VersionRange | None:
    """ "3+" -> (3, 32767); "1-4" -> (1, 4); "2" -> (2, 2); "none"/None -> None."""
    if text is None or text == "none":
        return None
    text = text.strip()
    if text.endswith("+"):
        return int(text[:-1]), OPEN_END
    if "-" in text:
        low, high = text.split("-")
        return int(low), int(high)
    return int(text), int(text)


def snake_case(name: str) -> str:
    """``TopicData`` -> ``topic_data``; ``V3AndBelowTopics`` -> ``v3_and_below_topics``."""
    snake = _CAMEL.sub("_", name).lower()
    return snake + "_" if keyword.iskeyword(snake) else snake


@dataclass
class Field:
    name: str  # schema name, CamelCase
    attr: str  # python attribute, snake_case
    type: str  # schema type: "int32", "string", "[]int32", "[]Foo", "Foo"
    versions: VersionRange | None
    nullable_versions: VersionRange | None
    tag: int | None
    tagged_versions: VersionRange | None
    flexible_versions: VersionRange | None  # field-level override (RequestHeader.ClientId)
    default: str | None
    struct: StructDef | None = None

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.struct is not None

    def nullable_anywhere(self) -> bool:
        return self.nullable_versions is not None

    def spec_type(self) -> str:
        if self.struct is not None:
            return "[]struct" if self.is_array else "struct"
        return self.type


@dataclass
class StructDef:
    name: str  # class name (schema struct type)
    fields: list[Field] = field(default_factory=list)


@dataclass
class MessageDef:
    name: str
    type: str  # request / response / header / data
    api_key: int | None
    valid_versions: VersionRange
    flexible_versions: VersionRange | None
    fields: list[Field]
    structs: list[StructDef]  # every nested struct, in first-seen order
    source: str  # schema file name, or <folder>/<file> for the internal record schemas


def strip_comments(text: str) -> str:
    return _COMMENT.sub("", text)


def load_schema(path: Path, source: str | None = None) -> MessageDef | None:
    """Parse one schema file; ``source`` (default: the file name) names it in the output.

    None for a schema whose ``validVersions`` is "none": an API Kafka removed (4.x keeps
    LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown so), nothing to generate.
    """
    raw = json.loads(strip_comments(path.read_text(encoding="utf-8")))
    if parse_versions(raw["validVersions"]) is None:
        return None
    return build_message(raw, source or path.name)


def with_legacy_fields(raw: dict[str, Any]) -> dict[str, Any]:
    """``raw`` with the fields :data:`LEGACY_FIELDS` puts back (a copy; ``raw`` is kept)."""
    legacy = LEGACY_FIELDS.get(raw["name"], ())
    if not legacy:
        return raw
    raw = copy.deepcopy(raw)
    for path, after, extra in legacy:
        fields: list[dict[str, Any]] = raw["fields"]
        for step in path:
            fields = next(f for f in fields if f["name"] == step)["fields"]
        index = next(i for i, f in enumerate(fields) if f["name"] == after)
        fields.insert(index + 1, dict(extra))
    return raw


def build_message(raw: dict[str, Any], source: str) -> MessageDef:
    raw = with_legacy_fields(raw)
    name: str = raw["name"]
    valid = parse_versions(raw["validVersions"])
    assert valid is not None
    if name in MIN_VERSION_OVERRIDES:
        valid = (MIN_VERSION_OVERRIDES[name], valid[1])
    structs: dict[str, StructDef] = {}
    common = {c["name"]: c for c in raw.get("commonStructs", [])}
    pending: dict[str, list[Field]] = {}
    fields = [_build_field(f, structs, common, pending) for f in raw.get("fields", [])]
    for struct_name, refs in pending.items():
        for ref in refs:
            ref.struct = structs[struct_name]
    return MessageDef(
        name=name,
        type=raw["type"],
        api_key=raw.get("apiKey"),
        valid_versions=valid,
        flexible_versions=parse_versions(raw.get("flexibleVersions")),
        fields=fields,
        structs=list(structs.values()),
        source=source,
    )


def _build_field(
    raw: dict[str, Any],
    structs: dict[str, StructDef],
    common: dict[str, dict[str, Any]],
    pending: dict[str, list[Field]],
) -> Field:
    ftype: str = raw["type"]
    fld = Field(
        name=raw["name"],
        attr=snake_case(raw["name"]),
        type=ftype,
        # Kafka: a tagged field may leave out "versions"; its tagged versions then apply
        versions=parse_versions(raw.get("versions", raw.get("taggedVersions"))),
        nullable_versions=parse_versions(raw.get("nullableVersions")),
        tag=raw.get("tag"),
        tagged_versions=parse_versions(raw.get("taggedVersions")),
        flexible_versions=parse_versions(raw["flexibleVersions"])
        if "flexibleVersions" in raw
        else None,
        default=_default_text(raw),
    )
    if "flexibleVersions" in raw and fld.flexible_versions is None:
        fld.flexible_versions = (-1, -1)  # explicitly never flexible
    element = fld.element_type
    if element in FIXED_TYPES or element in VARIABLE_TYPES:
        return fld
    # a struct type: declared here, in commonStructs, or elsewhere in this message
    sub_fields = raw.get("fields")
    if sub_fields is None and element in common and element not in structs:
        sub_fields = common[element]["fields"]
    if sub_fields is not None and element not in structs:
        struct_def = StructDef(element)
        structs[element] = struct_def
        struct_def.fields = [_build_field(f, structs, common, pending) for f in sub_fields]
    if element in structs:
        fld.struct = structs[element]
    else:
        pending.setdefault(element, []).append(fld)
    return fld


def _default_text(raw: dict[str, Any]) -> str | None:
    """The field's default as text; a JSON ``null`` default means "null" (Kafka reads
    ``"default": null`` on a nullable field as a null default)."""
    if "default" not in raw:
        return None
    value = raw["default"]
    return "null" if value is None else str(value).strip()


def load_all(schema_dir: Path) -> list[MessageDef]:
    """Every ``*.json`` schema in ``schema_dir`` with versions, sorted by file name
    (deterministic)."""
    loaded = (load_schema(p) for p in sorted(schema_dir.glob("*.json")))
    return [m for m in loaded if m is not None]


def load_tree(schema_dir: Path) -> list[MessageDef]:
    """Every ``*.json`` one folder down (``records/<owner>/<Name>.json``), sorted by
    relative path; each :attr:`MessageDef.source` is that ``<owner>/<Name>.json`` path."""
    paths = sorted(schema_dir.glob("*/*.json"), key=lambda p: p.relative_to(schema_dir).as_posix())
    loaded = (load_schema(p, p.relative_to(schema_dir).as_posix()) for p in paths)
    return [m for m in loaded if m is not None]
