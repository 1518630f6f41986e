//! What the browser side keeps for itself: times in words, the reports this browser remembers
//! (local storage, never sent to the desk) and the clipboard. The pages' calls to the desk are
//! server functions ([`crate::desk_fns`], [`crate::reporter_fns`]); only the home page's
//! health button reads the public `/api/health`, as any monitor would.

use serde::Serialize;

/// `2026-11-30 08:03 UTC` from milliseconds since the epoch (the same text on the server and
/// in the browser, so hydration matches).
pub fn format_time(ms: i64) -> String {
    let seconds = ms.div_euclid(1000);
    let days = seconds.div_euclid(86_400);
    let of_day = seconds.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        of_day / 3600,
        (of_day % 3600) / 60
    )
}

/// A report filed (or opened) from this browser: kept in its local storage so "Your report"
/// can reopen it; never sent to the desk.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Remembered {
    /// The report's id.
    pub report: String,
    /// Its private link (`/track#…`).
    pub link: String,
    /// When it was remembered (ms).
    pub at: i64,
}

/// Where the remembered reports are kept.
#[cfg(feature = "hydrate")]
const REMEMBERED_KEY: &str = "r2r.reports";

/// Reports remembered in this browser, newest first (none on the server).
pub fn remembered() -> Vec<Remembered> {
    #[cfg(feature = "hydrate")]
    {
        let stored = leptos::prelude::window()
            .local_storage()
            .ok()
            .flatten()
            .and_then(|storage| storage.get_item(REMEMBERED_KEY).ok().flatten());
        stored
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default()
    }
    #[cfg(not(feature = "hydrate"))]
    Vec::new()
}

/// Remembers `report` and its private `link` in this browser (the newest 20 are kept).
pub fn remember(report: &str, link: &str) {
    #[cfg(feature = "hydrate")]
    {
        let mut list = remembered();
        list.retain(|r| r.report != report && r.link != link);
        list.insert(
            0,
            Remembered {
                report: report.to_owned(),
                link: link.to_owned(),
                at: js_sys::Date::now() as i64,
            },
        );
        list.truncate(20);
        if let (Some(storage), Ok(text)) = (
            leptos::prelude::window().local_storage().ok().flatten(),
            serde_json::to_string(&list),
        ) {
            let _ = storage.set_item(REMEMBERED_KEY, &text);
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (report, link);
}

/// Forgets every report remembered in this browser.
pub fn forget_all() {
    #[cfg(feature = "hydrate")]
    if let Some(storage) = leptos::prelude::window().local_storage().ok().flatten() {
        let _ = storage.remove_item(REMEMBERED_KEY);
    }
}

/// Copies `text` to the clipboard; whether it worked.
pub async fn copy(text: String) -> bool {
    #[cfg(feature = "hydrate")]
    {
        let promise = leptos::prelude::window()
            .navigator()
            .clipboard()
            .write_text(&text);
        wasm_bindgen_futures::JsFuture::from(promise).await.is_ok()
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = text;
        false
    }
}

/// `ms` as an HTML `datetime` value (`2026-12-02T02:30Z`).
pub fn machine_time(ms: i64) -> String {
    format_time(ms).replacen(' ', "T", 1).replace(" UTC", "Z")
}

/// How long before `now` the moment `ms` was, in words a person reads at a glance ("just
/// now", "5 minutes ago", "3 hours ago", "yesterday", "12 days ago"); past a month, or in
/// the future (a clock ahead of the server's), the date itself.
pub fn relative_time(ms: i64, now: i64) -> String {
    let ago = now.saturating_sub(ms);
    let plural = |n: i64, unit: &str| {
        if n == 1 {
            format!("1 {unit} ago")
        } else {
            format!("{n} {unit}s ago")
        }
    };
    match ago {
        i64::MIN..=-60_000 => format_time(ms),
        -59_999..=59_999 => "just now".to_owned(),
        60_000..=3_599_999 => plural(ago / 60_000, "minute"),
        3_600_000..=86_399_999 => plural(ago / 3_600_000, "hour"),
        86_400_000..=172_799_999 => "yesterday".to_owned(),
        172_800_000..=2_591_999_999 => plural(ago / 86_400_000, "day"),
        _ => format_time(ms).chars().take(10).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::{format_time, machine_time, relative_time};

    #[test]
    fn relative_times_read_at_a_glance_and_fall_back_to_the_date() {
        let now = 1_764_642_600_000; // 2025-12-02 02:30 UTC
        let cases = [
            (now, "just now"),
            (now - 59_999, "just now"),
            (now - 60_000, "1 minute ago"),
            (now - 5 * 60_000 - 1, "5 minutes ago"),
            (now - 3_600_000, "1 hour ago"),
            (now - 23 * 3_600_000, "23 hours ago"),
            (now - 24 * 3_600_000, "yesterday"),
            (now - 2 * 86_400_000, "2 days ago"),
            (now - 29 * 86_400_000, "29 days ago"),
            (now - 30 * 86_400_000, "2025-11-02"),
            (now + 30_000, "just now"),
            (now + 3_600_000, "2025-12-02 03:30 UTC"),
        ];
        for (at, words) in cases {
            assert_eq!(relative_time(at, now), words, "{}", now - at);
        }
        assert_eq!(machine_time(now), "2025-12-02T02:30Z");
    }

    #[test]
    fn times_format_as_utc_dates() {
        assert_eq!(format_time(0), "1970-01-01 00:00 UTC");
        assert_eq!(format_time(951_782_400_000), "2000-02-29 00:00 UTC");
        assert_eq!(format_time(1_796_025_780_000), "2026-11-30 08:03 UTC");
    }
}
