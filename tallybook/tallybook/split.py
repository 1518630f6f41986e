"""Splitting a bill between the people who shared it."""

from tallybook.money import Money


def split_evenly(total: Money, people: int) -> list:
    """Each person's share of `total`, split between `people` as evenly as paise allow."""
    if people < 1:
        raise ValueError("a bill is split between at least one person")
    share = total.paise // people
    return [Money(share) for _ in range(people)]


def split_by_weights(total: Money, weights: list) -> list:
    """Shares in proportion to `weights` (nights stayed, say); the shares add up to `total`."""
    if not weights or any(w < 0 for w in weights) or sum(weights) == 0:
        raise ValueError("weights must be non-negative and not all zero")
    whole = sum(weights)
    shares = [total.paise * w // whole for w in weights]
    # Hand the paise lost to rounding to the largest weights first.
    left = total.paise - sum(shares)
    order = sorted(range(len(weights)), key=lambda i: -weights[i])
    for i in order[:left]:
        shares[i] += 1
    return [Money(s) for s in shares]
