"""The one deserialiser of configs and records: strict, typed, naming the field's path."""
from dataclasses import dataclass, field

import pytest

from common.dataclass_json import from_dict


class BadRecord(ValueError):
    pass


@dataclass(frozen=True)
class Inner:
    count: int
    rate: float = 0.5
    note: str | None = None


@dataclass(frozen=True)
class Outer:
    name: str
    inner: Inner
    maybe: Inner | None = None
    many: list[Inner] = field(default_factory=list)
    keyed: dict[str, Inner] = field(default_factory=dict)
    raw: dict | None = None
    flag: bool = False


def test_round_trip_with_nesting_and_int_to_float():
    out = from_dict(Outer, {"name": "a", "inner": {"count": 3, "rate": 1},
                            "many": [{"count": 1}], "keyed": {"x": {"count": 2, "note": "n"}},
                            "raw": {"any": [1, "thing"]}})
    assert out == Outer("a", Inner(3, 1.0), many=[Inner(1)], keyed={"x": Inner(2, note="n")},
                        raw={"any": [1, "thing"]})
    assert isinstance(out.inner.rate, float)


@pytest.mark.parametrize("data, message", [
    ({"name": "a", "inner": {"count": 1}, "extra": 1}, r"unknown field\(s\) \['extra'\]"),
    ({"name": "a", "inner": {"count": 1, "size": 2}}, r"\['inner.size'\] in inner"),
    ({"name": "a"}, r"missing field\(s\) \['inner'\]"),
    ({"name": "a", "inner": {}}, r"missing field\(s\) \['inner.count'\]"),
    ({"name": "a", "inner": {"count": None}}, "inner.count may not be null"),
    ({"name": "a", "inner": {"count": "3"}}, "inner.count='3' has the wrong type"),
    ({"name": "a", "inner": {"count": True}}, "inner.count=True has the wrong type"),
    ({"name": "a", "inner": {"count": 1.5}}, "inner.count=1.5 has the wrong type"),
    ({"name": "a", "inner": {"count": 1}, "flag": 1}, "flag=1 has the wrong type"),
    ({"name": "a", "inner": {"count": 1}, "many": [{"count": "x"}]}, r"many\[0\].count"),
    ({"name": "a", "inner": {"count": 1}, "keyed": {"k": {"rate": 1}}},
     r"missing field\(s\) \['keyed.k.count'\]"),
    ({"name": "a", "inner": [1]}, "inner must be an object, got list"),
    ([], "Outer must be an object"),
])
def test_anything_off_is_an_error_naming_the_field(data, message):
    with pytest.raises(BadRecord, match=message):
        from_dict(Outer, data, BadRecord)
