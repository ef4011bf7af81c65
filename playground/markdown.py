"""User text shown safely in Markdown (st.markdown, st.error, captions...): escaped, or as inline
code. No streamlit here: a plain text helper every page and panel uses."""
from __future__ import annotations

import re

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$])")


def md_escape(text: str) -> str:
    """Text safe to show inside Markdown (st.error, st.info, ...): no links, images or HTML."""
    return _MD_SPECIAL.sub(r"\\\1", text)


def md_code(text: str) -> str:
    """``text`` as inline code in Markdown (shown as typed: no link, no emphasis, no escapes seen)."""
    return "`" + text.replace("`", "'").replace("\n", " ") + "`"
