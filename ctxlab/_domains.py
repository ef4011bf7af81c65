"""The worlds ``ctxlab.generate`` builds conversations in: e-commerce support, a SQL analytics
agent, and travel booking.

A world owns the random generator of one conversation and what it has made up so far (ids in use,
the clock). For each user turn it writes the request, then hands out one tool call at a time per
entity (an order, a question, a trip leg) with a made-up JSON result, and finally writes the answer,
citing ids from the results it actually returned. Results grow a list field (line items, rows,
offers, scan events) until they reach the requested size.
"""
from __future__ import annotations

import json
import random
import string
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Callable

from .model import ToolDef

JSONDict = dict[str, Any]
Call = tuple[str, JSONDict, JSONDict]
"""One step of an entity: (tool name, arguments, result document)."""

ALNUM = string.ascii_letters + string.digits
CHARS_PER_TOKEN = 4
"""The estimate used to size tool results: one token is about four characters of JSON."""

FIRST_NAMES = ("Maria", "James", "Aiko", "Dmitri", "Fatima", "Lucas", "Priya", "Owen", "Sofia",
               "Kwame", "Elena", "Mateo", "Hannah", "Ravi", "Chloe", "Tomasz", "Amara", "Noah",
               "Ingrid", "Yusuf", "Camila", "Felix", "Leila", "Arjun")
LAST_NAMES = ("Lopez", "Whitfield", "Tanaka", "Volkov", "Haddad", "Moreau", "Raman", "Gallagher",
              "Rossi", "Mensah", "Petrova", "Silva", "Becker", "Iyer", "Dubois", "Nowak", "Okafor",
              "Lindqvist", "Kaya", "Herrera", "Schmidt", "Nakamura", "Brennan", "Costa")


def dumps(doc: Any) -> str:
    """JSON text the way a Python tool usually returns it (default separators, UTF-8 kept)."""
    return json.dumps(doc, ensure_ascii=False)


def money(amount: float, symbol: str = "$") -> str:
    """``$1,234.50``: how amounts are written in user-facing text."""
    return f"{symbol}{amount:,.2f}"


def iso(moment: datetime) -> str:
    """An ISO-8601 UTC timestamp with a ``Z``."""
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def tool(name: str, description: str, category: str, properties: JSONDict,
         required: tuple[str, ...] = ()) -> ToolDef:
    """A ToolDef with an object schema that rejects unknown properties."""
    schema = {"type": "object", "properties": properties, "required": list(required),
              "additionalProperties": False}
    return ToolDef(name=name, description=description, parameters=schema, category=category)


def str_prop(description: str, **more: Any) -> JSONDict:
    """A string property schema."""
    return {"type": "string", "description": description, **more}


def num_prop(description: str, kind: str = "number", **more: Any) -> JSONDict:
    """A number (or integer) property schema."""
    return {"type": kind, "description": description, **more}


@dataclass
class Turn:
    """One user turn in the making: its request text, the entities it is about (one per
    parallel call) and, once answered, the facts a good context must keep."""

    index: int
    request: str = ""
    entities: list[JSONDict] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)
    info: JSONDict = field(default_factory=dict)


class World:
    """Shared machinery of a domain: random draws, unique ids, a clock, and result sizing.

    Subclasses set ``name``, ``title``, ``description``, ``system_prompt``, ``tools`` and
    ``follow_up`` (the steps an entity cycles through once its own plan is done), and implement
    ``start_turn``, ``answer`` and one ``step_<name>`` method per step.
    """

    name = ""
    title = ""
    description = ""
    system_prompt = ""
    tools: tuple[ToolDef, ...] = ()
    follow_up: tuple[str, ...] = ()

    def __init__(self, rng: random.Random, result_chars: int):
        self.rng = rng
        self.result_chars = result_chars
        self._used: set[str] = set()
        self._longer: dict[tuple[str, int, str], int] = {}
        self.now = datetime(2024, 1, 8, 9, 0) + timedelta(days=rng.randrange(330),
                                                          minutes=rng.randrange(480))

    def new_id(self, prefix: str, length: int = 6, alphabet: str = string.digits) -> str:
        """An id never handed out before in this conversation, e.g. ``ORD-482913``.

        When ids of this shape keep colliding (a huge conversation), they get one character longer.
        """
        key = (prefix, length, alphabet)
        misses = 0
        while True:
            size = length + self._longer.get(key, 0)
            body = "".join(self.rng.choice(alphabet) for _ in range(size))
            value = prefix + body
            if body[0] != "0" and value not in self._used:
                self._used.add(value)
                return value
            misses += 1
            if misses % 16 == 0:
                self._longer[key] = self._longer.get(key, 0) + 1

    def pick(self, *options: Any) -> Any:
        """One of the options, at random."""
        return self.rng.choice(options)

    def person(self) -> tuple[str, str]:
        """A (first, last) name."""
        return self.rng.choice(FIRST_NAMES), self.rng.choice(LAST_NAMES)

    def tick(self, minutes_low: int = 1, minutes_high: int = 6) -> datetime:
        """Advance the conversation clock a little and return it."""
        self.now += timedelta(minutes=self.rng.randint(minutes_low, minutes_high),
                              seconds=self.rng.randrange(60))
        return self.now

    def fill(self, doc: JSONDict, make_item: Callable[[int], JSONDict], limit: int = 100_000) -> list[JSONDict]:
        """Items from ``make_item(i)`` until ``doc`` plus the items reach the target size.

        ``doc`` is measured as it is (with its list still empty); at least one item is made, at
        most ``limit``.
        """
        size = len(dumps(doc))
        items: list[JSONDict] = []
        while len(items) < limit:
            item = make_item(len(items))
            grow = len(dumps(item)) + 2
            if items and size + grow > self.result_chars:
                break
            items.append(item)
            size += grow
        return items

    def next_call(self, turn: Turn, entity: JSONDict) -> Call:
        """The entity's next tool call and its result."""
        if not entity["queue"]:
            entity["queue"] = list(self.follow_up)
        step = entity["queue"].pop(0)
        return getattr(self, "step_" + step)(turn, entity)

    def start_turn(self, index: int, entities: int) -> Turn:
        """A new user turn about ``entities`` things (one per parallel call)."""
        raise NotImplementedError

    def answer(self, turn: Turn) -> str:
        """The final assistant text of the turn; also records ``turn.facts``."""
        raise NotImplementedError


