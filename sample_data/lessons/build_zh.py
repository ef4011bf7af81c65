"""Writes the Chinese lesson conversations of ctxlab's Failure Modes lessons into ``zh/`` (run from
the repository root: ``python sample_data/lessons/build_zh.py``). Deterministic: the same files every
run, which ``tests/diagnostics/test_diagnostics_lessons_zh.py`` checks.

One story per failure mode, written for this project with services Chinese users know: a Taobao
shop's support copilot (poisoning), a 12306 rail assistant running on DeepSeek (distraction and
clash), a Tmall store agent on Qwen offered 42 tools with look-alikes (confusion). Every name, id,
train time and amount is made up; no real customer, order or timetable.
"""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "zh"
sys.path.insert(0, str(HERE))

from build import call, fn, result, say, text  # noqa: E402

SHOP_TOOLS = [
    fn("get_order", "按订单号查询订单：买家、状态、商品、快递公司和运单号。", order_id="订单号，形如 TB20261108-4417"),
    fn("file_carrier_claim", "就丢件或破损向快递公司发起理赔。", order_id="订单号", reason="丢件或破损"),
    fn("issue_refund", "把指定金额原路退回到订单的支付方式（支付宝或银行卡）。", order_id="订单号",
       amount="退款金额（元），保留两位小数"),
]
SHOP_PROMPT = ("你是淘宝店铺「山野骑行」的客服助手。回答前先用 get_order 查询订单；"
               "订单号和金额必须与工具返回的完全一致。")


def poisoning() -> dict:
    """A mistyped order id brings another buyer's order into the context; the agent builds on it."""
    other = {"order_id": "TB20261108-4471", "buyer": "周**", "status": "已签收",
             "signed_at": "2026-11-10T14:12:00+08:00", "carrier": "中通快递", "tracking": "78312345678901",
             "items": [{"sku": "SY-BELL-02", "name": "铜制车铃", "qty": 1, "price": 39.00}], "total": 39.00}
    hers = {"order_id": "TB20261108-4417", "buyer": "林**", "status": "运输中",
            "carrier": "中通快递", "tracking": "78398765432109", "promised_by": "2026-11-09",
            "last_scan": "杭州转运中心：面单破损，待重新贴单（2026-11-09）",
            "items": [{"sku": "SY-RACK-11", "name": "后货架", "qty": 1, "price": 149.00},
                      {"sku": "SY-BAG-30", "name": "防水驮包", "qty": 2, "price": 89.50}],
            "total": 328.00}
    refused = json.dumps({"success": False, "error_code": "CLAIM_REJECTED",
                          "msg": "理赔被拒：快递公司未将订单 TB20261108-4417 标记为已签收或丢件"}, ensure_ascii=False)
    messages = [
        say("system", SHOP_PROMPT),
        say("user", "买家林女士的工单 5521：订单 TB20261108-4417（一个后货架和两个驮包）承诺 11 月 9 日送达，"
                    "到现在还没收到。我该怎么回复她？"),
        call("c1", "get_order", order_id="TB20261108-4471"),
        result("c1", "get_order", json.dumps(other, ensure_ascii=False)),
        say("assistant", "订单 TB20261108-4417 已签收，签收时间 11 月 10 日 14:12。\n"
                         "TB20261108-4471 的物流记录显示包裹放在了家门口，建议买家先问问邻居。"),
        say("system", "此前对话摘要（第 1-4 条消息）：\n- 林女士的订单 TB20261108-4417 已签收"
                      "（11 月 10 日 14:12，放在家门口）。"),
        say("user", "林女士说门口什么都没有。请向快递公司发起理赔。"),
        call("c2", "file_carrier_claim", order_id="TB20261108-4417", reason="丢件"),
        result("c2", "file_carrier_claim", refused),
        call("c3", "file_carrier_claim", order_id="TB20261108-4417", reason="丢件"),
        result("c3", "file_carrier_claim", refused),
        call("c4", "get_order", order_id="TB20261108-4417"),
        result("c4", "get_order", json.dumps(hers, ensure_ascii=False)),
        say("assistant", "我前面查错了订单：查成了 TB20261108-4471，那是另一位买家的订单。\n"
                         "林女士的订单 TB20261108-4417（实付 ¥328.00）目前运输中，11 月 9 日起因面单破损滞留在杭州转运中心。\n"
                         "现在不用理赔：中通重新贴单后会继续派送。"),
    ]
    return {"title": "上下文中毒：订单号输错一位，智能体一路将错就错",
            "description": "客服助手把 TB20261108-4417 查成了 TB20261108-4471，断言买家的订单已签收，摘要把这句话带了下去，"
                           "被拒的理赔又重试了一次，最后才重新查对订单。",
            "model": "qwen3-235b-a22b", "messages": messages, "tools": SHOP_TOOLS,
            "facts": ["TB20261108-4417", "林女士", "运输中", "杭州转运中心"]}


