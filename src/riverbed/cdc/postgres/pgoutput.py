"""Decoder for PostgreSQL's ``pgoutput`` logical replication messages (protocol version 1).

Performs no I/O: :func:`decode` turns the payload of one XLogData message into a value.
Layout (network byte order; ``String`` is NUL-terminated UTF-8)::

    'B' Begin     Int64 final_lsn, Int64 commit_ts (µs since 2000-01-01), Int32 xid
    'C' Commit    Int8 flags, Int64 commit_lsn, Int64 end_lsn, Int64 commit_ts
    'R' Relation  Int32 relid, String schema, String table, Int8 replica_identity,
                  Int16 ncols, ncols x (Int8 flags (1 = key), String name,
                  Int32 type_oid, Int32 typmod)
    'I' Insert    Int32 relid, 'N', TupleData
    'U' Update    Int32 relid, ['K' | 'O', TupleData], 'N', TupleData
    'D' Delete    Int32 relid, 'K' | 'O', TupleData
    'T' Truncate  Int32 nrels, Int8 options, nrels x Int32 relid
    TupleData     Int16 ncols, ncols x ('n' null | 'u' unchanged TOAST |
                  't' Int32 len, text bytes | 'b' Int32 len, binary bytes)

Other messages ('O' origin, 'Y' type, 'M' logical message) decode to None.  A Relation
message always precedes the first change of a relation in a session, and again after its
schema changed; callers keep the latest one per relid.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from riverbed.errors import RiverbedError

__all__ = [
    "UNCHANGED_TOAST",
    "Begin",
    "Column",
    "Commit",
    "Delete",
    "Insert",
    "Message",
    "PgOutputError",
    "Relation",
    "Truncate",
    "Update",
    "decode",
]


class PgOutputError(RiverbedError):
    """A pgoutput message that does not decode (truncated, unknown tuple kind)."""


class _UnchangedToast:
    """Marker for a TOASTed column an UPDATE did not change (its value is not sent)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNCHANGED_TOAST"


UNCHANGED_TOAST = _UnchangedToast()
TupleValue = str | bytes | None | _UnchangedToast


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type_oid: int
    typmod: int
    key: bool


@dataclass(frozen=True, slots=True)
class Relation:
    relid: int
    schema: str
    table: str
    replica_identity: str  # 'd' default (primary key), 'f' full, 'i' index, 'n' nothing
    columns: tuple[Column, ...]


@dataclass(frozen=True, slots=True)
class Begin:
    final_lsn: int
    commit_ts_us: int  # µs since the Unix epoch
    xid: int


@dataclass(frozen=True, slots=True)
class Commit:
    commit_lsn: int
    end_lsn: int
    commit_ts_us: int


@dataclass(frozen=True, slots=True)
class Insert:
    relid: int
    new: tuple[TupleValue, ...]


@dataclass(frozen=True, slots=True)
class Update:
    relid: int
    old: tuple[TupleValue, ...] | None  # present with REPLICA IDENTITY FULL or a key change
    old_is_key_only: bool
    new: tuple[TupleValue, ...]


@dataclass(frozen=True, slots=True)
class Delete:
    relid: int
    old: tuple[TupleValue, ...]
    old_is_key_only: bool  # 'K': only the key columns are set, the others None


@dataclass(frozen=True, slots=True)
class Truncate:
    relids: tuple[int, ...]
    cascade: bool
    restart_identity: bool


Message = Begin | Commit | Relation | Insert | Update | Delete | Truncate

# seconds between 1970-01-01 and 2000-01-01, PostgreSQL's epoch
PG_EPOCH_OFFSET_US = 946_684_800 * 1_000_000


_STRUCTS: dict[str, struct.Struct] = {}


class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.pos = 0

    def take(self, fmt: str) -> int:
        codec = _STRUCTS.get(fmt)
        if codec is None:
            codec = _STRUCTS[fmt] = struct.Struct(fmt)
        if self.pos + codec.size > len(self.buf):
            raise PgOutputError(f"pgoutput message truncated at byte {self.pos}")
        (value,) = codec.unpack_from(self.buf, self.pos)
        self.pos += codec.size
        return int(value)

    def byte(self) -> str:
        if self.pos >= len(self.buf):
            raise PgOutputError(f"pgoutput message truncated at byte {self.pos}")
        self.pos += 1
        return chr(self.buf[self.pos - 1])

    def string(self) -> str:
        end = self.buf.find(b"\0", self.pos)
        if end < 0:
            raise PgOutputError("pgoutput string without its NUL terminator")
        text = self.buf[self.pos : end].decode()
        self.pos = end + 1
        return text

    def raw(self, size: int) -> bytes:
        if self.pos + size > len(self.buf):
            raise PgOutputError(f"pgoutput value truncated at byte {self.pos}")
        data = self.buf[self.pos : self.pos + size]
        self.pos += size
        return data

    def tuple_data(self) -> tuple[TupleValue, ...]:
        values: list[TupleValue] = []
        for _ in range(self.take("!h")):
            kind = self.byte()
            if kind == "n":
                values.append(None)
            elif kind == "u":
                values.append(UNCHANGED_TOAST)
            elif kind == "t":
                values.append(self.raw(self.take("!i")).decode())
            elif kind == "b":
                values.append(self.raw(self.take("!i")))
            else:
                raise PgOutputError(f"unknown pgoutput tuple value kind {kind!r}")
        return tuple(values)


def decode(payload: bytes) -> Message | None:
    """Decode one pgoutput message; None for the kinds a connector does not need."""
    reader = _Reader(payload)
    kind = reader.byte()
    if kind == "B":
        lsn, ts, xid = reader.take("!Q"), reader.take("!q"), reader.take("!I")
        return Begin(lsn, ts + PG_EPOCH_OFFSET_US, xid)
    if kind == "C":
        reader.take("!B")
        lsn, end, ts = reader.take("!Q"), reader.take("!Q"), reader.take("!q")
        return Commit(lsn, end, ts + PG_EPOCH_OFFSET_US)
    if kind == "R":
        relid, schema, table = reader.take("!I"), reader.string(), reader.string()
        identity = reader.byte()
        columns = []
        for _ in range(reader.take("!h")):
            flags, name = reader.take("!B"), reader.string()
            columns.append(Column(name, reader.take("!I"), reader.take("!i"), bool(flags & 1)))
        return Relation(relid, schema, table, identity, tuple(columns))
    if kind == "I":
        relid = reader.take("!I")
        reader.byte()  # 'N'
        return Insert(relid, reader.tuple_data())
    if kind == "U":
        relid = reader.take("!I")
        marker = reader.byte()
        old = None
        if marker in ("K", "O"):
            old = reader.tuple_data()
            reader.byte()  # 'N'
        return Update(relid, old, marker == "K", reader.tuple_data())
    if kind == "D":
        relid = reader.take("!I")
        marker = reader.byte()
        return Delete(relid, reader.tuple_data(), marker == "K")
    if kind == "T":
        count, options = reader.take("!I"), reader.take("!B")
        relids = tuple(reader.take("!I") for _ in range(count))
        return Truncate(relids, bool(options & 1), bool(options & 2))
    return None
