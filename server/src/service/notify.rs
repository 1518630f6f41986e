//! Owners' messages to reporters: checked, stored with their delivery job (the tracking page
//! shows them at once; the concierge emails them when the reporter left an address).

use crate::clock::now_ms;
use crate::error::Kind;
use crate::web::AppState;
use crate::web::Refused;

/// Longest message an owner may send a reporter.
pub const MESSAGE_MAX_CHARS: usize = 4_000;

/// Checks an owner's message to a reporter: 1 to 4,000 characters once trimmed.
pub fn message_text(text: &str) -> Result<String, Refused> {
    // Browsers send a textarea's line breaks as CRLF but count them as one character.
    let text = text.replace("\r\n", "\n").trim().to_owned();
    if text.is_empty() || text.chars().count() > MESSAGE_MAX_CHARS {
        return Err(Refused::new(
            Kind::Invalid,
            "invalid_message",
            format!("text: write 1 to {MESSAGE_MAX_CHARS} characters"),
        ));
    }
    Ok(text)
}

/// Stores an owner's message to `report`'s reporter with its delivery job; the message's
/// sequence number.
pub async fn send_message(
    state: &AppState,
    report: &str,
    author: &str,
    text: &str,
) -> Result<u64, Refused> {
    let text = message_text(text)?;
    state
        .store
        .add_report_message(report, author, &text, now_ms())
        .await?
        .ok_or_else(Refused::not_found)
}
