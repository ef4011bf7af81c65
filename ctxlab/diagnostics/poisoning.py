"""Context poisoning: an error or a falsehood that enters the context and keeps being reused.

* ``repeated_failing_call``: the same tool call (same name, same arguments) failed two or more
  times: the agent keeps feeding itself the same error instead of changing course. Not when a
  file the call uses was edited between two failures (a coding agent testing its fix).
* ``mistyped_id``: a call uses an identifier that never appeared before in the conversation but
  is one typo away from one that did (one character changed, added or dropped, or two neighbours
  swapped: a typo or an invented id; not hex colours, one number in two notations, names made in
  sequence or one name with and without a separator: see ``code_aware``); an error when the wrong id
  is then reused (in its result, later calls or answers), a warning otherwise.
* ``contradicted_claim``: an assistant states a status or an amount of an entity that no earlier
  tool result supports, and a later tool result about the same entity says otherwise.
* ``summary_carries_claim``: a summary (a system message after the first, or a message starting
  with "Summary") repeats such a claim, so the falsehood outlives the message that made it.
"""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from ..conversation import Message
from ..i18n import _, language
from .base import Finding, Inputs, Mitigation, detector
from .code_aware import edited_between, files_used, not_a_typo
from .observations import (COMMON_STATUSES, MONEY_WORDS, CallInfo, Record, argument_identifiers, identifiers_in,
                           is_money_field, norm_word, values_equal, within_one_edit)

_MONEY = re.compile(r"(?:[$€£]\s?|\b(?:USD|EUR|GBP)\s?)(\d[\d,]*(?:\.\d+)?)|(\d[\d,]*\.\d{2})\s?(?:USD|EUR|GBP)\b")
_SENTENCES = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])\s*|\n+")
_HEDGED = re.compile(r"\b([Cc]an|[Cc]ould|[Ww]ill|[Ww]ould|[Ss]hould|may|[Mm]ight|[Ii]f|[Ww]hether|want|like|"
                     r"[Uu]nless|[Oo]nce|[Aa]fter)\b|\?|？|吗|如果|假如|是否|能否|可以|可能|应该|要不要|除非|一旦")
"""Sentences that hedge or ask (modal verbs, conditions, questions; in English or Chinese) state no
fact ("May" is a month)."""
_SPELLINGS = {"canceled": "cancelled"}
ZH_STATUSES = {"已签收": "delivered", "已送达": "delivered", "已妥投": "delivered", "运输中": "in_transit",
               "派送中": "in_transit", "已发货": "shipped", "已取消": "cancelled", "已退款": "refunded",
               "退款成功": "refunded", "待付款": "unpaid", "已支付": "paid", "已付款": "paid", "已完成": "completed",
               "已出票": "confirmed", "已确认": "confirmed", "有票": "available", "可预订": "available",
               "候补": "waitlist", "已退票": "refunded", "已拒绝": "rejected", "已丢失": "lost"}
"""Chinese status phrases, as tool results and answers write them, and the status each one means
(a Chinese answer saying 已签收 claims what an English one saying "delivered" does). Whole
phrases only: 未签收 contains no phrase here."""


def canonical_status(word: str) -> str:
    """A status word as the detectors compare it (``canceled`` -> ``cancelled``, ``已签收`` -> ``delivered``)."""
    return _SPELLINGS.get(word, ZH_STATUSES.get(word, word))


def _failure_runs(inp: Inputs) -> list[tuple[str, str, list[CallInfo]]]:
    """Failures of the same call (name, arguments), split where a file the call uses was edited
    between two of them (the agent tried a fix and ran it again: not the same error fed back)."""
    failures: dict[tuple[str, str], list[list[CallInfo]]] = defaultdict(list)
    messages, calls = inp.conv.messages, inp.observations.calls
    for c in calls:
        if not c.failed:
            continue
        runs = failures[(c.name, c.args_key)]
        if runs:
            prev = runs[-1][-1]
            start = prev.result_index if prev.result_index is not None else prev.index
            if edited_between(messages, calls, start, c.index, files_used(c.call)) is not None:
                runs.append([c])
                continue
            runs[-1].append(c)
        else:
            runs.append([c])
    return [(name, args, run) for (name, args), runs in failures.items() for run in runs]


