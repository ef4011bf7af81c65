"""Writes the lesson conversations of ctxlab's Failure Modes lessons (run from the repository root:
``python sample_data/lessons/build.py``). Deterministic: the same files every run, which
``tests/diagnostics/test_diagnostics_lessons.py`` checks.

poisoning, clash and quarantine are short stories written here by hand; distraction, confusion and
tool_loadout come from ``ctxlab.generate`` with a failure planted (the call is in their metadata).
Every name, id and amount is made up for this project.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from ctxlab import export  # noqa: E402
from ctxlab.generate import generate  # noqa: E402


def fn(name: str, description: str, **props: str) -> dict:
    """An OpenAI tool definition whose parameters are required strings."""
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": {k: {"type": "string", "description": v} for k, v in props.items()},
        "required": list(props)}}}


def call(cid: str, name: str, **args) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args, separators=(",", ":"))}}]}


def result(cid: str, name: str, doc) -> dict:
    return {"role": "tool", "tool_call_id": cid, "name": name,
            "content": doc if isinstance(doc, str) else json.dumps(doc)}


def say(role: str, text: str) -> dict:
    return {"role": role, "content": text}


SHOP_TOOLS = [
    fn("get_order", "Fetch an order by id: customer, status, items, carrier and tracking.", order_id="Order id, e.g. NB-20417."),
    fn("file_carrier_claim", "Open a claim with the carrier for a lost or damaged parcel.",
       order_id="Order id.", reason="lost or damaged"),
    fn("issue_refund", "Refund an amount to the order's original payment method.", order_id="Order id.",
       amount="Amount in GBP, two decimals."),
]
SHOP_PROMPT = ("You are the support copilot of Northwind Bikes, an online bike-parts shop. Look orders up with "
               "get_order before answering; cite order ids and amounts exactly as the tools return them.")


def poisoning() -> dict:
    """A typo brings another customer's order into the context; the agent builds on it."""
    other = {"order_id": "NB-20471", "customer": "Felix Moreau", "status": "delivered",
             "delivered_at": "2025-05-03T14:12:00Z", "carrier": "DPD", "tracking": "15501234567890",
             "items": [{"sku": "NB-BELL-02", "name": "Brass bell", "qty": 1, "price": 14.90}], "total": 14.90}
    hers = {"order_id": "NB-20417", "customer": "Dana Whitlock", "status": "in_transit",
            "carrier": "DPD", "tracking": "15509876543210", "promised_by": "2025-05-02",
            "last_scan": "Held at the Leeds depot: address label damaged (2025-05-02)",
            "items": [{"sku": "NB-RACK-11", "name": "Rear rack", "qty": 1, "price": 49.00},
                      {"sku": "NB-PAN-30", "name": "Waterproof pannier", "qty": 2, "price": 39.50}],
            "total": 128.00}
    refused = "Error: claim refused: order NB-20417 is not marked delivered or lost by the carrier"
    messages = [
        say("system", SHOP_PROMPT),
        say("user", "Ticket 5521 from Dana Whitlock: order NB-20417 (a rear rack and two panniers) was due "
                    "on May 2 and never arrived. What should I tell her?"),
        call("c1", "get_order", order_id="NB-20471"),
        result("c1", "get_order", other),
        say("assistant", "Order NB-20417 was delivered on May 3 at 14:12.\nTracking for NB-20471 shows the "
                         "parcel was left at the front door, so Dana should check with her neighbours first."),
        say("system", "Summary of earlier conversation (messages 1-4):\n- Dana Whitlock's order NB-20417 was "
                      "delivered on May 3 at 14:12 (left at the front door)."),
        say("user", "Dana says nothing was left at her door. Please open a claim with the carrier."),
        call("c2", "file_carrier_claim", order_id="NB-20417", reason="lost"),
        result("c2", "file_carrier_claim", refused),
        call("c3", "file_carrier_claim", order_id="NB-20417", reason="lost"),
        result("c3", "file_carrier_claim", refused),
        call("c4", "get_order", order_id="NB-20417"),
        result("c4", "get_order", hers),
        say("assistant", "I was wrong earlier: I had looked up NB-20471, another customer's order.\nDana's "
                         "order NB-20417 (total £128.00) is in transit, held at the Leeds depot since May 2 "
                         "because its label was damaged.\nNo claim is needed yet: DPD will re-label and deliver it."),
    ]
    return {"title": "Poisoning: a mistyped order id the agent keeps building on",
            "description": "The agent looks up NB-20471 instead of NB-20417, states that the customer's order was "
                           "delivered, a summary carries that forward, and it retries a refused claim twice "
                           "before it re-reads the right order.",
            "model": "gpt-4o", "messages": messages, "tools": SHOP_TOOLS,
            "facts": ["NB-20417", "Dana Whitlock", "in transit", "Leeds depot"]}


