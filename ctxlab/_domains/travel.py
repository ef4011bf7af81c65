"""The travel booking world: flights and hotels for business trips, good for parallel calls."""
from __future__ import annotations

import string
from datetime import datetime, timedelta

from .base import Call, JSONDict, Turn, World, iso, join_words, money, num_prop, str_prop, tool

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

    def lookup_target(self, turn: Turn) -> str:
        """The first leg's chosen offer id (from a search result)."""
        e = turn.entities[0]
        if "offer" not in e:
            raise ValueError("no flight offer has been found yet in this turn")
        return e["offer"]["offer_id"]

    def lookup(self, turn: Turn, wrong_id: str) -> Call:
        """get_fare_rules on a mistyped offer id: the rules of some other fare come back."""
        doc = {"offer_id": wrong_id, "fare_basis": self.new_id("", 7, string.ascii_uppercase),
               "change_fee_eur": 150, "refundable": False,
               "rules": [{"rule_id": self.new_id("FR-", 6), "category": "changes", "applies": "any time",
                          "penalty_eur": 150, "text": "Changes not permitted after departure."}]}
        return "get_fare_rules", {"offer_id": wrong_id}, doc

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
