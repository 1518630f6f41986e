from tallybook import Money, split_by_weights, split_evenly


def test_an_even_bill_splits_exactly():
    assert split_evenly(Money.rupees(90), 3) == [Money.rupees(30)] * 3


def test_weighted_shares_add_up_to_the_bill():
    shares = split_by_weights(Money(1_000), [1, 1, 1])
    assert sum(s.paise for s in shares) == 1_000
