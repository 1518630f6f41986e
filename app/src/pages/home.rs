use crate::dto::Health;
use crate::layout::PageTitle;
use leptos::prelude::*;

/// What the desk is, and where to go.
#[component]
pub fn Home() -> impl IntoView {
    view! {
        <PageTitle text="Reporter-to-Release · a bug desk that closes the loop"/>
        <section class="hero">
            <h1>"From a stranger's bug report to a release they confirm"</h1>
            <p class="lede">
                "Reporter-to-Release is a self-hosted bug desk. Anyone can file a report. "
                "Before any AI reads it, an airlock removes personal data and holds back text that "
                "tries to give orders. An AI crew must then prove the bug with a test that really "
                "fails in a sandbox without network, and the person who reported it confirms "
                "that the test shows their bug. Only then may the crew draft a small fix, which "
                "people review and merge. The desk checks that the exact commit is live, and the "
                "reporter says whether it is fixed."
            </p>
            <p class="actions">
                <a class="button" href="/report" data-testid="cta-report">"Report a bug"</a>
                <a class="button secondary" href="/shoplite" data-testid="cta-shoplite">"Break the demo shop"</a>
            </p>
        </section>
        <section class="panel" aria-labelledby="loop-heading">
            <h2 id="loop-heading">"The loop"</h2>
            <ol class="loop">
                <li><strong>"Report"</strong>" — a private tracking link, no account needed."</li>
                <li><strong>"Airlock"</strong>" — redaction and quarantine before any model reads a word."</li>
                <li><strong>"Reproduce"</strong>" — a failing test in a networkless sandbox."</li>
                <li><strong>"Reporter confirms"</strong>" — “is this the bug you saw?”"</li>
                <li><strong>"Bounded fix"</strong>" — two attempts, allowed files only, every check green."</li>
                <li><strong>"People approve and merge"</strong>" — the exact commit, by humans."</li>
                <li><strong>"Release verified"</strong>" — that commit is proven live."</li>
                <li><strong>"Reporter has the last word"</strong>" — fixed, or reopened."</li>
            </ol>
        </section>
        <section class="panel" aria-labelledby="try-heading">
            <h2 id="try-heading">"Try it"</h2>
            <p>
                <a href="/shoplite">"ShopLite"</a>
                " is a small demo shop with bugs left in on purpose. Break it, then follow a bug "
                "through the desk."
            </p>
        </section>
        <HealthCheck/>
    }
}

/// Asks `/api/health` from the browser. Works only once the page is hydrated; without
/// JavaScript the plain link beside it does the same job.
#[component]
fn HealthCheck() -> impl IntoView {
    let hydrated = super::hydrated_signal();
    let (answer, set_answer) = signal(None::<Result<Health, String>>);
    let check = move |_| {
        set_answer.set(None);
        #[cfg(feature = "hydrate")]
        leptos::task::spawn_local(async move {
            set_answer.set(Some(fetch_health().await));
        });
    };
    view! {
        <section class="panel" aria-labelledby="health-heading">
            <h2 id="health-heading">"Desk status"</h2>
            <p>
                <button type="button" class="button" on:click=check disabled=move || !hydrated.get()>
                    "Check desk health"
                </button>
                " or open "
                <a href="/api/health">"/api/health"</a>
                "."
            </p>
            <p role="status" aria-live="polite" data-testid="health-result">
                {move || match answer.get() {
                    None => String::new(),
                    Some(Ok(health)) => format!(
                        "{} {} · storage {} · commit {} · {}",
                        health.service,
                        health.version,
                        health.storage,
                        health.commit.chars().take(12).collect::<String>(),
                        health.status,
                    ),
                    Some(Err(error)) => format!("Health check failed: {error}"),
                }}
            </p>
        </section>
    }
}

#[cfg(feature = "hydrate")]
async fn fetch_health() -> Result<Health, String> {
    let response = gloo_net::http::Request::get("/api/health")
        .send()
        .await
        .map_err(|error| error.to_string())?;
    response
        .json::<Health>()
        .await
        .map_err(|error| error.to_string())
}