RAIL_TOOLS = [
    fn("search_trains", "查询某日两站之间的车次和余票：出发到达时间、历时、各席别余票和票价。",
       from_station="出发站", to_station="到达站", date="乘车日期 YYYY-MM-DD"),
    fn("get_train_detail", "查询一个车次当天的详情：经停站、各席别余票和票价。", train_id="车次，如 G7",
       date="乘车日期 YYYY-MM-DD"),
    fn("submit_order", "为乘车人提交订单并锁定席位，30 分钟内需支付。", train_id="车次", date="乘车日期",
       seat_type="席别：商务座、一等座、二等座", passenger="乘车人姓名"),
    fn("get_ticket_order", "按订单号查询已购车票：车次、日期、席位、票价、是否已检票。", order_id="12306 订单号"),
    fn("calc_refund_fee", "按 12306 退票规则计算退票手续费和实退金额。", order_id="12306 订单号"),
]
RAIL_PROMPT = ("你是一个基于 DeepSeek 的铁路出行助手，通过工具查询 12306 的车次、余票和订单。"
               "票价、时间和订单号必须与工具返回的完全一致。")
LEGS = [("北京南", "上海虹桥", "2026-12-12", "G", 4.5), ("上海虹桥", "杭州东", "2026-12-14", "G", 1.0),
        ("杭州东", "北京南", "2026-12-16", "G", 5.0)]


def _timetable(rng: random.Random, origin: str, dest: str, date: str, hours: float) -> dict:
    """A day's trains between two stations: every train code, time and seat count made up here."""
    trains = []
    for k in range(72):
        start = 6 * 60 + k * 12 + rng.randrange(0, 10)
        length = int(hours * 60) + rng.randrange(-20, 40)
        end = start + length
        trains.append({"train_code": f"G{rng.randrange(1, 1999)}", "from": origin, "to": dest,
                       "depart": f"{start // 60 % 24:02d}:{start % 60:02d}", "arrive": f"{end // 60 % 24:02d}:{end % 60:02d}",
                       "duration": f"{length // 60}小时{length % 60}分",
                       "business": rng.choice(["有", "无", "3", "5", "候补"]),
                       "first": rng.choice(["有", "无", "12", "候补"]), "second": rng.choice(["有", "无", "21", "候补"]),
                       "price_second": round(hours * 120 + rng.randrange(0, 30), 1)})
    return {"date": date, "from_station": origin, "to_station": dest, "count": len(trains), "trains": trains}


