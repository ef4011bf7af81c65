"""The small project the sample session works on (tidytime: parse and format durations), as the
files stood when the session began, and the test-run outputs the session sees. Written for ctxlab."""
from __future__ import annotations

DURATIONS = '''"""Parse durations written the way people write them: "90s", "1h30m", "2 h 5 m", "1.5h"."""
from __future__ import annotations

import re
import math
from dataclasses import dataclass

from .units import UNIT_SECONDS, normalize_unit

__all__ = ["Duration", "DurationError", "parse_duration"]

_PART = re.compile(r"(?P<value>\\d+(?:\\.\\d+)?)(?P<unit>[a-zA-Z]+)$")
"""One number and its unit. Anchored at the end since the refactor (TT-212)."""


class DurationError(ValueError):
    """A duration that cannot be read; the message says which part and why."""


@dataclass(frozen=True)
class Duration:
    """A length of time in whole milliseconds (so 0.1s + 0.2s == 0.3s)."""

    millis: int

    @property
    def seconds(self) -> float:
        return self.millis / 1000

    def __add__(self, other: "Duration") -> "Duration":
        return Duration(self.millis + other.millis)


def _parts(text: str) -> list[tuple[float, str]]:
    """Split "1h30m" into [(1.0, "h"), (30.0, "m")]."""
    out = []
    for match in _PART.finditer(text):
        out.append((float(match["value"]), match["unit"]))
    if not out:
        raise DurationError(f"no duration in {text!r}: expected a number and a unit, like 90s or 1h30m")
    return out


def parse_duration(text: str) -> Duration:
    """The duration written in ``text``; raises DurationError naming the part it cannot read."""
    if not isinstance(text, str):
        raise TypeError(f"parse_duration takes a string, not {type(text).__name__}")
    total = 0.0
    for value, unit in _parts(text.strip().lower()):
        seconds = UNIT_SECONDS[normalize_unit(unit)]
        total += value * seconds
    if total > 10 * 365 * 86400:
        raise DurationError(f"{text!r} is longer than ten years; use a date instead")
    return Duration(int(round(total * 1000)))
'''

UNITS = '''"""Unit names and their length in seconds."""
from __future__ import annotations

UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}

_ALIASES = {
    "msec": "ms", "millisecond": "ms", "milliseconds": "ms",
    "sec": "s", "secs": "s", "second": "s", "seconds": "s",
    "min": "m", "mins": "m", "minute": "m", "minutes": "m",
    "hr": "h", "hrs": "h", "hour": "h", "hours": "h",
    "day": "d", "days": "d", "week": "w", "weeks": "w",
}


def normalize_unit(unit):
    """The canonical unit for a name (``mins`` -> ``m``); raises KeyError for unknown names."""
    unit = unit.lower()
    if unit in UNIT_SECONDS:
        return unit
    if unit in _ALIASES:
        return _ALIASES[unit]
    raise KeyError(f"unknown unit {unit!r}; known: {', '.join(sorted(UNIT_SECONDS))}")
'''

FORMAT = '''"""Write a Duration back as text: the inverse of parse_duration for whole units."""
from __future__ import annotations

from .durations import Duration

_ORDER = (("w", 604800_000), ("d", 86400_000), ("h", 3600_000), ("m", 60_000), ("s", 1000), ("ms", 1))


def format_duration(d: Duration, sep: str = "") -> str:
    """``Duration(5400000)`` -> ``"1h30m"``; ``sep=" "`` gives ``"1h 30m"``."""
    left = d.millis
    parts = []
    for unit, size in _ORDER:
        count, left = divmod(left, size)
        if count:
            parts.append(f"{count}{unit}")
    return sep.join(parts) or "0s"
'''

TEST_DURATIONS = '''import pytest

from tidytime.durations import Duration, DurationError, parse_duration


@pytest.mark.parametrize("text, millis", [
    ("90s", 90_000), ("1.5h", 5_400_000), ("250ms", 250), ("2 days", 172_800_000),
])
def test_parse_single_part(text, millis):
    assert parse_duration(text) == Duration(millis)


def test_parse_compound():
    assert parse_duration("1h30m") == Duration(5_400_000)
    assert parse_duration("1w2d3h") == Duration(788_400_000)


def test_parse_with_spaces():
    assert parse_duration("2 h 5 m") == Duration(7_500_000)
    assert parse_duration(" 10 min ") == Duration(600_000)


def test_unknown_unit_names_the_part():
    with pytest.raises(DurationError, match="'5 parsecs'"):
        parse_duration("5 parsecs")


def test_not_a_string():
    with pytest.raises(TypeError):
        parse_duration(90)
'''

TEST_FORMAT = '''from tidytime.durations import Duration, parse_duration
from tidytime.format import format_duration


def test_round_trip():
    for text in ("1h30m", "2d", "1w2d3h", "45s", "1m500ms"):
        assert format_duration(parse_duration(text)) == text


def test_separator():
    assert format_duration(Duration(5_400_000), sep=" ") == "1h 30m"


def test_zero():
    assert format_duration(Duration(0)) == "0s"
'''

