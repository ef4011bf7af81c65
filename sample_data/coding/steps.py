"""What the agent does in the sample session, step by step (35 tool calls). Written for ctxlab."""
from __future__ import annotations

OLD_PARTS = '''def _parts(text: str) -> list[tuple[float, str]]:
    """Split "1h30m" into [(1.0, "h"), (30.0, "m")]."""
    out = []
    for match in _PART.finditer(text):
        out.append((float(match["value"]), match["unit"]))
    if not out:
        raise DurationError(f"no duration in {text!r}: expected a number and a unit, like 90s or 1h30m")
    return out'''

NEW_PARTS = '''def _parts(text: str) -> list[tuple[float, str]]:
    """Split "1h30m" into [(1.0, "h"), (30.0, "m")]; every character must belong to a part."""
    out, pos = [], 0
    while pos < len(text):
        match = _PART.match(text, pos)
        if match is None:
            raise DurationError(f"cannot read {text[pos:]!r} in {text!r}")
        out.append((float(match["value"]), match["unit"]))
        pos = match.end()
    if not out:
        raise DurationError(f"no duration in {text!r}: expected a number and a unit, like 90s or 1h30m")
    return out'''

GIT_LOG = """a41c9e2 (HEAD -> fix/durations, origin/main, main) Refactor: one regular expression per part (TT-212)
7d02b18 Duration.__add__
c3e5f70 format_duration(sep=...)
19b84aa Release 0.3.2"""

TREE = """.:
CHANGELOG.md  README.md  docs  pyproject.toml  src  tests

./docs:
usage.md

./src/tidytime:
__init__.py  durations.py  format.py  units.py

./tests:
test_durations.py  test_format.py"""

REFACTOR_DIFF = '''diff --git a/src/tidytime/durations.py b/src/tidytime/durations.py
index 5be21f0..9a0d3c4 100644
--- a/src/tidytime/durations.py
+++ b/src/tidytime/durations.py
@@ -12,7 +12,8 @@ __all__ = ["Duration", "DurationError", "parse_duration"]
-_PART = re.compile(r"\\s*(\\d+(?:\\.\\d+)?)\\s*([a-zA-Z]+)\\s*")
+_PART = re.compile(r"(?P<value>\\d+(?:\\.\\d+)?)(?P<unit>[a-zA-Z]+)$")
+"""One number and its unit. Anchored at the end since the refactor (TT-212)."""'''


