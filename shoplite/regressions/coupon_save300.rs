//! Regression test for ShopLite's seeded bug 1, kept outside `tests/` so the shipped (buggy)
//! shop still passes its own suite. `r2r demo reproduce` copies it into a scratch crate.

use shoplite::{quote_form, Rupees};

#[test]
fn save300_on_a_200_rupee_cart_is_free_not_negative() {
    let quote = quote_form("200", "1", "SAVE300").expect("the form input is valid");
    assert_eq!(
        quote.payable,
        Rupees(0.0),
        "payable total for coupon SAVE300 on a ₹200 cart"
    );
}