@detector("poisoning", "repeated_failing_call")
def repeated_failing_calls(inp: Inputs) -> list[Finding]:
    """The same call failing twice or more with identical arguments, with no edit between the
    runs of a file it uses."""
    out = []
    for name, args, calls in _failure_runs(inp):
        if len(calls) < 2:
            continue
        indexes = tuple(sorted({i for c in calls for i in (c.index, c.result_index) if i is not None}))
        shown = args if len(args) <= 80 else args[:77] + "..."
        earlier = tuple(sorted({c.index for c in calls[:-1]}))
        out.append(Finding(
            "poisoning", "repeated_failing_call", "error",
            _("{tool} failed {n} times with the same arguments {args} (messages {where}): each retry puts the "
              "same error back in the context.").format(tool=name, n=len(calls), args=shown,
                                                        where=", ".join(str(c.index) for c in calls)),
            indexes, (name,),
            Mitigation("prune", (_("Drop the {n} earlier failed attempt") if len(earlier) == 1 else
                                 _("Drop the {n} earlier failed attempts")).format(n=f"{len(earlier):,}"),
                       messages=earlier)))
    return out


def _context(call, history: list[str]) -> str:
    """The text a token and its look-alike appear in: the call's arguments and what came before."""
    return call.arguments + "\n" + "\n".join(history)


def _message_strings(m: Message) -> list[str]:
    return [m.text, *(c.arguments for c in m.tool_calls)]


@detector("poisoning", "mistyped_id")
def mistyped_ids(inp: Inputs) -> list[Finding]:
    """Identifiers first used in a call that are one character away from an earlier one."""
    messages = inp.conv.messages
    seen: dict[int, set[str]] = defaultdict(set)
    history: list[str] = []
    found: list[tuple[str, str, int, str]] = []
    for i, m in enumerate(messages):
        for c in m.tool_calls:
            for token in argument_identifiers(c):
                if token in seen[len(token)] or any(token in h for h in history):
                    continue
                near = next((s for n in (len(token) - 1, len(token), len(token) + 1) for s in sorted(seen[n])
                             if within_one_edit(token, s) and not_a_typo(token, s, _context(c, history)) is None),
                            None)
                if near is not None and all(t != token for t, _, _, _ in found):
                    found.append((token, near, i, c.name))
        for text in _message_strings(m):
            history.append(text)
            for t in identifiers_in(text):
                seen[len(t)].add(t)
    out = []
    for token, near, i, tool in found:
        later = [j for j in range(i + 1, len(messages)) if any(token in s for s in _message_strings(messages[j]))]
        reused = [j for j in later if messages[j].role != "tool" or j > i + len(messages[i].tool_calls)]
        calls = tuple(j for j in [i, *later] if any(token in c.arguments for c in messages[j].tool_calls))
        evidence = ((_("{tool} in message {index} uses {token}, which never appeared before but is one typo "
                       "away from {near}; the wrong id is reused in {n} later message.") if len(later) == 1 else
                     _("{tool} in message {index} uses {token}, which never appeared before but is one typo "
                       "away from {near}; the wrong id is reused in {n} later messages."))
                    if reused else _("{tool} in message {index} uses {token}, which never appeared before but is "
                                     "one typo away from {near}."))
        out.append(Finding(
            "poisoning", "mistyped_id", "error" if reused else "warning",
            evidence.format(tool=tool, index=i, token=token, near=near, n=f"{len(later):,}"),
            (i, *later), (tool,),
            Mitigation("prune", _("Drop the tool rounds using {token} ({n})").format(token=token, n=len(calls)),
                       messages=calls)))
    return out


@dataclass(frozen=True)
class Claim:
    """What one sentence of a message says about one entity."""

    index: int
    entity: str
    statuses: frozenset[str]
    amounts: tuple[float, ...]
    money_words: frozenset[str]
    sentence: str


def status_label(status: str) -> str:
    """A canonical status as the interface's language writes it (``delivered`` -> 已签收 in Chinese)."""
    if language() == "zh":
        return next((zh for zh, s in ZH_STATUSES.items() if s == status), status)
    return status


def status_vocabulary(records: list[Record]) -> set[str]:
    """Status words: those the tool results use, and common ones."""
    words = {norm_word(r.value) for r in records if _is_status(r) and isinstance(r.value, str)}
    return words | set(COMMON_STATUSES)


def _status_of(r: Record) -> str | None:
    if not _is_status(r) or not isinstance(r.value, str):
        return None
    return canonical_status(norm_word(r.value))


def _is_status(r: Record) -> bool:
    return r.field.rsplit(".", 1)[-1].lower() == "status"