README = '''# tidytime

Parse and format durations the way people write them.

```python
>>> from tidytime import parse_duration, format_duration
>>> parse_duration("1h30m").seconds
5400.0
>>> format_duration(parse_duration("90s"))
'1m30s'
```

Units: ms, s, m, h, d, w, and their long names (`mins`, `hours`, ...). Parts may be separated by
spaces (`2 h 5 m`). Durations over ten years are refused: use a date.

Development: `pip install -e .[dev]`, then `pytest`, `ruff check src`, `mypy src`.
'''

USAGE = '''# Using tidytime

## Reading durations

`parse_duration(text)` returns a `Duration`; `Duration.millis` is exact, `Duration.seconds` a float.

    parse_duration("1h30m")      # Duration(millis=5400000)
    parse_duration("2 h 5 m")    # Duration(millis=7500000)
    parse_duration("1.5h")       # Duration(millis=5400000)

Errors are `DurationError` (a `ValueError`) and name the part that could not be read.

## Writing durations

`format_duration(d, sep="")` writes whole units from weeks down to milliseconds.
'''

CHANGELOG = '''# Changelog

## 0.4.0 (unreleased)
- Refactor: one regular expression per part (TT-212).
- `Duration.__add__`.

## 0.3.2
- `format_duration(sep=...)`.
'''

FILES = {
    "src/tidytime/durations.py": DURATIONS, "src/tidytime/units.py": UNITS, "src/tidytime/format.py": FORMAT,
    "tests/test_durations.py": TEST_DURATIONS, "tests/test_format.py": TEST_FORMAT, "README.md": README,
    "docs/usage.md": USAGE, "CHANGELOG.md": CHANGELOG,
}

_HEAD = ("============================= test session starts ==============================\n"
         "platform linux -- Python 3.11.7, pytest-8.3.3, pluggy-1.5.0\nrootdir: /home/dev/tidytime\n"
         "configfile: pyproject.toml\ncollected 11 items\n\n")

PYTEST_FAIL_1 = _HEAD + '''tests/test_durations.py ....FF..                                         [ 72%]
tests/test_format.py F..                                                 [100%]

=================================== FAILURES ===================================
______________________________ test_parse_compound _____________________________

    def test_parse_compound():
>       assert parse_duration("1h30m") == Duration(5_400_000)
E       AssertionError: assert Duration(millis=1800000) == Duration(millis=5400000)

tests/test_durations.py:13: AssertionError
____________________________ test_parse_with_spaces ____________________________

    def test_parse_with_spaces():
>       assert parse_duration("2 h 5 m") == Duration(7_500_000)

src/tidytime/durations.py:43: in _parts
    raise DurationError(f"no duration in {text!r}: expected a number and a unit, like 90s or 1h30m")
E   tidytime.durations.DurationError: no duration in '2 h 5 m': expected a number and a unit, like 90s or 1h30m

tests/test_durations.py:18: DurationError
_______________________________ test_round_trip ________________________________

    def test_round_trip():
        for text in ("1h30m", "2d", "1w2d3h", "45s", "1m500ms"):
>           assert format_duration(parse_duration(text)) == text
E           AssertionError: assert '30m' == '1h30m'

tests/test_format.py:7: AssertionError
=========================== short test summary info ============================
FAILED tests/test_durations.py::test_parse_compound - AssertionError: assert ...
FAILED tests/test_durations.py::test_parse_with_spaces - tidytime.durations.D...
FAILED tests/test_format.py::test_round_trip - AssertionError: assert '30m' =...
========================= 3 failed, 8 passed in 0.21s ==========================
'''

PYTEST_FAIL_2 = _HEAD + '''tests/test_durations.py .....F..                                         [ 72%]
tests/test_format.py ...                                                 [100%]

=================================== FAILURES ===================================
____________________________ test_parse_with_spaces ____________________________

    def test_parse_with_spaces():
>       assert parse_duration("2 h 5 m") == Duration(7_500_000)

src/tidytime/durations.py:46: in _parts
    raise DurationError(f"cannot read {text[pos:]!r} in {text!r}")
E   tidytime.durations.DurationError: cannot read '2 h 5 m' in '2 h 5 m'

tests/test_durations.py:18: DurationError
=========================== short test summary info ============================
FAILED tests/test_durations.py::test_parse_with_spaces - tidytime.durations.D...
========================= 1 failed, 10 passed in 0.19s =========================
'''

PYTEST_FAIL_3 = _HEAD + '''tests/test_durations.py ......F.                                         [ 72%]
tests/test_format.py ...                                                 [100%]

=================================== FAILURES ===================================
_______________________ test_unknown_unit_names_the_part _______________________

    def test_unknown_unit_names_the_part():
        with pytest.raises(DurationError, match="'5 parsecs'"):
>           parse_duration("5 parsecs")

src/tidytime/durations.py:57: in parse_duration
    seconds = UNIT_SECONDS[normalize_unit(unit)]
src/tidytime/units.py:21: in normalize_unit
    raise KeyError(f"unknown unit {unit!r}; known: {', '.join(sorted(UNIT_SECONDS))}")
E   KeyError: "unknown unit 'parsecs'; known: d, h, m, ms, s, w"
=========================== short test summary info ============================
FAILED tests/test_durations.py::test_unknown_unit_names_the_part - KeyError: ...
========================= 1 failed, 10 passed in 0.20s =========================
'''

PYTEST_PASS = _HEAD + '''tests/test_durations.py ........                                         [ 72%]
tests/test_format.py ...                                                 [100%]

============================== 11 passed in 0.18s ==============================
'''
