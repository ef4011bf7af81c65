"""The e-commerce support world: tickets about late, damaged and double-charged orders."""
from __future__ import annotations

import string
from datetime import timedelta

from .base import (ALNUM, Call, JSONDict, Turn, World, iso, join_words, money, num_prop, str_prop,
                   tool)

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
        profiles = self.__dict__.setdefault("_profiles", {})
        if e["customer_id"] not in profiles:  # one customer has one profile, however often it is fetched
            profiles[e["customer_id"]] = {
                "tier": self.pick("basic", "trail", "summit"),
                "member_since": f"{self.rng.randint(2015, 2023)}-0{self.rng.randint(1, 9)}-1{self.rng.randint(0, 9)}",
                "lifetime_value": round(self.rng.uniform(150, 6000), 2)}
        doc = {"customer_id": e["customer_id"], "name": e["name"], "email": e["email"],
               **profiles[e["customer_id"]], "tickets": []}
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

    def lookup_target(self, turn: Turn) -> str:
        """The ticket's first order id (it is in the request)."""
        return turn.entities[0]["order_id"]

    def lookup(self, turn: Turn, wrong_id: str) -> Call:
        """get_order on a mistyped order id: another customer's order comes back."""
        total = round(self.rng.uniform(40, 900), 2)
        doc = {"order_id": wrong_id, "customer_id": self.new_id("CUS-"), "status": self.pick("delivered", "returned"),
               "placed_at": iso(self.now - timedelta(days=self.rng.randint(30, 200))), "currency": "USD",
               "totals": {"subtotal": total, "discount": 0.0, "tax": 0.0, "shipping": 0.0, "total": total}}
        return "get_order", {"order_id": wrong_id}, doc

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

