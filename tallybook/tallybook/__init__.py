"""Tallybook: amounts in paise and splitting a shared bill."""

from tallybook.money import Money, format_amount, parse_amount
from tallybook.split import split_by_weights, split_evenly

__all__ = ["Money", "format_amount", "parse_amount", "split_by_weights", "split_evenly"]