TRAVEL_TOOLS = [
    fn("search_hotels", "Hotels in a city for dates, with nightly rates and availability.", city="City.",
       check_in="YYYY-MM-DD", check_out="YYYY-MM-DD"),
    fn("get_hotel", "One hotel's current rate, availability and cancellation terms.", hotel_id="Hotel id."),
    fn("hold_room", "Hold a room for 24 hours without charging.", hotel_id="Hotel id.", rate_eur="Nightly rate."),
]


def clash() -> dict:
    """Two reads of the same hotel disagree, with nothing in between that changed it."""
    messages = [
        say("system", "You are Waypoint's booking assistant. Quote nightly rates in EUR exactly as the tools "
                      "return them; never hold a room over the traveller's budget."),
        say("user", "Find a hotel in Porto for 12-14 June near Ribeira, under EUR 200 a night, and hold it."),
        call("h1", "search_hotels", city="Porto", check_in="2025-06-12", check_out="2025-06-14"),
        result("h1", "search_hotels", {"city": "Porto", "hotels": [
            {"hotel_id": "HT-40812", "name": "Casa do Cais", "area": "Ribeira", "nightly_rate_eur": 184.00,
             "status": "available", "rating": 8.9},
            {"hotel_id": "HT-40977", "name": "Hotel Lumen Porto", "area": "Baixa", "nightly_rate_eur": 162.00,
             "status": "available", "rating": 8.1}]}),
        call("h2", "get_hotel", hotel_id="HT-40812"),
        result("h2", "get_hotel", {"hotel_id": "HT-40812", "name": "Casa do Cais", "nightly_rate_eur": 246.00,
                                   "status": "waitlist", "free_cancellation_until": "2025-06-10"}),
        say("assistant", "Casa do Cais in Ribeira is rated 8.9. Shall I hold it for June 12-14?"),
        say("user", "Yes, hold it."),
        call("h3", "hold_room", hotel_id="HT-40812", rate_eur="184.00"),
        result("h3", "hold_room", "Error: rate mismatch: current nightly rate is EUR 246.00"),
        say("assistant", "The hold failed: the hotel now quotes EUR 246.00 a night, over your EUR 200 budget. "
                         "Hotel Lumen Porto (HT-40977, EUR 162.00) is still available; shall I hold that instead?"),
    ]
    return {"title": "Clash: two reads of one hotel that disagree",
            "description": "The search says Casa do Cais costs EUR 184.00 and is available; a lookup right after "
                           "says EUR 246.00 and waitlist. The agent offers the room at the old rate and the hold fails.",
            "model": "gpt-4o", "messages": messages, "tools": TRAVEL_TOOLS,
            "facts": ["HT-40977", "EUR 162.00", "EUR 246.00"]}


OFFICE_TOOLS = SHOP_TOOLS + [
    fn("query_tickets", "Count and list support tickets by team, status and month.", team="Team name.",
       month="YYYY-MM"),
    fn("find_rooms", "Free meeting rooms for a time slot.", start="ISO time.", end="ISO time."),
    fn("book_room", "Book a meeting room.", room_id="Room id.", start="ISO time.", end="ISO time."),
]


