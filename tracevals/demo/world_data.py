"""The records the order-support world starts every attempt from (de-identified demo data).

Chosen so that the 20 cases have something to find: a customer name shared by two people (Zhang), a
customer with two orders flagged as possible duplicates (Wang Fang), several statuses and dates on
both sides of the month boundary that "last month" refers to (today is 2026-11-02).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

TODAY = date(2026, 11, 2)
CURRENCY = "USD"
STATUSES = ("processing", "shipped", "delivered", "cancelled", "refunded")


@dataclass(frozen=True)
class Customer:
    customer_id: str
    name: str


@dataclass
class Order:
    order_id: str
    customer_id: str
    status: str
    amount: str  # a decimal string, as payment APIs send money, so "129.00" never becomes 129.0
    created: str  # ISO date
    item: str
    possible_duplicate: bool = False

    def to_dict(self) -> dict[str, object]:
        return {
            "order_id": self.order_id,
            "customer_id": self.customer_id,
            "status": self.status,
            "amount": self.amount,
            "currency": CURRENCY,
            "created": self.created,
            "item": self.item,
            "possible_duplicate": self.possible_duplicate,
        }


CUSTOMERS: tuple[Customer, ...] = (
    Customer("cus_001", "Zhang Wei"),
    Customer("cus_002", "Li Na"),
    Customer("cus_003", "Wang Fang"),
    Customer("cus_004", "Chen Jie"),
    Customer("cus_005", "Liu Yang"),
    Customer("cus_006", "Zhang Min"),
)

# (order_id, customer_id, status, amount, created, item, possible_duplicate)
_ORDERS: tuple[tuple[str, str, str, str, str, str, bool], ...] = (
    ("ord_1001", "cus_001", "delivered", "58.50", "2026-09-15", "desk lamp", False),
    ("ord_1002", "cus_001", "cancelled", "19.90", "2026-10-03", "phone case", False),
    ("ord_1003", "cus_001", "shipped", "129.00", "2026-10-28", "office chair", False),
    ("ord_1004", "cus_002", "delivered", "89.90", "2026-10-05", "rice cooker", False),
    ("ord_1005", "cus_002", "delivered", "45.00", "2026-10-21", "running shoes", False),
    ("ord_1006", "cus_002", "delivered", "12.00", "2026-08-30", "notebook set", False),
    ("ord_1007", "cus_003", "processing", "310.00", "2026-10-30", "standing desk", True),
    ("ord_1008", "cus_003", "processing", "310.00", "2026-10-30", "standing desk", True),
    ("ord_1009", "cus_003", "delivered", "74.20", "2026-09-02", "monitor arm", False),
    ("ord_1010", "cus_004", "shipped", "66.00", "2026-10-25", "replacement kettle", False),
    ("ord_1011", "cus_004", "cancelled", "23.00", "2026-09-18", "tea set", False),
    ("ord_1012", "cus_004", "cancelled", "31.50", "2026-10-12", "kettle", False),
    ("ord_1013", "cus_005", "delivered", "150.00", "2026-10-08", "headphones", False),
    ("ord_1014", "cus_005", "delivered", "42.00", "2026-10-19", "phone charger", False),
    ("ord_1015", "cus_005", "processing", "88.00", "2026-11-01", "backpack", False),
    ("ord_1016", "cus_006", "delivered", "27.00", "2026-10-10", "water bottle", False),
)


def initial_orders() -> dict[str, Order]:
    """A fresh copy: orders are mutated (refunds, deletions) during an attempt."""
    return {row[0]: Order(*row) for row in _ORDERS}
