"""Writes ``coding_agent_session.jsonl``: a coding agent's session, written for this project, in
Claude Code's session-file format (one record a line; one API response spread over several
assistant lines sharing ``message.id``; ``queue-operation``, ``progress`` and
``file-history-snapshot`` lines that carry no message).

One user message (fix a failing duration parser), then 35 tool calls (Read, Grep, Edit, Bash) over
a small Python project, with file reads, failing and passing test runs, and edits that copy
text from earlier reads: the shape where a coding agent's context grows fastest.

Run ``python sample_data/coding/build.py`` to write it again (deterministic; a path argument writes
there instead).
"""
from __future__ import annotations

import json
from pathlib import Path

from project import FILES, PYTEST_FAIL_1, PYTEST_FAIL_2, PYTEST_FAIL_3, PYTEST_PASS  # noqa: I001

OUT = Path(__file__).with_name("coding_agent_session.jsonl")
CWD = "/home/dev/tidytime"
SESSION = "5d0c9a62-3f1e-4c1b-9a57-2b8e4f7d1c03"
MODEL = "claude-sonnet-4-5-20250929"
TASK = ("tests/test_durations.py fails since yesterday's refactor: parse_duration('1h30m') raises ValueError and "
        "'2 h 5 m' is rejected too. Fix the parser without changing its public API, keep format_duration's "
        "round trip working, run the whole test suite, ruff and mypy, and commit with a short message.")


def numbered(text: str, start: int = 1) -> str:
    """File text as Claude Code's Read tool shows it: a right-aligned line number, a tab, the line."""
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(text.splitlines(), start))


class Session:
    """Builds the records: uuids, timestamps and parent links like a real session file."""

    def __init__(self) -> None:
        self.lines: list[dict] = []
        self.n = 0
        self.second = 0
        self.parent: str | None = None
        self.calls = 0

    def _base(self, kind: str) -> dict:
        self.n += 1
        self.second += 3
        uid = f"00000000-0000-4000-8000-{self.n:012d}"
        rec = {"parentUuid": self.parent, "isSidechain": False, "userType": "external", "cwd": CWD,
               "sessionId": SESSION, "version": "2.0.46", "gitBranch": "fix/durations", "type": kind,
               "uuid": uid, "timestamp": f"2025-11-20T09:{self.second // 60:02d}:{self.second % 60:02d}.000Z"}
        self.parent = uid
        return rec

    def user(self, content) -> None:
        self.lines.append({**self._base("user"), "message": {"role": "user", "content": content}})

    def response(self, text: str, calls: list[tuple[str, dict]]) -> list[str]:
        """One API response: its text and each tool_use on a line of its own (same message.id)."""
        mid = f"msg_01Tidy{len(self.lines):04d}"
        blocks = ([{"type": "text", "text": text}] if text else [])
        ids = []
        for name, args in calls:
            self.calls += 1
            ids.append(f"toolu_01Tidy{self.calls:04d}")
            blocks.append({"type": "tool_use", "id": ids[-1], "name": name, "input": args})
        for b in blocks:
            self.lines.append({**self._base("assistant"), "requestId": f"req_{mid}", "message": {
                "id": mid, "type": "message", "role": "assistant", "model": MODEL, "content": [b],
                "stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None}})
        return ids

    def results(self, ids: list[str], outputs: list[str], errors: list[bool] | None = None) -> None:
        for k, (tid, out) in enumerate(zip(ids, outputs)):
            block = {"type": "tool_result", "tool_use_id": tid, "content": out}
            if errors and errors[k]:
                block["is_error"] = True
            self.user([block])

    def step(self, text: str, calls: list[tuple[str, dict]], outputs: list[str], errors: list[bool] | None = None):
        self.results(self.response(text, calls), outputs, errors)

    def other(self, record: dict) -> None:
        self.lines.append(record)


def read(path: str, start: int = 1, limit: int | None = None) -> tuple[tuple[str, dict], str]:
    text = FILES[path]
    lines = text.splitlines()[start - 1:(start - 1 + limit) if limit else None]
    args = {"file_path": f"{CWD}/{path}", **({"offset": start, "limit": limit} if limit else {})}
    return ("Read", args), numbered("\n".join(lines), start)


def edit(path: str, old: str, new: str) -> tuple[tuple[str, dict], str]:
    assert old in FILES[path], (path, old)
    FILES[path] = FILES[path].replace(old, new, 1)
    return (("Edit", {"file_path": f"{CWD}/{path}", "old_string": old, "new_string": new}),
            f"The file {CWD}/{path} has been updated.")


def bash(command: str, output: str, description: str = "") -> tuple[tuple[str, dict], str]:
    args = {"command": command, **({"description": description} if description else {})}
    return ("Bash", args), output


def grep(pattern: str, output: str, path: str = "") -> tuple[tuple[str, dict], str]:
    return ("Grep", {"pattern": pattern, **({"path": path} if path else {}), "output_mode": "content", "-n": True}), output


def build() -> list[dict]:
    s = Session()
    s.other({"type": "queue-operation", "operation": "dequeue", "timestamp": "2025-11-20T09:00:00.000Z",
             "sessionId": SESSION})
    s.user(TASK)
    s.other({"type": "file-history-snapshot", "messageId": "snap-0", "snapshot": {"trackedFileBackups": {}},
             "isSnapshotUpdate": False})
    import steps
    steps.run(s, read, edit, bash, grep, PYTEST_FAIL_1, PYTEST_FAIL_2, PYTEST_FAIL_3, PYTEST_PASS)
    return s.lines


if __name__ == "__main__":
    import sys
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT  # another path: to compare with the bundled file
    records = build()
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    print(f"wrote {out}: {len(records)} lines")
