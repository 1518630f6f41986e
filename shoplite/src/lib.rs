//! ShopLite's pricing: the cart total a visitor sees in the demo shop.
//!
//! The shop ships with two **deliberate** bugs so that visitors can break it and the desk has
//! something real to reproduce and fix:
//!
//! 1. A flat coupon larger than the cart (`SAVE300` on a ₹200 cart) is subtracted in full, so
//!    the payable total goes negative (−₹100) instead of stopping at ₹0.
//! 2. Prices are parsed as floating point with no upper bound, so a price such as `1e308`
//!    overflows the subtotal to infinity.
//!
//! Coupon values and discounts are integer paise ([`Money`]); the cart subtotal is the legacy
//! floating-point [`Rupees`], which is where bug 2 lives. The crate has no dependencies so it
//! builds offline inside the sandbox and in the browser as WebAssembly.

use std::fmt;

/// An exact amount of money in paise (1 rupee = 100 paise).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Money {
    paise: i64,
}

impl Money {
    /// Zero rupees.
    pub const ZERO: Money = Money { paise: 0 };

    /// An amount given in paise.
    pub const fn from_paise(paise: i64) -> Self {
        Money { paise }
    }

    /// An amount given in whole rupees.
    pub const fn from_rupees(rupees: i64) -> Self {
        Money {
            paise: rupees * 100,
        }
    }

    /// The amount in paise.
    pub const fn paise(self) -> i64 {
        self.paise
    }

    /// The amount as floating-point rupees, for arithmetic with the legacy subtotal.
    pub fn as_rupees(self) -> Rupees {
        // i64 -> f64 is exact for every amount below 2^53 paise (about ₹90 trillion).
        Rupees(self.paise as f64 / 100.0)
    }
}

impl fmt::Display for Money {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.paise < 0 { "−" } else { "" };
        let abs = self.paise.unsigned_abs();
        write!(f, "{sign}₹{}.{:02}", abs / 100, abs % 100)
    }
}

impl fmt::Debug for Money {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A floating-point amount in rupees: how ShopLite's cart has always summed prices.
#[derive(Clone, Copy, PartialEq, PartialOrd, Debug, Default)]
pub struct Rupees(pub f64);

impl Rupees {
    /// Whether the amount is an ordinary number (not infinite, not NaN).
    pub fn is_finite(self) -> bool {
        self.0.is_finite()
    }
}

impl fmt::Display for Rupees {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let value = self.0;
        if value.is_nan() {
            return write!(f, "₹NaN");
        }
        let sign = if value < 0.0 { "−" } else { "" };
        if value.is_infinite() {
            return write!(f, "{sign}₹∞");
        }
        write!(f, "{sign}₹{:.2}", value.abs())
    }
}

/// A coupon the shop accepts.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Coupon {
    /// ₹300 off the cart.
    Save300,
    /// 10 % off the cart.
    Welcome10,
}

impl Coupon {
    /// Every coupon, for listing on the page.
    pub const ALL: [Coupon; 2] = [Coupon::Save300, Coupon::Welcome10];

    /// The code a shopper types.
    pub fn code(self) -> &'static str {
        match self {
            Coupon::Save300 => "SAVE300",
            Coupon::Welcome10 => "WELCOME10",
        }
    }

    /// What the coupon promises, in words.
    pub fn description(self) -> &'static str {
        match self {
            Coupon::Save300 => "₹300 off your cart",
            Coupon::Welcome10 => "10% off your cart",
        }
    }

    /// Looks a code up, ignoring case and surrounding spaces. An empty code means no coupon.
    pub fn parse(code: &str) -> Result<Option<Coupon>, QuoteError> {
        let code = code.trim();
        if code.is_empty() {
            return Ok(None);
        }
        Coupon::ALL
            .into_iter()
            .find(|coupon| coupon.code().eq_ignore_ascii_case(code))
            .map(Some)
            .ok_or_else(|| QuoteError::UnknownCoupon(code.to_owned()))
    }

    /// The discount this coupon gives on a cart with the given subtotal.
    fn discount_on(self, subtotal: Rupees) -> Money {
        match self {
            Coupon::Save300 => Money::from_rupees(300),
            // Ten percent, rounded down to the paisa; a non-finite subtotal gives no discount.
            Coupon::Welcome10 if subtotal.is_finite() => {
                Money::from_paise((subtotal.0 * 10.0).floor() as i64)
            }
            Coupon::Welcome10 => Money::ZERO,
        }
    }
}

/// The most of one item a cart may hold.
pub const MAX_QUANTITY: u32 = 99;

/// One line of the cart: a unit price and how many.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct CartLine {
    /// Price of one item.
    pub unit_price: Rupees,
    /// How many items.
    pub quantity: u32,
}

