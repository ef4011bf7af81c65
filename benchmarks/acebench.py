"""ACEBench (github ACEBench/ACEBench, MIT) as tool-retrieval sets, in Chinese and in English.

Only the categories this project may tune and test on are read: ``data_normal_multi_turn_*``,
``data_special_*`` and ``data_agent_*`` of ``data_all/data_zh`` and ``data_all/data_en``. The
others (single-turn, atom, similar_api, parallel, preference) are never opened: ctxlab's retrieval
is judged on them elsewhere.

Per language, every tool offered by those items is pooled into one catalog (a name offered twice
keeps its first definition), and each item becomes a labelled query:

* multi-turn items: the newest ``user:`` line, earlier user lines as previous turns; gold = the
  functions of its ground truth;
* ``special_incomplete``: gold = the function named by its ground truth;
* ``special_error_param``: gold = the offered function that has the parameter its ground truth names;
* ``agent_*``: the task text; gold = the functions called in its milestones;
* ``special_irrelevant``: no tool of the item fits: these are junk queries (kind "irrelevant").
  In the pooled catalog some other item's tool may fit one of them, so they are a noisy junk set.

    python benchmarks/acebench.py SOURCE OUT_DIR   # SOURCE: a checkout, or a git dir (bare mirror)

writes ``OUT_DIR/{zh,en}/tools.json``, ``queries.jsonl`` and ``junk.jsonl``.
"""
from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

CATEGORIES = ("data_normal_multi_turn_user_adjust", "data_normal_multi_turn_user_switch",
              "data_special_error_param", "data_special_incomplete", "data_special_irrelevant",
              "data_agent_multi_step", "data_agent_multi_turn")
ALLOWED = re.compile(r"^data_(normal_multi_turn_|special_|agent_)")


def _read(source: Path, rel: str) -> str:
    """A file of the ACEBench tree, from a checkout or from a git directory."""
    if (source / rel).is_file():
        return (source / rel).read_text(encoding="utf-8")
    return subprocess.run(["git", "--git-dir", str(source), "show", f"HEAD:{rel}"], check=True,
                          capture_output=True, text=True).stdout


def _rows(source: Path, lang: str, category: str, answers: bool = False) -> Iterator[dict]:
    assert ALLOWED.match(category), category  # the held-back categories are never read
    rel = f"data_all/data_{lang}/" + ("possible_answer/" if answers else "") + f"{category}.json"
    for line in _read(source, rel).splitlines():
        if line.strip():
            yield json.loads(line)


def _literal(value: Any) -> Any:
    return ast.literal_eval(value) if isinstance(value, str) else value


def _user_turns(question: str) -> list[str]:
    """The user lines of a ``user: ... / system: ...`` transcript, each with its continuation lines."""
    turns: list[str] = []
    role = None
    for line in question.splitlines():
        m = re.match(r"^(user|system|assistant):\s?(.*)$", line)
        if m:
            role = m.group(1)
            if role == "user":
                turns.append(m.group(2))
        elif role == "user" and turns:
            turns[-1] += "\n" + line
    return [t.strip() for t in turns if t.strip()] or [question.strip()]


def _gold(category: str, row: dict, answer: dict, offered: list[dict]) -> list[str]:
    truth = answer.get("ground_truth")
    if category.startswith("data_agent_"):
        stones = answer.get("mile_stone") or []
        if stones and isinstance(stones[0], list):  # alternative paths: the first one
            stones = stones[0]
        return list(dict.fromkeys(re.findall(r"([A-Za-z_][\w.]*)\(", " ".join(map(str, stones)))))
    if category == "data_special_error_param":
        keys = set(truth) if isinstance(truth, dict) else set()
        return [f["name"] for f in offered if keys & set((f.get("parameters") or {}).get("properties") or {})][:1]
    if isinstance(truth, dict):
        return list(truth)
    if isinstance(truth, list):
        return [k for item in truth if isinstance(item, dict) for k in item]
    return []


def convert(source: Path, lang: str) -> tuple[list[dict], list[dict], list[dict]]:
    """(tools in OpenAI format, labelled queries, junk queries) for one language."""
    tools: dict[str, dict] = {}
    queries, junk = [], []
    for category in CATEGORIES:
        answers = {a["id"]: a for a in _rows(source, lang, category, answers=True)}
        for row in _rows(source, lang, category):
            offered = [f for f in _literal(row["function"]) if isinstance(f, dict) and f.get("name")]
            for f in offered:
                params = dict(f.get("parameters") or {})
                if params.get("type") == "dict":
                    params["type"] = "object"
                tools.setdefault(f["name"], {"type": "function", "function": {
                    "name": f["name"], "description": f.get("description", ""), "parameters": params}})
            qid = f"acebench-{lang}-{row['id']}"
            if category == "data_special_irrelevant":
                junk.append({"qid": qid, "query": _user_turns(row["question"])[-1], "kind": "irrelevant"})
                continue
            turns = _user_turns(row["question"]) if not category.startswith("data_agent_") else [row["question"].strip()]
            gold = [g for g in _gold(category, row, answers.get(row["id"], {}), offered) if g in tools]
            if gold:
                queries.append({"qid": qid, "query": turns[-1], "previous_user_turns": turns[:-1],
                                "gold_tools": gold, "category": category})
    return list(tools.values()), queries, junk


def write(source: Path, out: Path) -> None:
    """Both languages under ``out``."""
    for lang in ("zh", "en"):
        tools, queries, junk = convert(source, lang)
        d = out / lang
        d.mkdir(parents=True, exist_ok=True)
        (d / "tools.json").write_text(json.dumps(tools, ensure_ascii=False, indent=1), encoding="utf-8")
        for name, rows in (("queries.jsonl", queries), ("junk.jsonl", junk)):
            (d / name).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        print(f"{lang}: {len(tools)} tools, {len(queries)} queries, {len(junk)} junk -> {d}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    write(Path(sys.argv[1]), Path(sys.argv[2]))
