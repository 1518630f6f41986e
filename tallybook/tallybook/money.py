"""Exact amounts of money, in paise (1 rupee = 100 paise)."""

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Money:
    """An exact amount in paise."""

    paise: int

    @classmethod
    def rupees(cls, rupees: int) -> "Money":
        return cls(rupees * 100)

    def __add__(self, other: "Money") -> "Money":
        return Money(self.paise + other.paise)

    def __sub__(self, other: "Money") -> "Money":
        return Money(self.paise - other.paise)

    def __str__(self) -> str:
        return format_amount(self)


def format_amount(amount: Money) -> str:
    """₹1,250.50 style, with a minus sign for debts."""
    sign = "−" if amount.paise < 0 else ""
    whole, paise = divmod(abs(amount.paise), 100)
    return f"{sign}₹{whole:,}.{paise:02d}"


def parse_amount(text: str) -> Money:
    """Reads what a person typed into the amount box: "250", "250.5", "₹ 1,250"."""
    cleaned = text.strip().replace("₹", "").replace(" ", "")
    if not cleaned:
        raise ValueError("no amount given")
    # People type "12,50" as often as "12.50".
    cleaned = cleaned.replace(",", ".")
    if cleaned.count(".") > 1:
        raise ValueError(f"not an amount: {text!r}")
    whole, _, fraction = cleaned.partition(".")
    if not whole.isdigit() or (fraction and not fraction.isdigit()) or len(fraction) > 2:
        raise ValueError(f"not an amount: {text!r}")
    return Money(int(whole) * 100 + int(fraction.ljust(2, "0") or 0))
