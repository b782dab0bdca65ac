"""The bounded reader of persisted files: regular files only, size and depth caps, expected shape, one error."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llama_index_sac._json_io import (
    PersistedFileError,
    has_lone_surrogate,
    parse_json,
    read_json,
    read_regular_file,
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)


def depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    return 0


@settings(max_examples=200, deadline=None)
@given(json_values, st.integers(1, 8))
def test_parse_json_round_trips_or_names_the_depth(value: object, max_depth: int) -> None:
    text = json.dumps(value)
    if depth(value) > max_depth:
        with pytest.raises(PersistedFileError, match=r"^src: is nested deeper than \d+ levels"):
            parse_json(text, "src", expect=None, max_depth=max_depth)
    else:
        assert parse_json(text, "src", expect=None, max_depth=max_depth) == value


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_parse_json_of_any_bytes_is_a_value_or_one_error(data: bytes) -> None:
    try:
        parse_json(data, "f.json", expect=None)
    except PersistedFileError as exc:
        assert str(exc).startswith("f.json: ")


@pytest.mark.parametrize("text", ["[" * 200_000 + "]" * 200_000, '{"a":' * 100_000 + "1" + "}" * 100_000])
def test_very_deep_json_is_one_error_not_a_recursion_error(text: str) -> None:
    with pytest.raises(PersistedFileError, match="nested deeper than 64 levels"):
        parse_json(text, "deep.json", expect=None)


@pytest.mark.parametrize(("text", "expect", "message"), [
    ("[]", dict, "holds a JSON array, not a JSON object"),
    ('"x"', dict, "holds a JSON string, not a JSON object"),
    ("{}", list, "holds a JSON object, not a JSON array"),
    ("true", int, "holds true or false, not a JSON integer"),
    ("NaN", float, "is not valid JSON"),
    ("[1, Infinity]", list, "is not valid JSON"),
])
def test_wrong_shapes_are_named(text: str, expect: type, message: str) -> None:
    with pytest.raises(PersistedFileError, match=message):
        parse_json(text, "s.json", expect=expect)


def test_nan_is_read_only_when_allowed() -> None:
    assert parse_json("[NaN]", "s", expect=list, allow_nan=True)[0] != 0


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "settings.json"
    os.mkfifo(fifo)
    outcome: list[BaseException] = []
    reader = threading.Thread(target=lambda: outcome.append(pytest.raises(PersistedFileError, read_json, fifo).value))
    reader.start()
    reader.join(10)
    assert not reader.is_alive(), "reading a FIFO blocked"
    assert "is not a regular file" in str(outcome[0]) and str(fifo) in str(outcome[0])


def test_a_device_and_a_folder_are_refused(tmp_path: Path) -> None:
    with pytest.raises(PersistedFileError, match="not a regular file"):
        read_regular_file("/dev/zero", max_bytes=10)
    with pytest.raises(PersistedFileError, match="not a regular file"):
        read_json(tmp_path)
    (tmp_path / "link.json").symlink_to("/dev/zero")
    with pytest.raises(PersistedFileError, match="not a regular file"):
        read_json(tmp_path / "link.json")


def test_the_size_cap_is_exact(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text('{"a": 1}')  # 8 bytes
    assert read_json(path, max_bytes=8) == {"a": 1}
    with pytest.raises(PersistedFileError, match="is 8 bytes, more than the limit of 7 bytes"):
        read_json(path, max_bytes=7)


def test_missing_stays_file_not_found_and_bad_utf8_is_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_json(tmp_path / "none.json")
    (tmp_path / "b.json").write_bytes(b'{"a": "\xff"}')
    with pytest.raises(PersistedFileError, match="is not UTF-8 text"):
        read_json(tmp_path / "b.json")


def test_lone_surrogates_are_found() -> None:
    assert has_lone_surrogate("a\ud800b") and has_lone_surrogate("\udfff")
    assert not has_lone_surrogate("a\U0001f600b") and not has_lone_surrogate("")