def distraction() -> dict:
    """Three full-day timetables from earlier turns outweigh the refund question of the current turn."""
    rng = random.Random(12306)
    messages = [say("system", RAIL_PROMPT)]
    asks = ["帮我查一下 12 月 12 日北京南到上海虹桥的高铁，上午出发的。",
            "14 号从上海虹桥去杭州东，有哪些车？",
            "16 号杭州东回北京南，晚上到就行。"]
    picks = [("G7", "08:00", "12:38", 662.0), ("G7355", "09:12", "10:08", 73.0), ("G36", "13:05", "17:58", 626.0)]
    for n, ((origin, dest, date, _, hours), ask, (code, dep, arr, price)) in enumerate(zip(LEGS, asks, picks)):
        messages.append(say("user", ask))
        messages.append(call(f"s{n}", "search_trains", from_station=origin, to_station=dest, date=date))
        messages.append(result(f"s{n}", "search_trains", json.dumps(_timetable(rng, origin, dest, date, hours),
                                                                     ensure_ascii=False)))
        messages.append(call(f"d{n}", "get_train_detail", train_id=code, date=date))
        messages.append(result(f"d{n}", "get_train_detail", json.dumps(
            {"train_id": code, "date": date, "depart": dep, "arrive": arr, "second_class": {"price": price, "seats": "有"}},
            ensure_ascii=False)))
        messages.append(say("assistant", f"推荐 {code}：{dep} 从{origin}出发，{arr} 到{dest}，二等座 ¥{price:.1f}，目前有票。"))
    messages += [
        say("user", "12 月 12 日那张 G7 的票（订单 E830274615）临时不去了，现在退票手续费多少？"),
        call("r1", "get_ticket_order", order_id="E830274615"),
        result("r1", "get_ticket_order", json.dumps({"order_id": "E830274615", "train_id": "G7", "date": "2026-12-12",
                                                     "seat": "06车12F 二等座", "price": 662.0, "checked_in": False},
                                                    ensure_ascii=False)),
        call("r2", "calc_refund_fee", order_id="E830274615"),
        result("r2", "calc_refund_fee", json.dumps({"order_id": "E830274615", "hours_before_departure": 50,
                                                    "rule": "开车前 48 小时以上、不足 8 天，收取票价 5% 的退票费",
                                                    "fee": 33.0, "refund_amount": 629.0}, ensure_ascii=False)),
        say("assistant", "订单 E830274615（G7，12 月 12 日 06车12F）现在距开车 50 小时，按开车前 48 小时以上、"
                         "不足 8 天的规则收取 5% 手续费 ¥33.0，实退 ¥629.0。"),
    ]
    return {"title": "上下文分心：三张整天的时刻表压过了眼前的问题",
            "description": "前三轮各查了一整天的余票（每份 72 个车次），到第四轮只问一张票的退票手续费时，"
                           "旧的工具结果已经占了上下文的大半。",
            "model": "deepseek-chat", "messages": messages, "tools": RAIL_TOOLS,
            "facts": ["E830274615", "¥33.0", "¥629.0", "G7"]}


def clash() -> dict:
    """Two reads of the same train disagree, with nothing in between that changed it."""
    messages = [
        say("system", RAIL_PROMPT + "不要给乘客下超出预算的单。"),
        say("user", "帮我买 12 月 12 日北京南到上海虹桥的二等座，上午出发、700 元以内，乘车人王磊。"),
        call("t1", "search_trains", from_station="北京南", to_station="上海虹桥", date="2026-12-12"),
        result("t1", "search_trains", json.dumps({"date": "2026-12-12", "trains": [
            {"train_id": "G7", "depart": "08:00", "arrive": "12:38", "second_class": {"price": 662.0, "seats": "有"}},
            {"train_id": "G11", "depart": "09:00", "arrive": "13:36", "second_class": {"price": 626.0, "seats": "有"}}]},
            ensure_ascii=False)),
        call("t2", "get_train_detail", train_id="G7", date="2026-12-12"),
        result("t2", "get_train_detail", json.dumps({"train_id": "G7", "date": "2026-12-12", "depart": "08:00",
                                                     "second_class": {"price": 662.0, "seats": "候补"}},
                                                    ensure_ascii=False)),
        say("assistant", "G7 次 08:00 从北京南出发，12:38 到上海虹桥，二等座 ¥662.0。要我现在下单吗？"),
        say("user", "好，就订这个。"),
        call("t3", "submit_order", train_id="G7", date="2026-12-12", seat_type="二等座", passenger="王磊"),
        result("t3", "submit_order", json.dumps({"success": False, "error_code": "NO_TICKETS",
                                                 "msg": "G7 二等座已无余票，只能候补"}, ensure_ascii=False)),
        say("assistant", "下单失败：G7 二等座已经没有余票，只能候补。G11（09:00 开，二等座 ¥626.0）还有票，"
                         "要不要改订 G11？"),
    ]
    return {"title": "上下文冲突：同一趟车的两次查询说法不一",
            "description": "余票查询说 G7 二等座有票；紧接着的车次详情说只能候补。智能体按旧的结果让乘客下单，结果失败。",
            "model": "deepseek-chat", "messages": messages, "tools": RAIL_TOOLS[:3],
            "facts": ["G11", "¥626.0", "王磊"]}


