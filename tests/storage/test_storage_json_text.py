"""dumps_compact gives json's answer (the same value, or the same kind of refusal) for any value,
and takes orjson's fast path only for plain ones."""

from __future__ import annotations

import enum
import json
import math
import uuid
from collections import OrderedDict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cortexgraph.storage import json_text
from cortexgraph.storage.json_text import dumps_compact, plain_json


class Colour(enum.Enum):
    RED = 1


class Level(enum.IntEnum):
    HIGH = 3


class Name(str):
    pass


def json_answer(value, allow_nan=False):
    try:
        return json.loads(
            json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=allow_nan)
        )
    except (TypeError, ValueError) as exc:
        return type(exc)


def our_answer(value, allow_nan=False):
    try:
        return json.loads(dumps_compact(value, allow_nan=allow_nan))
    except (TypeError, ValueError) as exc:
        return type(exc)


def same(a, b):
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b


ODD_VALUES = [
    float("nan"),
    float("inf"),
    {"x": [1, {"y": float("-inf")}]},
    Colour.RED,
    Level.HIGH,
    uuid.UUID(int=7),
    Name("x"),
    {1: "int key"},
    {"big": 2**70},
    "lone \ud800 surrogate",
    b"bytes",
    {1, 2},
    OrderedDict(a=1),
    (1, "two", None),
    [[[[[[]]]]]],
]


@pytest.mark.parametrize("value", ODD_VALUES, ids=repr)
@pytest.mark.parametrize("allow_nan", [False, True])
def test_odd_values_get_jsons_answer(value, allow_nan):
    assert same(our_answer(value, allow_nan), json_answer(value, allow_nan))


@pytest.mark.parametrize("value", [Colour.RED, uuid.UUID(int=7), float("nan"), {"a": [Name("x")]}])
def test_values_orjson_would_write_differently_are_not_plain(value):
    assert not plain_json(value)
    assert not plain_json({"meta": {"extra": [value]}})


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(deadline=None)  # examples: the profile's budget (tests/conftest.py)
@given(json_values)
def test_any_json_value_round_trips_as_json_writes_it(value):
    assert same(our_answer(value), json_answer(value))


def test_plain_records_take_orjson(monkeypatch):
    calls = []
    real = json_text.orjson.dumps
    monkeypatch.setattr(json_text.orjson, "dumps", lambda v: calls.append(v) or real(v))
    record = {"id": "a", "n": 1, "f": 0.5, "meta": {"tags": ["x"], "extra": {"k": [None, True]}}}
    assert json.loads(dumps_compact(record)) == record
    assert calls == [record]
