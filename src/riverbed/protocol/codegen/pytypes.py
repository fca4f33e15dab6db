"""Python types, defaults and minimum wire sizes of schema fields, for the emitter."""

from __future__ import annotations

from riverbed.protocol.codegen.schema import FIXED_TYPES, Field, StructDef, VersionRange


def in_range(version: int, versions: VersionRange | None) -> bool:
    return versions is not None and versions[0] <= version <= versions[1]


_SCALAR_PY = {
    "bool": "bool",
    "float64": "float",
    "string": "str",
    "bytes": "bytes",
    "records": "bytes | memoryview",
    "uuid": "uuid.UUID",
}


def element_py_type(fld: Field, owner: str) -> str:
    if fld.struct is not None:
        return f"{owner}.{fld.struct.name}"
    element = fld.element_type
    return _SCALAR_PY.get(element, "int")


def py_type(fld: Field, owner: str) -> str:
    """The attribute's annotation; ``owner`` is the top-level class (nested struct prefix)."""
    base = element_py_type(fld, owner)
    if fld.is_array:
        base = f"list[{base}]"
    if fld.nullable_anywhere() or default_is_null(fld):
        base = f"{base} | None"
    return base


def default_is_null(fld: Field) -> bool:
    """Null by default: a "null" schema default, or records that may be null (records
    that never may, as in FetchSnapshotResponse, default to empty)."""
    return fld.default == "null" or (fld.type == "records" and fld.nullable_anywhere())


def default_expr(fld: Field, owner: str) -> str:
    """A Python expression for the schema default (a fresh object for lists/structs)."""
    if default_is_null(fld):
        return "None"
    if fld.is_array:
        return "[]"
    if fld.struct is not None:
        return f"{owner}.{fld.struct.name}()"
    t = fld.type
    d = fld.default
    if t == "bool":
        return "True" if d == "true" else "False"
    if t == "float64":
        return repr(float(d)) if d else "0.0"
    if t in FIXED_TYPES:
        return str(int(d, 0)) if d else "0"
    if t == "string":
        return repr(d or "")
    if t in ("bytes", "records"):
        return 'b""'
    if t == "uuid":
        return "ZERO_UUID"
    raise ValueError(f"no default for {fld.name}: {t}")


def is_immutable_default(fld: Field) -> bool:
    return default_is_null(fld) or not (fld.is_array or fld.struct is not None)


def min_size(fld: Field, version: int, flexible: bool) -> int:
    """Fewest bytes this (present, untagged) field can take on the wire."""
    if fld.is_array:
        return 1 if flexible else 4
    return min_element_size(
        fld, version, flexible, nullable=in_range(version, fld.nullable_versions)
    )


def min_element_size(fld: Field, version: int, flexible: bool, nullable: bool = False) -> int:
    element = fld.element_type
    if fld.struct is not None:
        return 1 if nullable else struct_min_size(fld.struct, version, flexible)
    if element in FIXED_TYPES:
        return FIXED_TYPES[element][1]
    if element == "uuid":
        return 16
    if element == "string":
        return 1 if flexible else 2
    return 1 if flexible else 4  # bytes, records


def struct_min_size(struct: StructDef, version: int, flexible: bool) -> int:
    total = 1 if flexible else 0
    for fld in struct.fields:
        if in_range(version, fld.versions) and not (
            flexible and in_range(version, fld.tagged_versions)
        ):
            total += min_size(fld, version, field_flexible(fld, version, flexible))
    return max(total, 1)


def field_flexible(fld: Field, version: int, message_flexible: bool) -> bool:
    if fld.flexible_versions is not None:
        return in_range(version, fld.flexible_versions)
    return message_flexible