def run(s, read, edit, bash, grep, fail1, fail2, fail3, passed) -> None:
    """Append the session's steps to ``s`` (a build.Session)."""
    D, U, F = "src/tidytime/durations.py", "src/tidytime/units.py", "src/tidytime/format.py"
    c, o = bash("git status --short && git log --oneline -4", GIT_LOG, "Show working tree status and recent commits")
    c2, o2 = bash("ls -R . | grep -v __pycache__", TREE, "List the project files")
    s.step("I'll start by looking at the repository state and layout.", [c, c2], [o, o2])
    c, o = bash("python -m pytest -q 2>&1 | tail -40", fail1, "Run the test suite")
    s.step("Now let me run the tests to see the failures.", [c], [o], [True])
    c, o = read(D)
    c2, o2 = read("tests/test_durations.py")
    s.step("Three failures, all from parse_duration. Let me read the parser and its tests.", [c, c2], [o, o2])
    c, o = bash("git show a41c9e2 -- src/tidytime/durations.py | head -30", REFACTOR_DIFF, "Show the refactor's diff")
    s.step("The `$` anchor on `_PART` looks wrong for `finditer`: it can only match the last part. Let me "
           "confirm with the refactor's diff.", [c], [o])
    c, o = bash("python -c \"from tidytime.durations import _parts; print(_parts('1h30m'))\"", "[(30.0, 'm')]",
                "Check what _parts returns for 1h30m")
    s.step("", [c], [o])
    c, o = read(U)
    s.step("Confirmed: only the last part is read. Before fixing, let me check how units are normalized.", [c], [o])
    c, o = grep("_PART", f"{D}:12:_PART = re.compile(r\"(?P<value>\\d+(?:\\.\\d+)?)(?P<unit>[a-zA-Z]+)$\")\n"
                         f"{D}:39:    for match in _PART.finditer(text):", "src")
    s.step("", [c], [o])
    c, o = edit(D, '_PART = re.compile(r"(?P<value>\\d+(?:\\.\\d+)?)(?P<unit>[a-zA-Z]+)$")\n'
                   '"""One number and its unit. Anchored at the end since the refactor (TT-212)."""',
                '_PART = re.compile(r"(?P<value>\\d+(?:\\.\\d+)?)(?P<unit>[a-zA-Z]+)")\n'
                '"""One number and its unit; _parts matches them one after the other."""')
    s.step("I'll drop the anchor and make `_parts` consume the whole text, so garbage between parts is an "
           "error instead of being skipped.", [c], [o])
    c, o = edit(D, OLD_PARTS, NEW_PARTS)
    s.step("", [c], [o])
    c, o = bash("python -m pytest -q 2>&1 | tail -25", fail2, "Run the test suite")
    s.step("", [c], [o], [True])
    c, o = read(D, 12, 3)
    s.step("Compound durations pass now. Spaces are not allowed by the pattern; let me look at it again.", [c], [o])
    c, o = edit(D, '_PART = re.compile(r"(?P<value>\\d+(?:\\.\\d+)?)(?P<unit>[a-zA-Z]+)")',
                '_PART = re.compile(r"\\s*(?P<value>\\d+(?:\\.\\d+)?)\\s*(?P<unit>[a-zA-Z]+)\\s*")')
    s.step("The pre-refactor pattern allowed spaces around each part; I'll restore that.", [c], [o])
    c, o = bash("python -m pytest -q 2>&1 | tail -25", fail3, "Run the test suite")
    s.step("", [c], [o], [True])
    c, o = grep("normalize_unit", f"{D}:8:from .units import UNIT_SECONDS, normalize_unit\n"
                                  f"{D}:57:        seconds = UNIT_SECONDS[normalize_unit(unit)]\n"
                                  f"{U}:15:def normalize_unit(unit):", "src")
    s.step("Now `5 parsecs` reaches the unit lookup, which raises KeyError instead of DurationError. "
           "Let me find the callers.", [c], [o])
    c, o = read(D, 50, 12)
    s.step("", [c], [o])
    c, o = edit(D, "        seconds = UNIT_SECONDS[normalize_unit(unit)]\n",
                "        try:\n            seconds = UNIT_SECONDS[normalize_unit(unit)]\n"
                "        except KeyError as e:\n"
                "            raise DurationError(f\"{text!r}: {e.args[0]}\") from None\n")
    s.step("I'll turn the unknown unit into a DurationError that names the input, as the test expects.", [c], [o])
    c, o = bash("python -m pytest -q 2>&1 | tail -25", passed, "Run the test suite")
    s.step("", [c], [o])
    c, o = read(F)
    c2, o2 = read("tests/test_format.py")
    s.step("All 11 pass. The task also asks to keep format_duration's round trip; let me check it covers the "
           "cases the parser now accepts.", [c, c2], [o, o2])
    c, o = bash("python -c \"from tidytime import parse_duration as p, format_duration as f; "
                "print([f(p(t)) for t in ['2 h 5 m', '1.5h', ' 10 min ', '1w2d3h']])\"",
                "['2h5m', '1h30m', '10m', '1w2d3h']", "Round-trip the new inputs")
    s.step("", [c], [o])
    c, o = bash("ruff check src", "src/tidytime/durations.py:5:8: F401 [*] `math` imported but unused\n"
                                  "Found 1 error.\n[*] 1 fixable with the `--fix` option.", "Lint")
    s.step("Round trips hold. Now ruff and mypy.", [c], [o], [True])
    c, o = edit(D, "import re\nimport math\n", "import re\n")
    s.step("", [c], [o])
    c, o = bash("ruff check src && mypy src", "All checks passed!\n"
                "src/tidytime/units.py:15: error: Function is missing a type annotation  [no-untyped-def]\n"
                "Found 1 error in 1 file (checked 4 source files)", "Lint and type-check")
    s.step("", [c], [o], [True])
    c, o = edit(U, "def normalize_unit(unit):", "def normalize_unit(unit: str) -> str:")
    s.step("", [c], [o])
    c, o = bash("mypy src", "Success: no issues found in 4 source files", "Type-check")
    s.step("", [c], [o])
    c, o = grep("parse_duration\\(", "README.md:7:>>> parse_duration(\"1h30m\").seconds\n"
                "README.md:9:>>> format_duration(parse_duration(\"90s\"))\n"
                "docs/usage.md:5:`parse_duration(text)` returns a `Duration`; `Duration.millis` is exact, "
                "`Duration.seconds` a float.\n"
                "docs/usage.md:7:    parse_duration(\"1h30m\")      # Duration(millis=5400000)\n"
                "docs/usage.md:8:    parse_duration(\"2 h 5 m\")    # Duration(millis=7500000)\n"
                "docs/usage.md:9:    parse_duration(\"1.5h\")       # Duration(millis=5400000)")
    s.step("Let me check the docs still describe the behaviour.", [c], [o])
    c, o = read("docs/usage.md")
    s.step("", [c], [o])
    c, o = edit("docs/usage.md", "Errors are `DurationError` (a `ValueError`) and name the part that could not be "
                                 "read.",
                "Errors are `DurationError` (a `ValueError`) and name the part that could not be read; an unknown "
                "unit is a `DurationError` too.")
    s.step("The docs match; I'll add a line on unknown units, which now raise DurationError.", [c], [o])
    c, o = read("CHANGELOG.md")
    s.step("", [c], [o])
    c, o = edit("CHANGELOG.md", "- Refactor: one regular expression per part (TT-212).\n",
                "- Refactor: one regular expression per part (TT-212).\n"
                "- Fix: compound (`1h30m`) and spaced (`2 h 5 m`) durations parse again; an unknown unit raises "
                "`DurationError`.\n")
    s.step("", [c], [o])
    c, o = bash("python -m pytest -q 2>&1 | tail -3 && ruff check src && mypy src",
                "11 passed in 0.18s\nAll checks passed!\nSuccess: no issues found in 4 source files",
                "Run tests, lint and type-check")
    s.step("Final check of everything together.", [c], [o])
    c, o = bash("git diff --stat", " CHANGELOG.md              |  1 +\n docs/usage.md             |  3 ++-\n"
                                   " src/tidytime/durations.py | 20 +++++++++++++-------\n"
                                   " src/tidytime/units.py     |  2 +-\n 4 files changed, 17 insertions(+), 9 "
                                   "deletions(-)", "Summarize the change")
    s.step("", [c], [o])
    c, o = bash("git add -A && git commit -q -m \"Fix compound and spaced durations (TT-212 regression)\" && "
                "git log --oneline -1", "e6f1d03 (HEAD -> fix/durations) Fix compound and spaced durations "
                                        "(TT-212 regression)", "Commit the fix")
    s.step("", [c], [o])
    s.response("Fixed and committed on `fix/durations` (e6f1d03).\n\n"
               "- **Cause**: the TT-212 refactor anchored `_PART` with `$`, so `finditer` only matched the last "
               "part (`1h30m` read as `30m`), and it dropped the spaces the old pattern allowed.\n"
               "- **Fix** (`src/tidytime/durations.py`): no anchor; `_parts` now consumes the whole text part by "
               "part (anything unreadable is a `DurationError` naming it) and allows spaces around each part; an "
               "unknown unit raises `DurationError` instead of `KeyError`.\n"
               "- Also: removed an unused import (ruff), typed `normalize_unit` (mypy), a line in `docs/usage.md` "
               "and the CHANGELOG.\n\n"
               "All 11 tests pass, `ruff check src` and `mypy src` are clean; `format_duration` round-trips "
               "`1h30m`, `1w2d3h`, and normalizes `2 h 5 m` to `2h5m`.", [])
