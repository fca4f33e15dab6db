"""The public API of :mod:`riverbed.protocol.records`, pinned after its split into modules.

The facade must keep exporting exactly these names, as the very objects the per-concept
modules define, so ``isinstance`` checks and monkeypatching see one class, not two.
"""

from __future__ import annotations

from riverbed.protocol import control, record_build, record_decode, record_format, record_rebuild
from riverbed.protocol import records as facade

EXPORTED = {
    "ControlRecordType": control,
    "EndTransactionMarker": control,
    "Header": record_format,
    "Record": record_format,
    "RecordInput": record_build,
    "SimpleRecord": record_build,
    "build_batch": record_build,
    "build_control_batch": control,
    "iter_batches_with_records": record_decode,
    "iter_records": record_decode,
    "parse_control_record": control,
    "read_batch": record_decode,
    "rebuild_batch": record_rebuild,
}

CONSTANTS = {
    "CREATE_TIME": 0,
    "LOG_APPEND_TIME": 1,
    "NO_TIMESTAMP": -1,
    "CONTROL_RECORD_VERSION": 0,
    "END_TXN_MARKER_VERSION": 0,
}


def test_all_is_pinned() -> None:
    assert sorted(facade.__all__) == sorted(EXPORTED)


def test_every_export_is_the_defining_modules_object() -> None:
    for name, module in EXPORTED.items():
        assert getattr(facade, name) is getattr(module, name), name
        assert name in module.__all__, name


def test_constants_stay_importable_from_the_facade() -> None:
    for name, value in CONSTANTS.items():
        assert getattr(facade, name) == value, name


def test_control_marker_built_by_one_module_parses_in_another() -> None:
    blob = facade.build_control_batch(True, producer_id=7, producer_epoch=2, timestamp=5)
    header, [marker] = record_decode.read_batch(blob)
    assert header.is_control and header.is_transactional
    parsed = control.parse_control_record(marker)
    assert parsed == control.EndTransactionMarker(control.ControlRecordType.COMMIT, 0)
