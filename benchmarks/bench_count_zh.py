"""How far each tokenizer is from the others on Chinese text.

Prints, for a Chinese text, the tokens of cl100k_base, o200k_base, DeepSeek's tokenizer, Qwen's
(Qwen2.5/Qwen3 and Qwen3.5/3.6) and the chars/4 rule, and each one's ratio to DeepSeek's count;
then each Chinese sample conversation counted as a request (framing and tools included) for
gpt-4o, deepseek-chat and qwen3-32b.

    python benchmarks/bench_count_zh.py            # the Chinese prose of sample_data/zh_*.json
    python benchmarks/bench_count_zh.py FILE.txt   # any UTF-8 text
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ctxlab import load  # noqa: E402
from ctxlab._encodings import get_encoding  # noqa: E402
from ctxlab.tokens import count_tokens  # noqa: E402

SAMPLES = sorted((ROOT / "sample_data").glob("zh_*.json"))


def _prose(doc: dict) -> list[str]:
    """The Chinese prose of a sample: message texts and the 'text' fields of tool results."""
    out = []
    for m in doc["messages"]:
        c = m.get("content")
        if m["role"] != "tool" and isinstance(c, str):
            out.append(c)
        elif m["role"] == "tool":
            data = json.loads(c)
            if isinstance(data, dict) and isinstance(data.get("text"), str):
                out.append(data["text"])
        if m.get("reasoning_content"):
            out.append(m["reasoning_content"])
    return out


def main(argv: list[str]) -> None:
    if argv:
        text, label = Path(argv[0]).read_text(encoding="utf-8"), argv[0]
    else:
        text = "\n".join(t for p in SAMPLES for t in _prose(json.loads(p.read_text(encoding="utf-8"))))
        label = "Chinese prose of " + ", ".join(p.name for p in SAMPLES)
    han = sum("\u4e00" <= ch <= "\u9fff" for ch in text)
    print(f"{label}: {len(text):,} characters ({han:,} Han)")
    counts = {name: len(get_encoding(name).encode_ordinary(text))
              for name in ("cl100k_base", "o200k_base", "deepseek_v3", "qwen3", "qwen3_5")}
    counts["chars/4"] = round(len(text) / 4)
    ref = counts["deepseek_v3"]
    for name, n in counts.items():
        print(f"  {name:<12} {n:>7,} tokens  {n / ref:5.2f}x DeepSeek  {len(text) / n:4.2f} chars/token")
    print("\nSample conversations as requests (framing and tool definitions included):")
    for p in SAMPLES:
        conv = load(p)
        row = {m: count_tokens(conv, m) for m in ("gpt-4o", "deepseek-chat", "qwen3-32b")}
        print(f"  {p.name:<22} " + "  ".join(f"{m} {c.total:>6,} (tools {c.tools_tokens:,})" for m, c in row.items()))


if __name__ == "__main__":
    main(sys.argv[1:])