/// Why a cart cannot be priced.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum QuoteError {
    /// The price is not a number.
    InvalidPrice(String),
    /// The price is below zero.
    NegativePrice,
    /// The quantity is not a whole number between 1 and [`MAX_QUANTITY`].
    InvalidQuantity(String),
    /// The coupon code is not one the shop knows.
    UnknownCoupon(String),
}

impl fmt::Display for QuoteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QuoteError::InvalidPrice(text) => write!(f, "“{text}” is not a price"),
            QuoteError::NegativePrice => write!(f, "a price cannot be negative"),
            QuoteError::InvalidQuantity(text) => {
                write!(
                    f,
                    "quantity must be a whole number from 1 to {MAX_QUANTITY}, not “{text}”"
                )
            }
            QuoteError::UnknownCoupon(code) => write!(f, "“{code}” is not a coupon we know"),
        }
    }
}

impl std::error::Error for QuoteError {}

/// Reads a price typed by the seller, in rupees.
///
/// Seeded bug 2: this accepts any floating-point number, including `1e308`.
pub fn parse_price(text: &str) -> Result<Rupees, QuoteError> {
    let trimmed = text.trim().trim_start_matches('₹').trim();
    let value: f64 = trimmed
        .parse()
        .map_err(|_| QuoteError::InvalidPrice(text.trim().to_owned()))?;
    if value.is_nan() {
        return Err(QuoteError::InvalidPrice(text.trim().to_owned()));
    }
    if value < 0.0 {
        return Err(QuoteError::NegativePrice);
    }
    Ok(Rupees(value))
}

/// Reads a quantity typed by the shopper.
pub fn parse_quantity(text: &str) -> Result<u32, QuoteError> {
    let trimmed = text.trim();
    match trimmed.parse::<u32>() {
        Ok(quantity) if (1..=MAX_QUANTITY).contains(&quantity) => Ok(quantity),
        _ => Err(QuoteError::InvalidQuantity(trimmed.to_owned())),
    }
}

/// What the shopper is asked to pay.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct Quote {
    /// Sum of every line.
    pub subtotal: Rupees,
    /// The coupon that was applied, if any.
    pub coupon: Option<Coupon>,
    /// The coupon's discount.
    pub discount: Money,
    /// Subtotal less discount.
    pub payable: Rupees,
}

/// Prices a cart with an optional coupon.
pub fn quote(lines: &[CartLine], coupon: Option<Coupon>) -> Quote {
    let subtotal = Rupees(
        lines
            .iter()
            .map(|line| line.unit_price.0 * f64::from(line.quantity))
            .sum(),
    );
    let discount = coupon.map_or(Money::ZERO, |coupon| coupon.discount_on(subtotal));
    // Seeded bug 1: the discount is not limited to the subtotal.
    let payable = Rupees(subtotal.0 - discount.as_rupees().0);
    Quote {
        subtotal,
        coupon,
        discount,
        payable,
    }
}

/// Prices a one-line cart from the text of the shop's form.
pub fn quote_form(price: &str, quantity: &str, coupon: &str) -> Result<Quote, QuoteError> {
    let line = CartLine {
        unit_price: parse_price(price)?,
        quantity: parse_quantity(quantity)?,
    };
    Ok(quote(&[line], Coupon::parse(coupon)?))
}

/// The seeded bugs' known fixes, as text edits of this file — used by the demo's scripted
/// crew and by `r2r demo reproduce --fixed`. Nothing in the shop itself uses them.
pub mod seeded {
    /// What a test of bug 1 shows, in a shopper's words (the scripted reproducer's summary).
    pub const BUG1_SUMMARY: &str = "With coupon SAVE300 on a ₹200 cart the shop asks you to pay −₹100; you expected to pay ₹0.";

    /// The line marking seeded bug 1 in `src/lib.rs`.
    pub const BUG1_MARKER: &str =
        "    // Seeded bug 1: the discount is not limited to the subtotal.\n";
    /// What replaces it: the discount is capped at the subtotal.
    pub const BUG1_FIX: &str =
        "    // A coupon takes at most the whole subtotal: the total never goes below zero.\n    \
let discount = if subtotal.is_finite() {\n        \
discount.min(Money::from_paise((subtotal.0 * 100.0).round() as i64))\n    \
} else {\n        discount\n    };\n";

