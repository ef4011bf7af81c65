"""The SQL analytics world: questions answered by generate_sql, valid_sql and run_sql."""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import Callable

from .base import Call, JSONDict, Turn, World, money, num_prop, str_prop, tool

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

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._bugs_made: set[str] = set()

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
        elif e.pop("buggy", False) and (bad := e["good_sql"].replace(spec["bug"][0], spec["bug"][1], 1)) \
                not in self._bugs_made:
            self._bugs_made.add(bad)  # an agent that saw this SQL rejected does not write it again
            e["sql"] = bad
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

    def mention_lookup_target(self, turn: Turn) -> None:
        """Add a request about one customer's latest orders, naming the customer id."""
        turn.info["customer"] = self.new_id("C", 6)
        turn.request += f" Also, list the latest orders of customer {turn.info['customer']}."

    def lookup_target(self, turn: Turn) -> str:
        """The customer id the request names."""
        if "customer" not in turn.info:
            self.mention_lookup_target(turn)
        return turn.info["customer"]

    def lookup(self, turn: Turn, wrong_id: str) -> Call:
        """run_sql on a mistyped customer id: another customer's orders come back."""
        sql = ("SELECT o.customer_id, o.order_id, o.order_date, o.total_amount FROM orders o WHERE o.customer_id = "
               f"'{wrong_id}' ORDER BY o.order_date DESC LIMIT 20")
        rows = [{"customer_id": wrong_id, "order_id": self.new_id("O-", 7),
                 "order_date": f"2024-0{self.rng.randint(1, 9)}-1{k}",
                 "total_amount": round(self.rng.uniform(200, 9000), 2)} for k in range(3)]
        doc = {"query_id": self.new_id("q_", 10, "0123456789abcdef"), "columns": list(rows[0]), "rows": rows,
               "row_count": len(rows), "truncated": False, "elapsed_ms": self.rng.randint(40, 900)}
        return "run_sql", {"sql": sql, "max_rows": 20}, doc

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

