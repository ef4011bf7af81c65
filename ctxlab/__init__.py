"""ctxlab: a bench for the context of LLM agents that call tools.

The public API is these names; everything else is an implementation detail.
"""
from .errors import CtxlabError
from .formats import FORMATS, export, load, load_all, loads, parse_tools
from .conversation import Conversation, Message, Part, ToolCall, ToolDef
from .model_specs import MODELS, ModelSpec, resolve_model
from .tokens import TokenCount, TokenCounter, count_tokens

from .version import __version__  # noqa: F401  (ctxlab.__version__)

__all__ = [
    "FORMATS", "MODELS", "Conversation", "CtxlabError", "Message", "ModelSpec", "Part", "TokenCount",
    "TokenCounter", "ToolCall", "ToolDef", "count_tokens", "export", "load", "load_all", "loads",
    "parse_tools", "resolve_model",
]