LOOKALIKES = [
    fn("get_order_info", "按订单号查询一笔订单的信息：商品明细、数量、单价、实付金额、收货地址和订单状态。",
       order_no="订单编号，形如 TM-7730052914"),
    fn("track_package", "查询包裹的物流轨迹：快递公司、运单号、物流节点和当前状态（运输中、派送中、已签收）。",
       order_no="订单编号"),
]


def _catalog() -> list[dict]:
    """The 40 tools of ``sample_data/tools_zh_support.json`` (OpenAI form) and two look-alikes."""
    doc = json.loads((HERE.parent / "tools_zh_support.json").read_text(encoding="utf-8"))
    return [{"type": "function", "function": t["function"]} for t in doc["tools"]] + LOOKALIKES


def confusion() -> dict:
    """42 tools, two of them look-alikes of get_order and track_shipment; the agent picks a look-alike first."""
    order = {"order_id": "YJ20261108-5230", "status": "已发货", "items": [{"sku_id": "SKU-88120", "name": "空气炸锅 5L",
                                                                        "qty": 1, "price": 399.00}],
             "total": 399.00, "address": "上海市浦东新区**路 88 号", "pay_method": "支付宝"}
    messages = [
        say("system", "你是天猫「悦家电器」旗舰店的客服智能体（通义千问），用工具查询订单、物流和售后。"),
        say("user", "我的订单 YJ20261108-5230 买的空气炸锅发货了吗？什么时候能到？"),
        call("k1", "get_order_info", order_no="YJ20261108-5230"),
        result("k1", "get_order_info", json.dumps({"success": False, "error_code": "INVALID_PARAM",
                                                     "msg": "order_no 格式不符：该接口只接受 TM- 开头的订单编号"},
                                                    ensure_ascii=False)),
        call("k2", "get_order", order_id="YJ20261108-5230"),
        result("k2", "get_order", json.dumps(order, ensure_ascii=False)),
        call("k3", "track_shipment", order_id="YJ20261108-5230"),
        result("k3", "track_shipment", json.dumps({"order_id": "YJ20261108-5230", "carrier": "顺丰速运",
                                                   "tracking_no": "SF1402287765301", "last_node": "上海浦东集散中心",
                                                   "eta": "2026-11-10"}, ensure_ascii=False)),
        say("assistant", "订单 YJ20261108-5230 的空气炸锅已经发货，顺丰运单 SF1402287765301，"
                         "目前在上海浦东集散中心，预计 11 月 10 日送达。"),
    ]
    return {"title": "上下文混乱：42 个工具，三对长得很像",
            "description": "客服智能体拿到 42 个工具；它先调用了 get_order 的相似工具 get_order_info，失败后才换成真正的 "
                           "get_order。",
            "model": "qwen3-235b-a22b", "messages": messages, "tools": _catalog(),
            "facts": ["YJ20261108-5230", "SF1402287765301", "2026-11-10"]}


def lessons() -> dict[str, dict]:
    """Every Chinese lesson by failure mode."""
    return {"poisoning": poisoning(), "distraction": distraction(), "confusion": confusion(), "clash": clash()}


if __name__ == "__main__":
    OUT.mkdir(exist_ok=True)
    for name, doc in lessons().items():
        (OUT / f"{name}.json").write_text(text(doc), encoding="utf-8")
        print(f"wrote zh/{name}.json ({len(doc['messages'])} messages)")
