from tallybook import Money, format_amount, parse_amount


def test_whole_and_fractional_amounts_parse():
    assert parse_amount("250") == Money(25_000)
    assert parse_amount("250.5") == Money(25_050)
    assert parse_amount("₹ 12.05") == Money(1_205)


def test_amounts_format_with_separators_and_sign():
    assert format_amount(Money(125_050)) == "₹1,250.50"
    assert format_amount(Money(-5)) == "−₹0.05"


def test_nonsense_is_refused():
    for text in ["", "abc", "1.2.3", "12.345"]:
        try:
            parse_amount(text)
        except ValueError:
            continue
        raise AssertionError(f"{text!r} was accepted")
