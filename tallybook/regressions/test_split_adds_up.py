from tallybook import Money, split_evenly


def test_three_way_split_of_100_rupees_adds_up_to_the_bill():
    shares = split_evenly(Money.rupees(100), 3)
    assert sum(s.paise for s in shares) == 10_000, f"shares {[str(s) for s in shares]} do not add up to ₹100.00"