def quarantine() -> dict:
    """Three unrelated tasks in one context: each could be its own sub-agent."""
    tickets = [{"ticket_id": f"TK-{7100 + k}", "subject": s, "closed_at": f"2025-03-{3 + 2 * k:02d}"}
               for k, s in enumerate(["Wrong saddle colour", "Late delivery", "Missing bolt kit", "Refund status",
                                      "Brake pads worn after a week", "Invoice copy", "Tyre size question",
                                      "Damaged box", "Gift card balance", "Pedal thread stripped", "Address change",
                                      "Warranty claim frame"])]
    rooms = [{"room_id": f"RM-{300 + k}", "name": n, "seats": s, "floor": f, "equipment": e}
             for k, (n, s, f, e) in enumerate([("Cadence", 6, 3, ["screen", "whiteboard"]),
                                               ("Derailleur", 10, 3, ["screen", "video"]),
                                               ("Sprocket", 4, 2, ["whiteboard"]),
                                               ("Headset", 12, 4, ["screen", "video", "whiteboard"])])]
    order = {"order_id": "NB-30112", "customer": "Owen Gallagher", "status": "delivered",
             "items": [{"sku": "NB-BELL-02", "name": "Brass bell", "qty": 1, "price": 14.90},
                       {"sku": "NB-LITE-07", "name": "USB front light", "qty": 1, "price": 27.60}],
             "total": 42.50, "payment": {"method": "card", "last4": "4417"}}
    messages = [
        say("system", "You are the operations assistant of Northwind Bikes: you handle support refunds, "
                      "team reporting and office logistics with the tools given. Be brief."),
        say("user", "Owen Gallagher's order NB-30112 arrived with a cracked light. Refund the light."),
        call("q1", "get_order", order_id="NB-30112"),
        result("q1", "get_order", order),
        call("q2", "issue_refund", order_id="NB-30112", amount="27.60"),
        result("q2", "issue_refund", {"refund_id": "RF-88410", "order_id": "NB-30112", "amount": 27.60,
                                      "status": "succeeded"}),
        say("assistant", "Refunded £27.60 for the USB front light on NB-30112 as RF-88410."),
        say("user", "How many tickets did the Atlas team close in March 2025?"),
        call("q3", "query_tickets", team="Atlas", month="2025-03"),
        result("q3", "query_tickets", {"team": "Atlas", "month": "2025-03", "closed": len(tickets),
                                       "tickets": tickets}),
        say("assistant", f"The Atlas team closed {len(tickets)} tickets in March 2025."),
        say("user", "Book a room for 8 people on Friday 13 June, 10:00-11:00."),
        call("q4", "find_rooms", start="2025-06-13T10:00", end="2025-06-13T11:00"),
        result("q4", "find_rooms", {"slot": "2025-06-13T10:00/11:00", "free": rooms}),
        call("q5", "book_room", room_id="RM-301", start="2025-06-13T10:00", end="2025-06-13T11:00"),
        result("q5", "book_room", {"booking_id": "BK-5520", "room_id": "RM-301", "status": "confirmed"}),
        say("assistant", "Booked Derailleur (RM-301, 10 seats) for Friday 13 June 10:00-11:00 as BK-5520."),
    ]
    return {"title": "Quarantine: three unrelated tasks in one context",
            "description": "A refund, a ticket report and a room booking share one context although none needs "
                           "the others' tool results: split into sub-agents, each context holds only its task.",
            "model": "gpt-4o", "messages": messages, "tools": OFFICE_TOOLS,
            "facts": ["RF-88410", "£27.60", "BK-5520", "RM-301"]}


GENERATED = {
    "distraction": dict(domain="travel", turns=4, rounds_per_turn=2, result_tokens=300, seed=3, plant_distraction=3),
    "confusion": dict(domain="ecommerce", turns=1, rounds_per_turn=2, result_tokens=200, seed=5, plant_confusion=36),
    "tool_loadout": dict(domain="travel", turns=1, rounds_per_turn=3, result_tokens=200, seed=0, plant_confusion=60),
}
TITLES = {
    "distraction": ("Distraction: old, oversized results crowd the current turn",
                    "A travel desk's earlier turns left three results ten times the usual size; by the last "
                    "turn, old tool results are most of the context."),
    "confusion": ("Confusion: 36 tools, four pairs of look-alikes",
                  "The support copilot is offered 36 tools; it calls lookup_order_details, the look-alike of "
                  "get_order, which fails, and then the real one."),
    "tool_loadout": ("Tool loadout: 60 tools, of which a turn needs a handful",
                     "A travel desk offered 60 tools; retrieving the top 5 for the request sends a loadout "
                     "under 30 tools and drops the unrelated ones."),
}


def generated(name: str) -> dict:
    conv = generate(**GENERATED[name])
    data = export(conv, "openai").data
    title, description = TITLES[name]
    data = {k: data[k] for k in ("messages", "tools") if k in data}  # the export also carries metadata: set below
    return {"title": title, "description": description, "model": "gpt-4o", **data, "facts": list(conv.facts),
            "generator": GENERATED[name], "planted": conv.metadata.get("planted", [])}


def lessons() -> dict[str, dict]:
    """Every lesson by name."""
    return {"poisoning": poisoning(), "distraction": generated("distraction"), "confusion": generated("confusion"),
            "clash": clash(), "quarantine": quarantine(), "tool_loadout": generated("tool_loadout")}


def text(doc: dict) -> str:
    """A lesson as the JSON text stored in its file."""
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    for name, doc in lessons().items():
        (HERE / f"{name}.json").write_text(text(doc), encoding="utf-8")
        print(f"wrote {name}.json ({len(doc['messages'])} messages)")
