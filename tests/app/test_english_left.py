"""The English-left finder itself: it catches English sentences and single words, and lets names,
identifiers, code, acronyms and the few allowed technical terms through."""
from __future__ import annotations

from .english_left import _names, english_runs


def runs(text: str) -> list[str]:
    return english_runs(text, _names())


def test_english_sentences_and_single_words_are_found():
    assert runs("Run the sweep") == ["Run the sweep"]
    assert runs("Model") == ["Model"]
    assert runs("保留最近 3 rounds 的消息") == ["rounds"]
    assert runs("Kept your context limit of 8,000 tokens.") == ["Kept your context limit of"]  # token: allowed


def test_names_identifiers_code_acronyms_and_allowed_terms_pass():
    assert runs("策略 sliding_window 保留 keep_rounds 轮") == []
    assert runs("模型 gpt-4o 与 deepseek-chat 的 token 数") == []
    assert runs("用 `ctxlab count --model x` 计数，见 pages/tune.py") == []
    assert runs("JSON 或 JSONL，经 API 调用 LLM（BM25）") == []
    assert runs("Pareto 前沿，prompt cache 命中") == []
    assert runs("1.8x，12 ms，3.5 KB") == []
    assert runs("[文档](https://example.com/some/english/path) :material/science:") == []


def test_markdown_escapes_and_chinese_around_words_are_handled():
    assert runs("未生效：sliding\\_window 的窗口") == []          # an escaped identifier stays whole
    assert runs("模型 gpt\\-4o，来源 \\(read\\)") == ["read"]       # escapes undone, the English word found
    assert runs("未生效：keeps the newest messages") == ["keeps the newest messages"]
    assert runs(":small[可选：所有功能]") == []                     # a Markdown directive is not a word
    assert runs("调节 keep，默认（False）") == []                  # a parameter's name and a bool literal
