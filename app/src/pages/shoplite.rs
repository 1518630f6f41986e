use crate::erase::IntoAnySync;
use crate::layout::PageTitle;
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;
use shoplite::{quote_form, Coupon, Quote, QuoteError};

/// The demo shop. The total is computed by the `shoplite` crate: in the browser (WebAssembly)
/// as the visitor types, and on the server when the form is submitted without JavaScript.
#[component]
pub fn ShopLite() -> impl IntoView {
    let query = use_query_map();
    let initial = move |key: &str, default: &str| {
        query.with_untracked(|q| q.get(key).unwrap_or_else(|| default.to_owned()))
    };
    let price = RwSignal::new(initial("price", "200"));
    let quantity = RwSignal::new(initial("qty", "1"));
    let coupon = RwSignal::new(initial("coupon", ""));
    let hydrated = super::hydrated_signal();
    let quote = Memo::new(move |_| quote_form(&price.get(), &quantity.get(), &coupon.get()));

    view! {
        <PageTitle text="ShopLite · a demo shop with deliberate bugs"/>
        <section class="panel">
            <h1>"ShopLite"</h1>
            <p class="lede">
                "A tiny shop for trying the desk. Its checkout has bugs left in "
                <strong>"on purpose"</strong>
                ". Nothing here is charged."
            </p>
        </section>
        <div class="shop-grid">
            <section class="panel" aria-labelledby="cart-heading">
                <h2 id="cart-heading">"Your cart: Assam tea set"</h2>
                <form method="get" action="/shoplite" class="cart-form">
                    <div class="field">
                        <label for="price">"Unit price (₹)"</label>
                        <input id="price" name="price" type="text" inputmode="decimal"
                            autocomplete="off"
                            value=move || price.get()
                            on:input=move |ev| price.set(event_target_value(&ev))/>
                    </div>
                    <div class="field">
                        <label for="qty">"Quantity"</label>
                        <input id="qty" name="qty" type="number" min="1" max="99"
                            value=move || quantity.get()
                            on:input=move |ev| quantity.set(event_target_value(&ev))/>
                    </div>
                    <div class="field">
                        <label for="coupon">"Coupon code"</label>
                        <input id="coupon" name="coupon" type="text" autocomplete="off"
                            value=move || coupon.get()
                            on:input=move |ev| coupon.set(event_target_value(&ev))/>
                    </div>
                    <button type="submit" class="button">"Update total"</button>
                </form>
                <p class="hint">
                    "Coupons: "
                    {Coupon::ALL
                        .into_iter()
                        .map(|c| view! { <code>{c.code()}</code>" (" {c.description()} ") " })
                        .collect_view()}
                </p>
            </section>
            <section class="panel" aria-labelledby="total-heading">
                <h2 id="total-heading">"Order total"</h2>
                <div role="status" aria-live="polite">
                    {move || quote.with(totals)}
                </div>
                <p class="computed-by" data-testid="computed-by">
                    {move || if hydrated.get() {
                        "Computed in your browser by ShopLite's Rust code, compiled to WebAssembly."
                    } else {
                        "Computed on the server by ShopLite's Rust code."
                    }}
                </p>
                <p>
                    "Does that total look wrong? "
                    <a class="button" href="/report" data-testid="report-this-bug">"Report this bug"</a>
                </p>
            </section>
        </div>
        <section class="panel deliberate" aria-labelledby="bugs-heading">
            <h2 id="bugs-heading">"Deliberate bugs"</h2>
            <p>"These are left in so the desk has something real to catch:"</p>
            <ol>
                <li>
                    <strong>"Coupon larger than the cart. "</strong>
                    "Coupon " <code>"SAVE300"</code> " on a ₹200 cart asks you to pay −₹100 "
                    "instead of ₹0."
                </li>
                <li>
                    <strong>"Absurd prices. "</strong>
                    "A unit price of " <code>"1e308"</code>
                    " is accepted, and the total overflows to infinity."
                </li>
            </ol>
        </section>
    }
}

fn totals(quote: &Result<Quote, QuoteError>) -> AnyView {
    match quote {
        Ok(quote) => view! {
            <dl class="totals">
                <dt>"Subtotal"</dt>
                <dd data-testid="subtotal">{quote.subtotal.to_string()}</dd>
                <dt>"Discount"</dt>
                <dd data-testid="discount">{quote.discount.to_string()}</dd>
                <dt>"You pay"</dt>
                <dd data-testid="payable" class="payable">{quote.payable.to_string()}</dd>
            </dl>
        }
        .into_any_sync(),
        Err(error) => view! {
            <p class="error" data-testid="quote-error">{format!("Cannot price this cart: {error}.")}</p>
        }
        .into_any_sync(),
    }
}