def join_words(words: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


# --------------------------------------------------------------------------- e-commerce support

PRODUCTS = (
    ("Trailhead 2-Person Tent", "camping", 249.00), ("Summit 30L Daypack", "bags", 89.95),
    ("Merino Crew Base Layer", "apparel", 64.50), ("Alpine Down Jacket", "apparel", 219.00),
    ("Ridge Trail Running Shoe", "footwear", 134.99), ("Titanium Spork", "camping", 11.95),
    ("Insulated Bottle 750 ml", "accessories", 32.00), ("Headlamp 400 Lumen", "accessories", 44.95),
    ("Waterproof Hiking Boot", "footwear", 189.00), ("Packable Rain Shell", "apparel", 129.00),
    ("Ultralight Sleeping Pad", "camping", 99.00), ("Wool Hiking Socks 3-Pack", "apparel", 27.50),
    ("Compact Camp Stove", "camping", 74.95), ("Trekking Poles (pair)", "accessories", 119.00),
    ("Synthetic Sleeping Bag -5C", "camping", 159.00), ("Fleece Quarter-Zip", "apparel", 79.00),
)
STREETS = ("Maple Ave", "Hillcrest Rd", "Bayview Dr", "Cedar St", "Lakeshore Blvd", "Willow Ln")
COLORS = ("black", "slate", "forest", "ember", "glacier", "sand")
US_CITIES = (("Columbus", "OH"), ("Reno", "NV"), ("Louisville", "KY"), ("Memphis", "TN"),
             ("Allentown", "PA"), ("Denver", "CO"), ("Sacramento", "CA"), ("Joliet", "IL"),
             ("Tacoma", "WA"), ("Raleigh", "NC"))
SCANS = (("AR", "Arrived at carrier facility"), ("DP", "Departed carrier facility"),
         ("IT", "In transit to next facility"), ("WX", "Delayed: severe weather in the area"),
         ("MS", "Package missorted, rerouted to correct facility"), ("HL", "Held at facility, awaiting capacity"))
RULES = ("late_delivery", "damaged_item", "duplicate_charge", "wrong_item", "change_of_mind", "price_adjustment")
INTENTS = {
    "late": ("late_delivery", ["order", "shipment", "policy", "refund", "payment"]),
    "damaged": ("damaged_item", ["order", "policy", "refund", "shipment", "payment"]),
    "double_charge": ("duplicate_charge", ["order", "payment", "policy", "refund", "shipment"]),
}
ECOMMERCE_PROMPT = """You are the support copilot of Ridgeline Outfitters, an outdoor-gear web shop. \
Support agents paste tickets; you investigate with the tools and resolve them.

Policy:
- Always look the order up with get_order before deciding anything. Never guess ids or amounts.
- Late delivery: if the shipment is more than 3 business days past the promised date, refund the \
shipping fee plus 15% of the item subtotal as a goodwill credit. Do not refund the full order \
unless the carrier has declared the package lost.
- Damaged item: refund the damaged line item in full (unit price times quantity, minus its \
discount); no return is needed under $250.
- Duplicate charge: confirm two captures for the same order with get_payment, then refund the \
duplicate capture in full.
- Check get_refund_policy for the product category before any refund.
- Issue refunds with issue_refund to the original payment method only. Refunds above $500 wait \
for a supervisor's approval: say so, and give the refund id.
- In your answer, cite the order id, tracking number, refund id and amounts exactly as the tools \
returned them. Be brief and factual."""


class EcommerceWorld(World):
    """A support desk: each turn is a ticket about one or more orders of a customer."""

    name = "ecommerce"
    title = "E-commerce support desk"
    description = ("A support copilot works through tickets about late, damaged and double-charged "
                   "orders: it looks up orders, shipments and payments, checks the refund policy "
                   "and issues refunds.")
    system_prompt = ECOMMERCE_PROMPT
    follow_up = ("customer", "history", "shipment", "payment")
    tools = (
        tool("get_order", "Fetch one order by id: status, line items, totals, shipping address, "
             "carrier and tracking number, and the payment used.", "orders",
             {"order_id": str_prop("Order id, e.g. ORD-482913.", pattern="^ORD-[0-9]+$")}, ("order_id",)),
        tool("list_customer_orders", "List a customer's orders, newest first, with status and totals.",
             "orders", {"customer_id": str_prop("Customer id, e.g. CUS-104233."),
                        "limit": num_prop("How many orders to return (1-1000).", "integer", minimum=1, maximum=1000)},
             ("customer_id",)),
        tool("get_customer", "Fetch a customer profile: contact details, loyalty tier, addresses and "
             "past support tickets.", "customers", {"customer_id": str_prop("Customer id.")}, ("customer_id",)),
        tool("track_shipment", "Carrier tracking for a package: current status, promised and estimated "
             "delivery dates, and every scan event.", "shipping",
             {"tracking_number": str_prop("Carrier tracking number."),
              "carrier": str_prop("Carrier name.", enum=["UPS", "FedEx", "USPS"])}, ("tracking_number",)),
        tool("get_payment", "Fetch a payment: method, amount, and every authorization, capture and "
             "refund transaction on it.", "payments", {"payment_id": str_prop("Payment id, e.g. PAY-5531902.")},
             ("payment_id",)),
        tool("get_refund_policy", "The refund rules that apply to a product category and a reason, "
             "with limits and approval thresholds.", "refunds",
             {"category": str_prop("Product category.", enum=sorted({p[1] for p in PRODUCTS})),
              "reason": str_prop("Why the customer wants money back.", enum=list(RULES))}, ("category", "reason")),
        tool("issue_refund", "Refund an amount to the original payment method of an order. Irreversible; "
             "amounts over $500 are queued for supervisor approval.",
             "refunds", {"order_id": str_prop("Order id."), "amount": num_prop("Amount in USD, two decimals."),
                         "reason": str_prop("Refund reason.", enum=list(RULES)),
                         "line_item_ids": {"type": "array", "items": {"type": "string"},
                                           "description": "Line items the refund is for, if any."}},
             ("order_id", "amount", "reason")),
    )

    def start_turn(self, index: int, entities: int) -> Turn:
        """A ticket from one customer about ``entities`` orders with the same problem."""
        self.tick(30, 300)
        first, last = self.person()
        intent = self.rng.choice(tuple(INTENTS))
        customer = {"customer_id": self.new_id("CUS-"), "name": f"{first} {last}",
                    "email": f"{first}.{last}{self.rng.randrange(10, 99)}@example.com".lower()}
        turn = Turn(index, info={"intent": intent, **customer})
        for _ in range(entities):
            turn.entities.append({"order_id": self.new_id("ORD-"), "intent": intent, **customer,
                                  "queue": list(INTENTS[intent][1])})
        ids = join_words([e["order_id"] for e in turn.entities])
        plural = len(turn.entities) > 1
        ticket = self.new_id("TCK-", 5)
        ask = {
            "late": f"says order{'s' * plural} {ids} {'were' if plural else 'was'} due last week and still "
                    f"{'have' if plural else 'has'}n't arrived. They want their money back if it is really late.",
            "damaged": f"says a product in order{'s' * plural} {ids} arrived crushed (photos attached). "
                       "Please check and refund the damaged item per policy.",
            "double_charge": f"sees two identical card charges for order{'s' * plural} {ids} on their "
                             "bank statement. Please verify and refund the duplicate.",
        }[intent]
        turn.request = f"Ticket {ticket} from {first} {last} <{customer['email']}>: the customer {ask}"
        turn.facts.extend(e["order_id"] for e in turn.entities)
        return turn

    def _line_item(self, i: int) -> JSONDict:
        k = self.rng.randrange(len(PRODUCTS))
        name, category, price = PRODUCTS[k]
        qty = self.pick(1, 1, 1, 2, 3)
        discount = round(price * qty * self.pick(0, 0, 0.1, 0.2), 2)
        return {"line_item_id": self.new_id("LI-", 7), "sku": f"RO-{category[:3].upper()}-{1109 + 37 * k}",
                "name": name, "category": category, "quantity": qty, "unit_price": price,
                "discount": discount, "tax": round((price * qty - discount) * 0.0725, 2),
                "attributes": {"color": self.pick(*COLORS), "size": self.pick("S", "M", "L", "XL", "one size")},
                "fulfillment": {"warehouse": self.pick("RNO1", "CMH2", "SDF1"), "status": "shipped"}}

    def _shipping(self, e: JSONDict) -> None:
        """Decide carrier, tracking number, card, dates and address of an order (kept in ``e``)."""
        carrier = self.pick("UPS", "FedEx", "USPS")
        tracking = {"UPS": ("1Z", 16, string.digits + "ABCDEFGHJKLMNPRSTVWXY"), "FedEx": ("", 12, string.digits),
                    "USPS": ("9400", 18, string.digits)}[carrier]
        placed = self.now - timedelta(days=self.rng.randint(9, 21), hours=self.rng.randrange(24))
        e.update(carrier=carrier, tracking=self.new_id(*tracking), payment_id=self.new_id("PAY-", 7),
                 placed=placed, promised=(placed + timedelta(days=6)).date().isoformat(),
                 delivered=e["intent"] == "damaged" or (e["intent"] == "double_charge" and self.rng.random() < 0.5),
                 card=(self.pick("Visa", "Mastercard", "Amex"), f"{self.rng.randrange(10000):04d}"),
                 shipping_fee=self.pick(7.95, 9.95, 14.95), home=self.pick(*US_CITIES))

    def step_order(self, turn: Turn, e: JSONDict) -> Call:
        """get_order: the order with its line items and totals."""
        self._shipping(e)
        address = {"name": e["name"], "line1": f"{self.rng.randrange(12, 9800)} {self.pick(*STREETS)}",
                   "city": e["home"][0], "state": e["home"][1], "postal_code": str(self.rng.randrange(10000, 99999))}
        doc = {"order_id": e["order_id"], "customer_id": e["customer_id"],
               "status": "delivered" if e["delivered"] else "shipped", "placed_at": iso(e["placed"]),
               "channel": self.pick("web", "ios_app", "android_app"), "currency": "USD",
               "payment": {"payment_id": e["payment_id"], "method": "card", "brand": e["card"][0],
                           "last4": e["card"][1]},
               "shipping": {"carrier": e["carrier"], "tracking_number": e["tracking"], "service": "Ground",
                            "promised_by": e["promised"], "fee": e["shipping_fee"], "address": address},
               "line_items": [], "totals": dict.fromkeys(("subtotal", "discount", "tax", "shipping", "total"), 0.0)}
        items = doc["line_items"] = self.fill(doc, self._line_item)
        subtotal = round(sum(i["unit_price"] * i["quantity"] for i in items), 2)
        discount = round(sum(i["discount"] for i in items), 2)
        tax = round(sum(i["tax"] for i in items), 2)
        total = round(subtotal - discount + tax + e["shipping_fee"], 2)
        doc["totals"] = {"subtotal": subtotal, "discount": discount, "tax": tax, "shipping": e["shipping_fee"],
                         "total": total}
        hit = self.rng.choice(items[:4])
        net = round(hit["unit_price"] * hit["quantity"] - hit["discount"], 2)
        e.update(total=total, net_items=round(subtotal - discount, 2), item_count=len(items),
                 category=hit["category"], damaged=(hit["line_item_id"], hit["name"], net))
        return "get_order", {"order_id": e["order_id"]}, doc

    def step_shipment(self, turn: Turn, e: JSONDict) -> Call:
        """track_shipment: scan events, newest first, spread between the ship date and now."""
        if "tracking" not in e:
            return self.step_order(turn, e)
        status = "delivered" if e["delivered"] else self.pick("in_transit", "exception")
        eta = (self.now + timedelta(days=self.rng.randint(1, 4))).date().isoformat() if status == "in_transit" \
            else None
        doc = {"tracking_number": e["tracking"], "carrier": e["carrier"], "status": status,
               "promised_by": e["promised"], "estimated_delivery": eta,
               "weight_kg": round(self.rng.uniform(0.4, 9.5), 1), "events": []}
        moment = self.now - timedelta(hours=self.rng.randint(2, 30))
        step = (moment - e["placed"] - timedelta(days=1)) / max(1, self.result_chars // 190)

        def event(i: int) -> JSONDict:
            nonlocal moment
            moment -= step * self.rng.uniform(0.6, 1.4) if i else timedelta(0)
            home = i == 0 and status == "delivered"
            city, state = e["home"] if home else self.pick(*US_CITIES)
            code, text = ("DL", "Delivered, left at front door") if home else self.pick(*SCANS)
            facility = "customer address" if home else f"{state}{self.rng.randrange(10, 99)} hub"
            return {"event_id": self.new_id("EV", 9), "at": iso(moment), "code": code, "description": text,
                    "location": {"city": city, "state": state, "facility": facility}}
        doc["events"] = self.fill(doc, event)
        last = doc["events"][0]
        e.update(ship_status=status, last_scan=f"{last['description'].lower()} in {last['location']['city']}, "
                                                f"{last['location']['state']} on {last['at'][:10]}")
        return "track_shipment", {"tracking_number": e["tracking"], "carrier": e["carrier"]}, doc

    def step_policy(self, turn: Turn, e: JSONDict) -> Call:
        """get_refund_policy: the rules for the category and reason; decides the amount."""
        reason = INTENTS[e["intent"]][0]
        amount = {"late": lambda: e["shipping_fee"] + 0.15 * e["net_items"],
                  "damaged": lambda: e["damaged"][2], "double_charge": lambda: e["total"]}[e["intent"]]()
        e.update(decision=round(amount, 2), policy_id=self.new_id("POL-", 4))
        doc = {"policy_id": e["policy_id"], "version": f"2024.{self.rng.randint(1, 9)}", "category": e["category"],
               "reason": reason, "refund_destination": "original_payment_method", "supervisor_approval_over": 500.0,
               "rules": []}

        def rule(i: int) -> JSONDict:
            other = reason if i == 0 else self.rng.choice(RULES)
            share = (0.15 if e["intent"] == "late" else 1.0) if i == 0 else self.pick(0.15, 0.5, 1.0)
            return {"rule_id": f"{e['policy_id']}-R{i + 1}", "reason": other, "category": e["category"],
                    "window_days": self.pick(14, 30, 60, 90),
                    "refund_share": share, "return_required": i > 0 and self.rng.random() < 0.4,
                    "note": f"Applies to {e['category']} orders; {other.replace('_', ' ')} claims need the order id "
                            f"and, for shipping issues, the carrier tracking history."}
        doc["rules"] = self.fill(doc, rule)
        return "get_refund_policy", {"category": e["category"], "reason": reason}, doc

    def step_refund(self, turn: Turn, e: JSONDict) -> Call:
        """issue_refund: the decided amount back to the card."""
        e.update(refund_id=self.new_id("RF-", 7),
                 refund_status="succeeded" if e["decision"] <= 500 else "pending_approval",
                 settle=(self.now + timedelta(days=self.rng.randint(3, 7))).date().isoformat())
        args: JSONDict = {"order_id": e["order_id"], "amount": e["decision"], "reason": INTENTS[e["intent"]][0]}
        if e["intent"] == "damaged":
            args["line_item_ids"] = [e["damaged"][0]]
        doc = {"refund_id": e["refund_id"], "order_id": e["order_id"], "payment_id": e["payment_id"],
               "amount": e["decision"], "currency": "USD", "status": e["refund_status"],
               "created_at": iso(self.tick()), "expected_settlement": e["settle"],
               "destination": {"brand": e["card"][0], "last4": e["card"][1]}, "processing_events": []}
        moment = self.now
        kinds = ("refund.created", "charge.refund.updated", "refund.updated", "webhook.delivered", "ledger.posted")

        def event(i: int) -> JSONDict:
            nonlocal moment
            moment += timedelta(seconds=self.rng.randint(1, 90))
            return {"event_id": self.new_id("evt_", 14, ALNUM), "type": kinds[i % len(kinds)], "at": iso(moment),
                    "refund_id": e["refund_id"], "amount": e["decision"], "status": e["refund_status"]}
        doc["processing_events"] = self.fill(doc, event)
        return "issue_refund", args, doc

    def step_payment(self, turn: Turn, e: JSONDict) -> Call:
        """get_payment: the transactions on the order's payment."""
        if "payment_id" not in e:
            return self.step_order(turn, e)
        doc = {"payment_id": e["payment_id"], "order_id": e["order_id"], "amount": e["total"], "currency": "USD",
               "method": {"type": "card", "brand": e["card"][0], "last4": e["card"][1]},
               "processor": "Stripe", "status": "captured", "transactions": []}
        kinds = ["authorization", "capture"] + ["capture"] * (e["intent"] == "double_charge")
        moment = e["placed"]

        def transaction(i: int) -> JSONDict:
            nonlocal moment
            moment += timedelta(minutes=self.rng.randint(0, 90), seconds=self.rng.randrange(60))
            money_moves = i < len(kinds)
            kind = kinds[i] if money_moves else self.pick("risk_check", "webhook_delivery", "settlement_report")
            return {"transaction_id": self.new_id("TXN-", 9), "type": kind, "at": iso(moment),
                    "amount": e["total"] if money_moves else 0.0, "processor_ref": self.new_id("ch_", 14, ALNUM),
                    "result": "approved", "risk": {"score": self.rng.randint(2, 40), "avs": "Y", "cvc": "pass"}}
        doc["transactions"] = self.fill(doc, transaction)
        e["captures"] = sum(t["type"] == "capture" for t in doc["transactions"])
        return "get_payment", {"payment_id": e["payment_id"]}, doc

    def step_customer(self, turn: Turn, e: JSONDict) -> Call:
        """get_customer: profile and past tickets."""
        doc = {"customer_id": e["customer_id"], "name": e["name"], "email": e["email"],
               "tier": self.pick("basic", "trail", "summit"),
               "member_since": f"{self.rng.randint(2015, 2023)}-0{self.rng.randint(1, 9)}-1{self.rng.randint(0, 9)}",
               "lifetime_value": round(self.rng.uniform(150, 6000), 2), "tickets": []}
        doc["tickets"] = self.fill(doc, lambda i: {
            "ticket_id": self.new_id("TCK-", 5),
            "opened_at": iso(self.now - timedelta(days=self.rng.randint(30, 900))),
            "channel": self.pick("email", "chat", "phone"), "topic": self.pick(*RULES), "status": "closed",
            "summary": "Resolved per policy; customer confirmed."})
        return "get_customer", {"customer_id": e["customer_id"]}, doc

    def step_history(self, turn: Turn, e: JSONDict) -> Call:
        """list_customer_orders: older orders of the customer."""
        doc = {"customer_id": e["customer_id"], "orders": []}
        doc["orders"] = self.fill(doc, lambda i: {
            "order_id": self.new_id("ORD-"), "placed_at": iso(self.now - timedelta(days=self.rng.randint(25, 700))),
            "status": self.pick("delivered", "delivered", "returned", "cancelled"),
            "total": round(self.rng.uniform(12, 480), 2), "items": self.rng.randint(1, 6)}, limit=1000)
        return "list_customer_orders", {"customer_id": e["customer_id"], "limit": len(doc["orders"])}, doc

    def answer(self, turn: Turn) -> str:
        """What was found and done, per order, with the ids and amounts from the results."""
        lines = [f"Ticket for {turn.info['name']} ({turn.info['intent'].replace('_', ' ')}):"]
        lines += [self._order_summary(e, turn.facts) for e in turn.entities]
        if any(e.get("refund_status") == "pending_approval" for e in turn.entities):
            lines.append("A supervisor must approve the pending refund before the customer is told it is done.")
        elif any("refund_id" in e for e in turn.entities):
            lines.append("You can reply to the customer with the amounts above; nothing else is needed.")
        else:
            lines.append("No refund has been issued yet.")
        return "\n".join(lines)

    @staticmethod
    def _order_summary(e: JSONDict, facts: list[str]) -> str:
        """One answer line for an order; the ids and amounts it cites are added to ``facts``."""
        if "total" not in e:
            return f"- {e['order_id']}: not looked up yet."
        items = f"{e['item_count']} item{'s' * (e['item_count'] > 1)}"
        text = f"- {e['order_id']} (customer {e['customer_id']}, {items}, total {money(e['total'])})"
        facts.append(e["customer_id"])
        if "ship_status" in e:
            status = {"in_transit": "in transit", "exception": "stuck with a carrier exception"}.get(
                e["ship_status"], e["ship_status"])
            text += f": {e['carrier']} {e['tracking']} is {status}, last scan {e['last_scan']}"
            facts.append(e["tracking"])
        if e.get("captures", 0) > 1:
            text += f"; payment {e['payment_id']} shows {e['captures']} captures of {money(e['total'])}"
        if e["intent"] == "damaged" and "decision" in e:
            text += f"; damaged item {e['damaged'][1]} ({e['damaged'][0]})"
        if "refund_id" in e:
            done = "refunded" if e["refund_status"] == "succeeded" else "refund pending supervisor approval:"
            text += (f". Decision: {done} {money(e['decision'])} under {e['policy_id']} as {e['refund_id']} "
                     f"to the {e['card'][0]} ending {e['card'][1]}, settling by {e['settle']}")
            facts += [money(e["decision"]), e["refund_id"]]
        elif "decision" in e:
            text += f". Policy {e['policy_id']} allows a refund of {money(e['decision'])}; not issued yet"
        return text + "."


# --------------------------------------------------------------------------- SQL analytics agent

QUARTERS = tuple((f"Q{q} {y}", f"{y}-{3 * q - 2:02d}-01", f"{y + (q == 4)}-{(3 * q + 1) % 12 or 12:02d}-01")
                 for y in (2023, 2024) for q in (1, 2, 3, 4))
REGIONS = ("North America", "EMEA", "APAC", "LATAM")
CATEGORIES = ("Footwear", "Outerwear", "Camping", "Electronics", "Home")
SEGMENTS = ("enterprise", "mid_market", "smb")
COMPANY_SUFFIX = ("Logistics", "Outdoor Co", "Retail Group", "Supply", "Trading", "Sports GmbH", "& Sons")
SQL_CHECKS = ("column_exists", "join_keys_typed", "read_only", "date_range_half_open", "group_by_complete",
              "limit_present", "no_cartesian_join")
_WHERE = "o.status = 'completed' AND o.order_date >= DATE '{start}' AND o.order_date < DATE '{end}'"
SQL_QUESTIONS: dict[str, JSONDict] = {
    "top_customers": {
        "question": "Which customers brought in the most revenue in {period}?",
        "sql": "SELECT c.customer_id, c.name, c.segment, SUM(o.total_amount) AS revenue, COUNT(*) AS orders "
               "FROM orders o JOIN customers c ON c.customer_id = o.customer_id WHERE " + _WHERE +
               " GROUP BY c.customer_id, c.name, c.segment ORDER BY revenue DESC LIMIT 1000",
        "bug": ("SUM(o.total_amount)", "SUM(o.order_total)", "42703", "column o.order_total does not exist"),
        "tables": ["orders", "customers"]},
    "top_products": {
        "question": "Which {category} products sold the most units in {period}?",
        "sql": "SELECT p.product_id, p.name, SUM(oi.quantity) AS units, SUM(oi.quantity * oi.unit_price - "
               "oi.discount) AS revenue FROM order_items oi JOIN products p ON p.product_id = oi.product_id "
               "JOIN orders o ON o.order_id = oi.order_id WHERE p.category = '{category}' AND " + _WHERE +
               " GROUP BY p.product_id, p.name ORDER BY units DESC LIMIT 1000",
        "bug": ("ORDER BY units", "ORDER BY unit", "42703", 'column "unit" does not exist'),
        "tables": ["order_items", "products", "orders"]},
    "daily_revenue": {
        "question": "What was the daily revenue per sales rep for {region} customers in {period}?",
        "sql": "SELECT o.order_date AS day, o.rep_id, COUNT(*) AS orders, SUM(o.total_amount) AS revenue "
               "FROM orders o JOIN customers c ON c.customer_id = o.customer_id "
               "WHERE c.region = '{region}' AND " + _WHERE +
               " GROUP BY o.order_date, o.rep_id ORDER BY day, o.rep_id LIMIT 1000",
        "bug": ("JOIN customers c", "JOIN customer c", "42P01", "relation customer does not exist"),
        "tables": ["orders", "customers"]},
    "rep_performance": {
        "question": "How did each sales rep in {region} perform in {period}?",
        "sql": "SELECT r.rep_id, r.name, COUNT(*) AS deals, SUM(o.total_amount) AS revenue, AVG(o.total_amount) "
               "AS avg_deal FROM orders o JOIN sales_reps r ON r.rep_id = o.rep_id WHERE r.region = '{region}' AND "
               + _WHERE + " GROUP BY r.rep_id, r.name ORDER BY revenue DESC LIMIT 1000",
        "bug": ("WHERE r.region", "WHERE o.region", "42703", "column o.region does not exist"),
        "tables": ["orders", "sales_reps"]},
}
ROW_SCALE = {"top_customers": 240_000, "top_products": 5_000, "daily_revenue": 60_000, "rep_performance": 900_000}
SQL_PROMPT = """You are DataPal, the analytics agent of a sporting-goods wholesaler. Analysts ask \
questions in plain English; you answer from the PostgreSQL warehouse.

Schema (read-only):
- customers(customer_id text primary key, name text, segment text, region text, signup_date date)
- products(product_id text primary key, name text, category text, list_price numeric)
- orders(order_id text primary key, customer_id text, rep_id text, order_date date, status text, \
channel text, total_amount numeric)
- order_items(order_id text, product_id text, quantity int, unit_price numeric, discount numeric)
- sales_reps(rep_id text primary key, name text, region text, hired_on date)

Rules:
- Always call generate_sql, then valid_sql on its output, and run_sql only on SQL that valid_sql \
accepted. If valid_sql reports an error, call generate_sql again with the previous SQL and the \
error, and validate again.
- Only completed orders count as revenue (status = 'completed'). Periods are half-open date ranges.
- Never run statements that modify data.
- Answer with the key numbers exactly as run_sql returned them, name the ids of the top rows, and \
show the final SQL."""


class SqlWorld(World):
    """An analytics agent: each turn asks questions, each answered by generate/validate/run."""

    name = "sql"
    title = "SQL analytics agent"
    description = ("An analytics agent turns questions about a made-up sales warehouse into SQL with "
                   "generate_sql, checks it with valid_sql (fixing the SQL when it is rejected) and runs it "
                   "with run_sql, then compares with the previous quarter.")
    system_prompt = SQL_PROMPT
    follow_up = ("compare", "validate", "run")
    tools = (
        tool("generate_sql", "Write one PostgreSQL SELECT statement answering a question about the sales "
             "warehouse. Pass the previous SQL and the validator's error to get a corrected statement.", "sql",
             {"question": str_prop("The analyst's question in plain English."),
              "dialect": str_prop("SQL dialect.", enum=["postgresql"]),
              "previous_sql": str_prop("SQL that failed validation, to be fixed."),
              "error": str_prop("The validation error of previous_sql.")}, ("question",)),
        tool("valid_sql", "Parse and plan a SQL statement against the warehouse schema without running it; "
             "returns errors with SQLSTATE codes, warnings and lint checks.", "sql",
             {"sql": str_prop("The SQL statement to check.")}, ("sql",)),
        tool("run_sql", "Run a validated read-only SQL statement and return its rows as JSON objects.", "sql",
             {"sql": str_prop("The SQL statement to run."),
              "max_rows": num_prop("Row limit of the response (1-1000).", "integer", minimum=1,
                                   maximum=1000)}, ("sql",)),
        tool("describe_table", "Columns, types and a few sample rows of one warehouse table.", "sql",
             {"table": str_prop("Table name.", enum=["customers", "products", "orders", "order_items",
                                                     "sales_reps"])},
             ("table",)),
    )

    def _question(self, kind: str, quarter: int) -> JSONDict:
        period, start, end = QUARTERS[quarter]
        values = {"period": period, "start": start, "end": end, "region": self.rng.choice(REGIONS),
                  "category": self.rng.choice(CATEGORIES)}
        spec = SQL_QUESTIONS[kind]
        return {"kind": kind, "quarter": quarter, "values": values,
                "question": spec["question"].format(**values), "good_sql": spec["sql"].format(**values)}

    def start_turn(self, index: int, entities: int) -> Turn:
        """An analyst asks ``entities`` questions at once."""
        self.tick(30, 300)
        turn = Turn(index)
        for _ in range(entities):
            q = self._question(self.rng.choice(tuple(SQL_QUESTIONS)), self.rng.randrange(1, len(QUARTERS)))
            q.update(queue=["generate", "validate", "run"], buggy=self.rng.random() < 0.35, results=[])
            turn.entities.append(q)
        asks = [e["question"] for e in turn.entities]
        intro = self.pick("For the quarterly business review:", "Quick one for the exec summary:",
                          "Finance is asking:", "Before Monday's pipeline call:")
        if len(asks) == 1:
            turn.request = f"{intro} {asks[0]}"
        else:
            turn.request = intro + " " + " ".join(f"({k + 1}) {a}" for k, a in enumerate(asks))
        turn.facts.extend(asks)
        return turn

    def _example(self, i: int) -> JSONDict:
        q = self._question(self.rng.choice(tuple(SQL_QUESTIONS)), self.rng.randrange(len(QUARTERS)))
        return {"example_id": self.new_id("EX-", 5), "question": q["question"], "sql": q["good_sql"],
                "similarity": round(0.93 - 0.04 * i - self.rng.random() * 0.03, 3)}

    def step_generate(self, turn: Turn, e: JSONDict) -> Call:
        """generate_sql: the statement (the first one may carry a bug), with retrieved examples."""
        spec = SQL_QUESTIONS[e["kind"]]
        args: JSONDict = {"question": e["question"], "dialect": "postgresql"}
        if "error" in e:
            args.update(previous_sql=e["sql"], error=e.pop("error"))
            e["sql"] = e["good_sql"]
        elif e.pop("buggy", False):
            e["sql"] = e["good_sql"].replace(spec["bug"][0], spec["bug"][1], 1)
        else:
            e["sql"] = e["good_sql"]
        doc = {"sql": e["sql"], "dialect": "postgresql", "tables": spec["tables"],
               "explanation": "Filters completed orders in the half-open period, aggregates per group and "
                              "sorts by the metric the question asks for.",
               "confidence": round(self.rng.uniform(0.71, 0.97), 2), "retrieved_examples": []}
        doc["retrieved_examples"] = self.fill(doc, self._example)
        return "generate_sql", args, doc

    def step_validate(self, turn: Turn, e: JSONDict) -> Call:
        """valid_sql: accepted, or rejected with the bug's error (then the SQL is generated again)."""
        spec = SQL_QUESTIONS[e["kind"]]
        bad = e["sql"] != e["good_sql"]
        errors = [{"sqlstate": spec["bug"][2], "message": spec["bug"][3],
                   "position": e["sql"].find(spec["bug"][1]) + 1}] if bad else []
        doc = {"valid": not bad, "dialect": "postgresql", "errors": errors, "warnings": [],
               "tables": spec["tables"], "estimated_cost": None if bad else round(self.rng.uniform(800, 90000), 1),
               "checks": []}

        def check(i: int) -> JSONDict:
            table = self.rng.choice(spec["tables"])
            failed = bad and i == 0
            rule = "column_exists" if failed else self.rng.choice(SQL_CHECKS)
            return {"check_id": self.new_id("CHK-", 6), "rule": rule, "object": table,
                    "status": "fail" if failed else "pass", "detail": f"checked against the catalog of {table}"}
        doc["checks"] = self.fill(doc, check)
        if bad:
            e["error"] = spec["bug"][3]
            e["queue"] = ["generate", "validate", "run"]
        return "valid_sql", {"sql": e["sql"]}, doc

    def step_run(self, turn: Turn, e: JSONDict) -> Call:
        """run_sql: rows sorted as the SQL asks; records the key number for the answer."""
        make_row, limit = self._row_maker(e)
        doc = {"query_id": self.new_id("q_", 10, "0123456789abcdef"), "columns": [], "rows": [], "row_count": 0,
               "truncated": False, "elapsed_ms": self.rng.randint(40, 2400)}
        rows = self.fill(doc, make_row, limit=limit)
        doc.update(columns=list(rows[0]), rows=rows, row_count=len(rows))
        e["results"].append((QUARTERS[e["quarter"]][0], self._summary(e["kind"], rows)))
        e["final_sql"] = e["sql"]
        return "run_sql", {"sql": e["sql"], "max_rows": 1000}, doc

    def _row_maker(self, e: JSONDict) -> tuple[Callable[[int], JSONDict], int]:
        """A function making the i-th result row of the entity's query, and the row limit."""
        kind, values = e["kind"], e["values"]
        start = datetime.fromisoformat(values["start"])
        days = (datetime.fromisoformat(values["end"]) - start).days
        level = self.rng.uniform(0.4, 1.0) * ROW_SCALE[kind]
        if kind == "daily_revenue":
            reps = sorted(self.new_id("REP-", 4) for _ in range(self.result_chars // 75 // days + 1))
            return (lambda i: {"day": (start + timedelta(days=i // len(reps))).date().isoformat(),
                               "rep_id": reps[i % len(reps)], "orders": self.rng.randint(4, 90),
                               "revenue": round(self.rng.uniform(0.5, 1.5) * level / len(reps), 2)},
                    min(1000, days * len(reps)))

        def ranked(i: int) -> JSONDict:
            nonlocal level
            level *= self.rng.uniform(0.9, 0.995)
            first, last = self.person()
            if kind == "top_customers":
                return {"customer_id": self.new_id("C", 6), "name": f"{last} {self.pick(*COMPANY_SUFFIX)}",
                        "segment": self.pick(*SEGMENTS), "revenue": round(level, 2),
                        "orders": self.rng.randint(3, 90)}
            if kind == "top_products":
                return {"product_id": self.new_id("P-", 5),
                        "name": f"{values['category']} model {self.rng.randrange(100, 999)}",
                        "units": int(level), "revenue": round(int(level) * self.rng.uniform(18, 240), 2)}
            deals = self.rng.randint(4, 60)
            return {"rep_id": self.new_id("REP-", 4), "name": f"{first} {last}", "deals": deals,
                    "revenue": round(level, 2), "avg_deal": round(level / deals, 2)}
        return ranked, 1000

    @staticmethod
    def _summary(kind: str, rows: list[JSONDict]) -> tuple[str, str]:
        """(sentence, key number as written) for the answer."""
        top = rows[0]
        if kind == "daily_revenue":
            peak = max(rows, key=lambda r: r["revenue"])
            key = money(peak["revenue"])
            total = money(sum(r["revenue"] for r in rows))
            return f"best rep-day {peak['rep_id']} on {peak['day']} with {key}; {total} over {len(rows)} rows", key
        key = money(top["revenue"])
        if kind == "top_products":
            return f"{top['name']} ({top['product_id']}) sold {top['units']:,} units for {key}", key
        ident = top.get("customer_id") or top.get("rep_id")
        return f"{top['name']} ({ident}) leads with {key} out of {len(rows)} rows", key

    def step_compare(self, turn: Turn, e: JSONDict) -> Call:
        """A follow-up query: the same question for the quarter before the last one run."""
        quarter = (e["quarter"] - 1) % len(QUARTERS)
        period, start, end = QUARTERS[quarter]
        values = {**e["values"], "period": period, "start": start, "end": end}
        spec = SQL_QUESTIONS[e["kind"]]
        e.update(quarter=quarter, values=values, good_sql=spec["sql"].format(**values),
                 question="For comparison: " + spec["question"].format(**values))
        return self.step_generate(turn, e)

    def answer(self, turn: Turn) -> str:
        """Each question's key numbers per period, and the final SQL."""
        parts = []
        for k, e in enumerate(turn.entities):
            head = f"{k + 1}. " if len(turn.entities) > 1 else ""
            if e["results"]:
                found = "; ".join(f"{period}: {text}" for period, (text, _) in e["results"])
                parts.append(f"{head}{found}.\nFinal SQL:\n{e['final_sql']}")
                turn.facts += [key for _, (_, key) in e["results"]] + [e["final_sql"]]
            else:
                parts.append(f"{head}Not run yet; the current SQL is:\n{e['sql']}")
                turn.facts.append(e["sql"])
        return "\n\n".join(parts)


# --------------------------------------------------------------------------- travel booking

AIRPORTS = (("LIS", "Lisbon"), ("BCN", "Barcelona"), ("FCO", "Rome"), ("CDG", "Paris"), ("AMS", "Amsterdam"),
            ("BER", "Berlin"), ("VIE", "Vienna"), ("PRG", "Prague"), ("CPH", "Copenhagen"), ("ATH", "Athens"),
            ("DUB", "Dublin"), ("MAD", "Madrid"), ("ZRH", "Zurich"), ("WAW", "Warsaw"), ("BUD", "Budapest"),
            ("EDI", "Edinburgh"))
HUBS = ("FRA", "MUC", "AMS", "CDG", "ZRH", "VIE")
AIRLINES = (("TP", "TAP Air Portugal"), ("VY", "Vueling"), ("IB", "Iberia"), ("LH", "Lufthansa"),
            ("AF", "Air France"), ("KL", "KLM"), ("LX", "SWISS"), ("OS", "Austrian"), ("SK", "SAS"),
            ("A3", "Aegean"), ("EI", "Aer Lingus"), ("LO", "LOT"))
HOTEL_NAMES = (("Casa", "Hotel", "Residence", "Maison", "Palazzo", "The"),
               ("Azul", "Central", "Harbor", "Garden", "Lumen", "Meridian", "Atelier", "Riverside", "Nova"))
QUARTERS_OF_TOWN = ("Old Town", "City Center", "Riverside", "Arts District", "Station Quarter", "University")
TAX_CODES = (("YQ", "Carrier surcharge"), ("UJ", "Airport service charge"), ("YP", "Passenger service fee"),
             ("QX", "Security charge"), ("RA", "Aviation tax"))
TRAVEL_PROMPT = """You are the booking assistant of Waypoint, a corporate travel desk. Travel \
coordinators give you trips; you find and hold flights and hotels.

Policy:
- Search flights and hotels for every leg at once: issue independent calls in parallel.
- Choose the cheapest flight offer in the requested cabin unless it has two or more stops; read \
its fare rules before holding it.
- Hotels: the best guest rating under the nightly budget, within 3 km of the center.
- Hold (do not ticket) flights and hotels; holds expire after 24 hours, so always give the \
expiry time.
- If a tool returns an error, retry once with the same arguments, then report it.
- In your answer cite offer ids, booking references and reservation ids exactly, with prices in EUR."""


class TravelWorld(World):
    """A travel desk: each turn is a trip of several legs, searched and held leg by leg in parallel."""

    name = "travel"
    title = "Travel booking desk"
    description = ("A travel assistant plans multi-leg trips: for every leg it searches flights and hotels, "
                   "reads fare rules and holds the chosen offer and room, with one tool call per leg in "
                   "parallel.")
    system_prompt = TRAVEL_PROMPT
    follow_up = ("seat_map", "flight_status")
    tools = (
        tool("search_flights", "Search flight offers between two airports on a date, priced for the "
             "passengers, with segments, baggage and fare brand.", "flights",
             {"origin": str_prop("IATA airport code."), "destination": str_prop("IATA airport code."),
              "departure_date": str_prop("YYYY-MM-DD.", format="date"),
              "cabin": str_prop("Cabin class.", enum=["economy", "premium_economy", "business"]),
              "passengers": num_prop("Number of adults.", "integer", minimum=1, maximum=9)},
             ("origin", "destination", "departure_date")),
        tool("get_fare_rules", "Change, cancellation and baggage rules of a flight offer.", "flights",
             {"offer_id": str_prop("Offer id from search_flights.")}, ("offer_id",)),
        tool("hold_flight", "Hold a flight offer for 24 hours without ticketing; returns a booking reference.",
             "flights", {"offer_id": str_prop("Offer id."), "passengers": {
                 "type": "array", "description": "Travelers as on their passports.",
                 "items": {"type": "object", "properties": {"given_name": {"type": "string"},
                                                            "family_name": {"type": "string"}}}}},
             ("offer_id", "passengers")),
        tool("search_hotels", "Search hotels in a city for a stay, with rooms, nightly rates and ratings.",
             "hotels", {"city": str_prop("City name."), "check_in": str_prop("YYYY-MM-DD.", format="date"),
                        "check_out": str_prop("YYYY-MM-DD.", format="date"),
                        "guests": num_prop("Number of guests.", "integer", minimum=1),
                        "max_nightly_rate": num_prop("Budget per night in EUR.")}, ("city", "check_in", "check_out")),
        tool("hold_hotel", "Hold a hotel room with free cancellation; returns a reservation id.", "hotels",
             {"hotel_id": str_prop("Hotel id."), "room_code": str_prop("Room code from search_hotels."),
              "check_in": str_prop("YYYY-MM-DD."), "check_out": str_prop("YYYY-MM-DD."),
              "guest_name": str_prop("Lead guest.")},
             ("hotel_id", "room_code", "check_in", "check_out", "guest_name")),
        tool("get_seat_map", "Seat availability and prices on one flight of an offer.", "flights",
             {"offer_id": str_prop("Offer id."), "flight_number": str_prop("Flight number, e.g. TP1032.")},
             ("offer_id", "flight_number")),
        tool("get_flight_status", "Schedule, gates and recent on-time history of a flight.", "flights",
             {"flight_number": str_prop("Flight number."), "date": str_prop("YYYY-MM-DD.")},
             ("flight_number", "date")),
    )

    def start_turn(self, index: int, entities: int) -> Turn:
        """A trip of ``entities`` legs for one to three travelers."""
        self.tick(30, 300)
        stops = self.rng.sample(AIRPORTS, entities + 1)
        travelers: list[tuple[str, str]] = []
        for _ in range(self.rng.randint(1, 3)):
            while (name := self.person()) in travelers:
                pass
            travelers.append(name)
        day = self.now + timedelta(days=self.rng.randint(14, 60))
        budget, cabin = self.pick(150, 180, 220, 260), self.pick("economy", "economy", "premium_economy")
        turn = Turn(index, info={"travelers": travelers})
        for a, b in zip(stops, stops[1:]):
            nights = self.rng.randint(2, 5)
            turn.entities.append({"origin": a[0], "destination": b[0], "city": b[1], "date": day.date().isoformat(),
                                  "check_out": (day + timedelta(days=nights)).date().isoformat(), "nights": nights,
                                  "budget": budget, "cabin": cabin, "travelers": travelers,
                                  "queue": ["flights", "hotels", "fare_rules", "hold_flight", "hold_hotel"]})
            day += timedelta(days=nights)
        legs = [f"{e['origin']} to {e['destination']} on {e['date']} ({e['nights']} nights in {e['city']})"
                for e in turn.entities]
        names = join_words([f"{f} {l}" for f, l in travelers])
        turn.request = (f"New trip for {names}: {join_words(legs)}. {cabin.replace('_', ' ').capitalize()}, morning "
                        f"flights if possible, hotels under EUR {budget} a night near the center. Hold everything, "
                        "don't ticket yet.")
        turn.facts += [f"{e['origin']} to {e['destination']} on {e['date']}" for e in turn.entities]
        return turn

    def _offer(self, e: JSONDict, i: int) -> JSONDict:
        code, airline = self.rng.choice(AIRLINES)
        depart = datetime.fromisoformat(e["date"]) + timedelta(hours=self.rng.randint(6, 20),
                                                              minutes=self.pick(0, 15, 30, 45))
        hubs = [h for h in HUBS if h not in (e["origin"], e["destination"])]
        hops = [e["origin"], *([self.pick(*hubs)] if self.rng.random() < 0.4 else []), e["destination"]]
        segments, moment = [], depart
        for a, b in zip(hops, hops[1:]):
            arrive = moment + timedelta(minutes=self.rng.randint(85, 210))
            segments.append({"flight_number": f"{code}{self.rng.randint(100, 2999)}", "from": a, "to": b,
                             "departs": iso(moment), "arrives": iso(arrive),
                             "aircraft": self.pick("A320neo", "A321", "737-800", "E195", "A220-300")})
            moment = arrive + timedelta(minutes=self.rng.randint(50, 160))
        people = len(e["travelers"])
        base = round(self.rng.uniform(49, 380) * people * (1.6 if e["cabin"] != "economy" else 1), 2)
        taxes = round(self.rng.uniform(18, 75) * people, 2)
        return {"offer_id": self.new_id("OF-", 8), "carrier": {"code": code, "name": airline}, "segments": segments,
                "stops": len(segments) - 1, "cabin": e["cabin"], "fare_brand": self.pick("Light", "Classic", "Flex"),
                "price": {"base": base, "taxes": taxes, "total": round(base + taxes, 2), "currency": "EUR"},
                "baggage": {"cabin": "1x8kg", "checked": self.pick(0, 1)}, "refundable": self.rng.random() < 0.3,
                "seats_left": self.rng.randint(1, 9)}

    def step_flights(self, turn: Turn, e: JSONDict) -> Call:
        """search_flights: offers; picks the cheapest with fewer than two stops."""
        doc = {"search_id": self.new_id("S-", 9), "origin": e["origin"], "destination": e["destination"],
               "date": e["date"], "passengers": len(e["travelers"]), "offers": []}
        doc["offers"] = self.fill(doc, lambda i: self._offer(e, i))
        e["offer"] = min(doc["offers"], key=lambda o: o["price"]["total"])
        args = {"origin": e["origin"], "destination": e["destination"], "departure_date": e["date"],
                "cabin": e["cabin"], "passengers": len(e["travelers"])}
        return "search_flights", args, doc

    def _hotel(self, e: JSONDict, i: int) -> JSONDict:
        rate = round(self.rng.uniform(0.6, 1.5) * e["budget"], 2)
        rooms = [{"room_code": self.new_id("RM", 6), "type": kind, "refundable": self.rng.random() < 0.7,
                  "nightly_rate": round(rate * bump, 2), "total": round(rate * bump * e["nights"], 2)}
                 for kind, bump in (("Standard double", 1.0), ("Superior king", 1.25))[: self.rng.randint(1, 2)]]
        name = f"{self.pick(*HOTEL_NAMES[0])} {self.pick(*HOTEL_NAMES[1])} {e['city']}"
        return {"hotel_id": self.new_id("HT-", 6), "name": name,
                "stars": self.rng.randint(3, 5), "neighborhood": self.rng.choice(QUARTERS_OF_TOWN),
                "guest_rating": round(self.rng.uniform(7.1, 9.6), 1), "reviews": self.rng.randint(80, 6000),
                "distance_to_center_km": round(self.rng.uniform(0.2, 6.0), 1), "rooms": rooms,
                "amenities": self.rng.sample(("wifi", "breakfast", "gym", "spa", "bar", "parking", "laundry"), 3)}

    def step_hotels(self, turn: Turn, e: JSONDict) -> Call:
        """search_hotels: hotels; picks the best rated room under budget (else the cheapest)."""
        doc = {"search_id": self.new_id("S-", 9), "city": e["city"], "check_in": e["date"],
               "check_out": e["check_out"], "nights": e["nights"], "hotels": []}
        doc["hotels"] = self.fill(doc, lambda i: self._hotel(e, i))
        options = [(h, r) for h in doc["hotels"] for r in h["rooms"]]
        fitting = [o for o in options if o[1]["nightly_rate"] <= e["budget"] and o[0]["distance_to_center_km"] <= 3]
        e["hotel"] = max(fitting, key=lambda o: o[0]["guest_rating"]) if fitting else \
            min(options, key=lambda o: o[1]["nightly_rate"])
        args = {"city": e["city"], "check_in": e["date"], "check_out": e["check_out"],
                "guests": len(e["travelers"]), "max_nightly_rate": e["budget"]}
        return "search_hotels", args, doc

    def step_fare_rules(self, turn: Turn, e: JSONDict) -> Call:
        """get_fare_rules: change and refund conditions of the chosen offer."""
        fee = self.pick(0, 45, 70, 100)
        e["change_fee"] = fee
        doc = {"offer_id": e["offer"]["offer_id"], "fare_basis": self.new_id("", 7, string.ascii_uppercase),
               "change_fee_eur": fee, "refundable": e["offer"]["refundable"], "rules": []}
        doc["rules"] = self.fill(doc, lambda i: {
            "rule_id": self.new_id("FR-", 6),
            "category": self.pick("changes", "cancellation", "no_show", "baggage", "minimum_stay"),
            "applies": self.pick("before departure", "after departure", "any time"),
            "penalty_eur": self.pick(0, 45, 70, 100, 150),
            "text": "Changes permitted subject to fare difference; name changes not permitted; unused segments "
                    "are not refundable unless stated otherwise."})
        return "get_fare_rules", {"offer_id": e["offer"]["offer_id"]}, doc

    def step_hold_flight(self, turn: Turn, e: JSONDict) -> Call:
        """hold_flight: a booking reference valid for 24 hours."""
        e.update(pnr=self.new_id("", 6, "ABCDEFGHJKLMNPQRSTUVWXYZ"), expires=iso(self.tick() + timedelta(hours=24)))
        pax = [{"given_name": f, "family_name": l} for f, l in e["travelers"]]
        doc = {"booking_ref": e["pnr"], "status": "held", "offer_id": e["offer"]["offer_id"],
               "expires_at": e["expires"],
               "total": e["offer"]["price"]["total"], "currency": "EUR", "passengers": pax, "tax_lines": []}

        def tax(i: int) -> JSONDict:
            code, text = self.rng.choice(TAX_CODES)
            f, l = self.rng.choice(e["travelers"])
            return {"line_id": self.new_id("TX", 7), "passenger": f"{l}/{f}".upper(), "code": code,
                    "description": text, "amount": round(self.rng.uniform(2, 40), 2)}
        doc["tax_lines"] = self.fill(doc, tax)
        return "hold_flight", {"offer_id": e["offer"]["offer_id"], "passengers": pax}, doc

    def step_hold_hotel(self, turn: Turn, e: JSONDict) -> Call:
        """hold_hotel: a reservation id for the chosen room."""
        hotel, room = e["hotel"]
        lead = " ".join(e["travelers"][0])
        e["reservation"] = self.new_id("HR-", 8)
        doc = {"reservation_id": e["reservation"], "status": "held", "hotel_id": hotel["hotel_id"],
               "hotel": hotel["name"],
               "room": room["type"], "check_in": e["date"], "check_out": e["check_out"], "total": room["total"],
               "currency": "EUR", "free_cancellation_until": e["date"] + "T12:00:00Z", "house_rules": []}
        doc["house_rules"] = self.fill(doc, lambda i: {
            "rule_id": self.new_id("HRL-", 6),
            "topic": self.pick("check-in", "pets", "city tax", "deposit", "quiet hours"),
            "text": "City tax is paid at the property; a card is pre-authorized at check-in for incidentals."})
        args = {"hotel_id": hotel["hotel_id"], "room_code": room["room_code"], "check_in": e["date"],
                "check_out": e["check_out"], "guest_name": lead}
        return "hold_hotel", args, doc

    def step_seat_map(self, turn: Turn, e: JSONDict) -> Call:
        """get_seat_map: seats of the first flight of the chosen offer."""
        flight = e["offer"]["segments"][0]
        doc = {"flight_number": flight["flight_number"], "aircraft": flight["aircraft"], "cabin": e["cabin"],
               "seats": []}
        doc["seats"] = self.fill(doc, lambda i: {
            "seat": f"{i // 6 + 1}{'ABCDEF'[i % 6]}",
            "position": ("window", "middle", "aisle")[min(i % 6, 5 - i % 6)],
            "available": self.rng.random() < 0.45, "extra_legroom": i // 6 in (0, 11, 12),
            "price_eur": self.pick(0, 0, 12, 18, 29)})
        return "get_seat_map", {"offer_id": e["offer"]["offer_id"], "flight_number": flight["flight_number"]}, doc

    def step_flight_status(self, turn: Turn, e: JSONDict) -> Call:
        """get_flight_status: schedule and on-time history of the first flight."""
        flight = e["offer"]["segments"][0]
        day = datetime.fromisoformat(e["date"])
        doc = {"flight_number": flight["flight_number"], "date": e["date"], "status": "scheduled",
               "departure": {"airport": flight["from"], "scheduled": flight["departs"],
                             "terminal": str(self.rng.randint(1, 3))},
               "arrival": {"airport": flight["to"], "scheduled": flight["arrives"]}, "on_time_history": []}
        doc["on_time_history"] = self.fill(doc, lambda i: {
            "date": (day - timedelta(days=i + 1)).date().isoformat(), "cancelled": self.rng.random() < 0.02,
            "departure_delay_min": max(0, int(self.rng.gauss(8, 15))),
            "arrival_delay_min": max(0, int(self.rng.gauss(5, 17)))},
            limit=1000)
        return "get_flight_status", {"flight_number": flight["flight_number"], "date": e["date"]}, doc

    def answer(self, turn: Turn) -> str:
        """Per leg: the chosen flight and hotel with their ids, prices and hold expiry."""
        lines = []
        for e in turn.entities:
            text = f"- {e['origin']} to {e['destination']} on {e['date']}: "
            if "offer" in e:
                o = e["offer"]
                flights = "/".join(seg["flight_number"] for seg in o["segments"])
                text += (f"{o['carrier']['name']} {flights} departing {o['segments'][0]['departs'][11:16]}, offer "
                         f"{o['offer_id']} at {money(o['price']['total'], 'EUR ')}")
                turn.facts += [o["offer_id"], money(o["price"]["total"], "EUR ")]
            if "change_fee" in e:
                text += f" (change fee EUR {e['change_fee']})"
            if "pnr" in e:
                text += f", held as booking {e['pnr']} until {e['expires']}"
                turn.facts.append(e["pnr"])
            if "hotel" in e:
                hotel, room = e["hotel"]
                text += (f". Hotel: {hotel['name']} ({hotel['stars']} stars, rated {hotel['guest_rating']}), "
                         f"{room['type']}, {money(room['total'], 'EUR ')} for {e['nights']} nights")
                if room["nightly_rate"] > e["budget"]:
                    text += f" (over the EUR {e['budget']} budget: nothing within it was found)"
            if "reservation" in e:
                text += f", reservation {e['reservation']}"
                turn.facts.append(e["reservation"])
            lines.append(text + ".")
        return "Here is the trip so far:\n" + "\n".join(lines)


BUILTIN_WORLDS: tuple[type[World], ...] = (EcommerceWorld, SqlWorld, TravelWorld)
"""The worlds ``ctxlab.generate`` offers, in the order shown to users."""
