"""The public coding-agent traces of the needs measure, split by file into what rules were tuned on and what
they are reported on, written out of local git mirrors of their repositories.

Splits (by file, never by message; a mini-swe-agent run goes to a bucket by the sha1 of its file
name, ``int(sha1(name)) % 20``):

* ``needs_tune``: the needs rules (``ctxlab.code_facts``) were written and their thresholds chosen
  by reading these: mini-swe-agent runs of bucket 0 (22) and SWE-agent's demonstrations (19, the
  9 CTF ones included).
* ``needs_report``: the needs precision and counts are reported on these: mini-swe-agent runs of
  bucket 1 (25), SWE-agent's three test trajectories, mini-swe-agent's two test trajectories.
  The diagnose rule for sed line addresses of any command letter was written from this split's
  findings, so it is not held out for diagnose.
* ``diagnose_holdout``: diagnose false positives are reported on these: mini-swe-agent runs of
  buckets 2-4 (79) and SWE-agent's CTF demonstrations (9, shell-only; no diagnose rule was written
  from them, though the needs rules were tuned on them).

Sources (all MIT):
* gruckion/mini-swe-agent ``d12a71affd95403b036b2bdbd827349b77bfffb9``
  ``swebench_results/20251118_gemini-3-pro-74pct/trajs/*/*.traj.json``: 500 mini-swe-agent 1.15
  runs of Gemini 3 Pro on SWE-bench Verified (bash only: sed, heredocs, python scripts).
* SWE-agent/SWE-agent ``3ea751c087f32b16e039a2233dd6eefecef325d5`` ``trajectories/demonstrations``
  and ``tests/test_data/trajectories`` (``*.traj``).
* SWE-agent/mini-swe-agent ``a83fcae82d2a08f0ee0c688f9d137b3566c097f8`` ``tests/test_data/*.traj.json``.

    python benchmarks/coding_traces.py SPLIT OUT_DIR [--mirrors /work/.mirror]

Mirrors are the directories the ``fetch`` tool makes (``<owner>+<name>/repo``); a bare or normal
clone at the named commit works as well (pass its parent layout the same way).
"""
from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

MINI = ("gruckion/mini-swe-agent", "d12a71affd95403b036b2bdbd827349b77bfffb9",
        "swebench_results/20251118_gemini-3-pro-74pct/trajs/")
SWE = ("SWE-agent/SWE-agent", "3ea751c087f32b16e039a2233dd6eefecef325d5", "")
MINI_TESTS = ("SWE-agent/mini-swe-agent", "a83fcae82d2a08f0ee0c688f9d137b3566c097f8", "tests/test_data/")
BUCKETS = {"needs_tune": (0,), "needs_report": (1,), "diagnose_holdout": (2, 3, 4)}
SPLITS = tuple(BUCKETS)


def bucket(name: str) -> int:
    """The bucket of a mini-swe-agent run, by the sha1 of its file name."""
    return int(hashlib.sha1(name.encode()).hexdigest(), 16) % 20


def _git(mirrors: Path, repo: str, *args: str) -> bytes:
    git_dir = mirrors / repo.replace("/", "+") / "repo"
    return subprocess.check_output(["git", "--git-dir", str(git_dir), *args])


def _files(mirrors: Path, source: tuple[str, str, str]) -> list[str]:
    repo, commit, under = source
    out = _git(mirrors, repo, "ls-tree", "-r", "--name-only", commit, *([under] if under else []))
    return out.decode().splitlines()


def members(split: str, mirrors: Path) -> list[tuple[str, tuple[str, str, str], str]]:
    """(local file name, source, path in the source) of every trace of ``split``."""
    if split not in BUCKETS:
        raise SystemExit(f"unknown split {split!r}; known: {', '.join(SPLITS)}")
    out = []
    for path in _files(mirrors, MINI):
        name = path.rsplit("/", 1)[-1]
        if path.endswith(".traj.json") and bucket(name) in BUCKETS[split]:
            out.append((f"mini__{name}", MINI, path))
    for path in _files(mirrors, SWE):
        if not path.endswith(".traj"):
            continue
        demo, ctf = path.startswith("trajectories/demonstrations/"), "/ctf/" in path
        if (split == "needs_tune" and demo) or (split == "diagnose_holdout" and ctf) or \
                (split == "needs_report" and path.startswith("tests/test_data/trajectories/")):
            parent = path.rsplit("/", 2)[-2].split("__t-")[0][:60]
            out.append((f"swe__{parent}__{path.rsplit('/', 1)[-1]}", SWE, path))
    if split == "needs_report":
        out += [(f"mini__{p.rsplit('/', 1)[-1]}", MINI_TESTS, p) for p in _files(mirrors, MINI_TESTS)
                if p.endswith(".traj.json")]
    return sorted(out)


def materialize(split: str, out_dir: Path, mirrors: Path = Path("/work/.mirror")) -> list[Path]:
    """Write the traces of ``split`` into ``out_dir`` (skipping files already there); their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, (repo, commit, _), path in members(split, mirrors):
        target = out_dir / name
        if not target.exists():
            target.write_bytes(_git(mirrors, repo, "show", f"{commit}:{path}"))
        paths.append(target)
    return paths


def load_trace(path: Path):
    """A trace as ctxlab reads it (a ``mini__`` file as a mini-swe-agent trajectory)."""
    from ctxlab.formats import load
    return load(path, format="mini_swe_agent" if path.name.startswith("mini__") else None)


if __name__ == "__main__":
    args = sys.argv[1:]
    mirrors = Path(args[args.index("--mirrors") + 1]) if "--mirrors" in args else Path("/work/.mirror")
    if len(args) < 2:
        sys.exit(__doc__)
    for p in materialize(args[0], Path(args[1]), mirrors):
        print(p)