    /// The unit test pinning bug 1 in the shipped shop (a fix must change it too: after the
    /// fix the whole suite has to pass).
    pub const BUG1_PIN: &str =
        "    /// The demo depends on this bug being present in the shipped shop.
    #[test]
    fn seeded_bug_1_save300_on_a_200_rupee_cart_asks_for_minus_100() {
        let quote = quote_form(\"200\", \"1\", \"SAVE300\").unwrap();
        assert_eq!(quote.payable, Rupees(-100.0));
        assert_eq!(quote.payable.to_string(), \"−₹100.00\");
    }
";
    /// What the pin becomes with the fix.
    pub const BUG1_PIN_FIXED: &str = "    #[test]
    fn save300_on_a_200_rupee_cart_costs_nothing() {
        let quote = quote_form(\"200\", \"1\", \"SAVE300\").unwrap();
        assert_eq!(quote.payable, Rupees(0.0));
    }
";

    /// `src/lib.rs` with bug 1 fixed (and its pinning unit test turned around), when the
    /// marker and the pin are there exactly once.
    pub fn fix_bug1(lib_rs: &str) -> Option<String> {
        (lib_rs.matches(BUG1_MARKER).count() == 1 && lib_rs.matches(BUG1_PIN).count() == 1).then(
            || {
                lib_rs
                    .replacen(BUG1_MARKER, BUG1_FIX, 1)
                    .replacen(BUG1_PIN, BUG1_PIN_FIXED, 1)
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cart(price: f64, quantity: u32) -> Vec<CartLine> {
        vec![CartLine {
            unit_price: Rupees(price),
            quantity,
        }]
    }

    #[test]
    fn money_displays_rupees_and_paise_with_a_real_minus_sign() {
        assert_eq!(Money::from_rupees(200).to_string(), "₹200.00");
        assert_eq!(Money::from_paise(1_999).to_string(), "₹19.99");
        assert_eq!(Money::from_paise(-10_000).to_string(), "−₹100.00");
        assert_eq!(Money::from_paise(5).to_string(), "₹0.05");
    }

    #[test]
    fn rupees_display_names_infinity_and_nan_instead_of_pretending() {
        assert_eq!(Rupees(200.0).to_string(), "₹200.00");
        assert_eq!(Rupees(-100.0).to_string(), "−₹100.00");
        assert_eq!(Rupees(f64::INFINITY).to_string(), "₹∞");
        assert_eq!(Rupees(f64::NAN).to_string(), "₹NaN");
    }

    #[test]
    fn a_cart_without_a_coupon_costs_its_subtotal() {
        let quote = quote(&cart(149.5, 2), None);
        assert_eq!(quote.subtotal, Rupees(299.0));
        assert_eq!(quote.discount, Money::ZERO);
        assert_eq!(quote.payable, Rupees(299.0));
    }

    #[test]
    fn welcome10_takes_ten_percent_rounded_down_to_the_paisa() {
        let quote = quote(&cart(333.33, 1), Some(Coupon::Welcome10));
        assert_eq!(quote.discount, Money::from_paise(3_333));
        assert!((quote.payable.0 - 300.0).abs() < 1e-9);
    }

    #[test]
    fn save300_on_a_large_cart_takes_three_hundred_rupees() {
        let quote = quote(&cart(500.0, 1), Some(Coupon::Save300));
        assert_eq!(quote.discount, Money::from_rupees(300));
        assert_eq!(quote.payable, Rupees(200.0));
    }

    /// The demo depends on this bug being present in the shipped shop.
    #[test]
    fn seeded_bug_1_save300_on_a_200_rupee_cart_asks_for_minus_100() {
        let quote = quote_form("200", "1", "SAVE300").unwrap();
        assert_eq!(quote.payable, Rupees(-100.0));
        assert_eq!(quote.payable.to_string(), "−₹100.00");
    }

    /// The demo depends on this bug being present in the shipped shop.
    #[test]
    fn seeded_bug_2_a_price_of_1e308_gives_an_infinite_total() {
        let quote = quote_form("1e308", "2", "").unwrap();
        assert!(quote.subtotal.0.is_infinite());
        assert_eq!(quote.payable.to_string(), "₹∞");
    }

    #[test]
    fn coupons_are_found_ignoring_case_and_spaces() {
        assert_eq!(Coupon::parse(" save300 "), Ok(Some(Coupon::Save300)));
        assert_eq!(Coupon::parse(""), Ok(None));
        assert_eq!(
            Coupon::parse("FREE"),
            Err(QuoteError::UnknownCoupon("FREE".into()))
        );
    }

    #[test]
    fn bad_form_input_is_refused_with_a_reason() {
        assert_eq!(
            quote_form("two hundred", "1", ""),
            Err(QuoteError::InvalidPrice("two hundred".into()))
        );
        assert_eq!(quote_form("-5", "1", ""), Err(QuoteError::NegativePrice));
        assert_eq!(
            quote_form("NaN", "1", ""),
            Err(QuoteError::InvalidPrice("NaN".into()))
        );
        assert_eq!(
            quote_form("10", "0", ""),
            Err(QuoteError::InvalidQuantity("0".into()))
        );
        assert_eq!(
            quote_form("10", "100", ""),
            Err(QuoteError::InvalidQuantity("100".into()))
        );
        assert!(quote_form("₹ 10", "3", "").is_ok());
    }
}