def claims_in(index: int, text: str, entities: set[str], vocabulary: set[str]) -> list[Claim]:
    """Sentences of ``text`` about exactly one known entity, with the statuses and amounts they state."""
    out = []
    for sentence in _SENTENCES.split(text):
        ids = {t for t in identifiers_in(sentence) if t in entities}
        if len(ids) != 1 or _HEDGED.search(sentence):
            continue
        low = " " + re.sub(r"[\s_\-]+", " ", sentence.lower()) + " "
        statuses = frozenset({canonical_status(w) for w in vocabulary
                              if re.search(r"\b" + re.escape(w.replace("_", " ")) + r"\b", low)}
                             | {s for zh, s in ZH_STATUSES.items() if zh in sentence})
        amounts = tuple(float((a or b).replace(",", "")) for a, b in _MONEY.findall(sentence))
        words = frozenset(w for w in MONEY_WORDS if w in low)
        if statuses or (amounts and words):
            out.append(Claim(index, ids.pop(), statuses, amounts, words, sentence.strip()))
    return out


def _contradiction(claim: Claim, records: list[Record], calls: list[CallInfo]) -> tuple[Record | None, str]:
    """The first later record that contradicts the claim with no possibly-writing call in between
    (None when an earlier record supports the claim, or nothing contradicts it), and what the
    claim said."""
    earlier = [r for r in records if r.index < claim.index]
    later = [r for r in records if r.index > claim.index
             and not any(claim.index < c.index <= r.index and not c.reads and not c.failed for c in calls)]
    if claim.statuses:
        said = "/".join(status_label(s) for s in sorted(claim.statuses))
        if not any(_status_of(r) in claim.statuses for r in earlier):
            for r in later:
                if _status_of(r) is not None and _status_of(r) not in claim.statuses:
                    return r, said
    if claim.amounts:
        said = " / ".join(f"{a:,.2f}" for a in claim.amounts)

        def money(r: Record) -> bool:
            return is_money_field(r.field) and isinstance(r.value, (int, float)) and not isinstance(r.value, bool) \
                and any(w in r.field.rsplit(".", 1)[-1].lower() for w in claim.money_words)
        if not any(money(r) and any(values_equal(r.value, a) for a in claim.amounts) for r in earlier):
            fields = [r for r in later if money(r)]
            if fields and not any(values_equal(r.value, a) for r in fields for a in claim.amounts):
                return fields[0], said
    return None, ""


def is_summary_message(index: int, m: Message) -> bool:
    """A summary: a system message after the first message, or a message starting with "Summary"."""
    return (m.role == "system" and index > 0) or m.text.lstrip().lower().startswith(("summary", "[summary"))


@detector("poisoning", "contradicted_claim")
def contradicted_claims(inp: Inputs) -> list[Finding]:
    """Assistant statements (and summaries carrying them) that a later tool result contradicts."""
    records = inp.observations.records
    by_entity: dict[str, list[Record]] = defaultdict(list)
    for r in records:
        by_entity[r.entity].append(r)
    entities, vocabulary = set(by_entity), status_vocabulary(records)
    out: list[Finding] = []
    made: list[tuple[Claim, Record]] = []
    for i, m in enumerate(inp.conv.messages):
        summary = is_summary_message(i, m)
        if not (m.role == "assistant" or summary) or not m.text.strip():
            continue
        for claim in claims_in(i, m.text, entities, vocabulary):
            rec, said = _contradiction(claim, by_entity[claim.entity], inp.observations.calls)
            if rec is None or any(c.index == i and c.entity == claim.entity for c, _ in made):
                continue
            tool = rec.call.name if rec.call else _("a tool")
            said_where = dict(index=i, entity=claim.entity, said=said, tool=tool, at=rec.index, field=rec.field,
                              value=repr(rec.value))
            if summary:
                origins = [c.index for c, _m in made if c.entity == claim.entity and c.index < i]
                out.append(Finding(
                    "poisoning", "summary_carries_claim", "error",
                    _("The summary in message {index} carries forward that {entity} is {said}, but the {tool} result "
                      "in message {at} says {field} = {value}.").format(**said_where),
                    tuple(sorted({*origins, i, rec.index})), (tool,) if rec.call else (),
                    Mitigation("prune", _("Remove the false claim from the summary"), messages=(i,))))
            else:
                out.append(Finding(
                    "poisoning", "contradicted_claim", "error",
                    _("Message {index} says {entity} is {said}, which no earlier result supports, but the {tool} "
                      "result in message {at} says {field} = {value}.").format(**said_where),
                    (i, rec.index), (tool,) if rec.call else (),
                    Mitigation("prune", _("Remove the false claim in message {index}").format(index=i),
                               messages=(i,))))
            made.append((claim, rec))
    return out
