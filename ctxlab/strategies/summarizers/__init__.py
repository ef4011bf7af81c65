"""Everything that folds messages into a summary: the ``summarize`` strategy (``summarize``), the
summarizer protocol, registry and offline ``extractive`` summarizer (``extractive``), the model-backed
``llm`` summarizer (``llm``) and the ``structured`` summaries of a coding agent's work
(``structured``). The providers' own compaction, simulated, is ``ctxlab.strategies.compaction``."""
from .extractive import SUMMARIZERS, ExtractiveSummarizer, Summarizer, register_summarizer, trim_summary

__all__ = ["SUMMARIZERS", "ExtractiveSummarizer", "Summarizer", "register_summarizer", "trim_summary"]
