//! What the concierge tells people, and through which channels.
//!
//! An outbox job for the concierge becomes one [`Notice`]: who it is for, a subject and a plain
//! body for the reporter (tracking-page inbox and email), and a one-line text for the owners'
//! chat webhook that names ids only — never a reporter's words, address or link. The desk
//! composes the same notice every time it is asked (the job's kind and payload are all it
//! reads), so a retried delivery carries the same text under the same idempotency key.

use std::collections::BTreeMap;

/// Where a notice can go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Channel {
    /// The reporter's tracking page (always, for a reporter's notice).
    Inbox,
    /// The address the reporter left, when SMTP is configured.
    Email,
    /// The owners' outgoing webhook (Slack-compatible JSON), when configured.
    Webhook,
}

impl Channel {
    /// Every channel, in delivery order.
    pub const ALL: [Channel; 3] = [Channel::Inbox, Channel::Email, Channel::Webhook];

    /// Stored and wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Inbox => "inbox",
            Channel::Email => "email",
            Channel::Webhook => "webhook",
        }
    }

    /// Parses a wire name.
    pub fn parse(name: &str) -> Option<Channel> {
        Channel::ALL.into_iter().find(|c| c.as_str() == name)
    }
}

/// Who a notice is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Audience {
    /// The reporter of this report.
    Reporter(String),
    /// The desk's owners.
    Owners,
}

/// One notice, composed from an outbox job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    /// Who it is for.
    pub audience: Audience,
    /// The bug it is about, if any.
    pub bug: Option<String>,
    /// Subject line (inbox title, email subject).
    pub subject: String,
    /// Plain-text body for the reporter (inbox and email); for owners, the webhook text.
    pub body: String,
    /// The owners' one-line chat text: ids and what happened, nothing a reporter wrote.
    pub webhook_text: String,
}

/// Why a job cannot become a notice.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NoticeError {
    /// A kind the concierge does not deliver.
    #[error("the concierge does not deliver {0:?} jobs")]
    UnknownKind(String),
    /// A parameter the kind needs is absent or empty.
    #[error("{kind} job without {field}")]
    Missing {
        /// The job's kind.
        kind: String,
        /// The absent parameter.
        field: &'static str,
    },
}

const LINK_HINT: &str = "Open the private tracking link you were given when you filed the report \
(this desk cannot send it again: it keeps only a fingerprint of it).";

fn need<'a>(
    kind: &str,
    payload: &'a BTreeMap<String, String>,
    field: &'static str,
) -> Result<&'a str, NoticeError> {
    payload
        .get(field)
        .map(String::as_str)
        .filter(|v| !v.trim().is_empty())
        .ok_or_else(|| NoticeError::Missing {
            kind: kind.to_owned(),
            field,
        })
}

/// Composes the notice of a concierge job.
pub fn compose(kind: &str, payload: &BTreeMap<String, String>) -> Result<Notice, NoticeError> {
    let bug = payload.get("bug").filter(|b| !b.is_empty()).cloned();
    let bug_name = bug.as_deref().unwrap_or("(no bug)");
    match kind {
        "ask_reproduction" => {
            let report = need(kind, payload, "report")?;
            Ok(Notice {
                audience: Audience::Reporter(report.to_owned()),
                subject: format!("Is this the bug you saw? (report {report})"),
                body: format!(
                    "The crew turned your report {report} into a test that fails the way you \
                     described. Please look at it and answer one question: is this the bug you \
                     saw? Nothing is fixed until a reporter says yes.\n\n{LINK_HINT}\n\nThe \
                     question stays open for 23 hours; after that a fresh one is asked."
                ),
                webhook_text: format!(
                    "{bug_name}: reproduction ready; the reporter of {report} was asked to confirm it."
                ),
                bug,
            })
        }
        "ask_fix" => {
            let report = need(kind, payload, "report")?;
            Ok(Notice {
                audience: Audience::Reporter(report.to_owned()),
                subject: format!("A fix is live: does it work for you? (report {report})"),
                body: format!(
                    "A fix for the bug in your report {report} is now live, and the desk checked \
                     that the running release contains it. Please try again and tell us: does it \
                     work for you? If it does not, say why and the bug is reopened.\n\n{LINK_HINT}"
                ),
                webhook_text: format!(
                    "{bug_name}: fix verified live; the reporter of {report} was asked whether it works."
                ),
                bug,
            })
        }
        "owner_message" => {
            let report = need(kind, payload, "report")?;
            let text = need(kind, payload, "text")?;
            Ok(Notice {
                audience: Audience::Reporter(report.to_owned()),
                subject: format!("A message about your report {report}"),
                body: format!(
                    "The people who run this desk wrote to you about report {report}:\n\n{text}\n\n{LINK_HINT}"
                ),
                webhook_text: format!("An owner wrote to the reporter of {report}."),
                bug,
            })
        }
        "notify_owners" => {
            let reason = need(kind, payload, "reason")?;
            let plain = crate::workflow::NeedsHumanReason::parse(reason)
                .map_or_else(|| reason.replace('_', " "), |r| r.plain().to_owned());
            let text = format!("{bug_name} needs a person: {plain}.");
            Ok(Notice {
                audience: Audience::Owners,
                subject: format!("{bug_name} needs a person"),
                body: text.clone(),
                webhook_text: text,
                bug,
            })
        }
        "notify_owners_quarantine" => {
            let report = need(kind, payload, "report")?;
            let text = format!(
                "Report {report} was quarantined by the airlock; its text was not kept. \
                 The queue on the desk shows its metadata."
            );
            Ok(Notice {
                audience: Audience::Owners,
                subject: format!("Report {report} quarantined"),
                body: text.clone(),
                webhook_text: text,
                bug,
            })
        }
        "notify_owners_release_failed" => {
            let commit = need(kind, payload, "commit")?;
            let service = need(kind, payload, "service")?;
            let reason = need(kind, payload, "reason")?;
            let short = commit.get(..12).unwrap_or(commit);
            let text = format!(
                "The release of {service} at {commit} did not go live; the previous release \
                 stays live and the bugs merged in it wait. Why: {reason}"
            );
            Ok(Notice {
                audience: Audience::Owners,
                subject: format!("Release of {service} {short} failed"),
                body: text.clone(),
                webhook_text: format!(
                    "The release of {service} at {short} did not go live (see the desk's crew page)."
                ),
                bug,
            })
        }
        other => Err(NoticeError::UnknownKind(other.to_owned())),
    }
}

/// What the concierge can reach in this run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reach {
    /// SMTP is configured.
    pub smtp: bool,
    /// An outgoing webhook is configured.
    pub webhook: bool,
}

/// The channels a notice still needs, in order: the inbox for every reporter's notice, email
/// when there is an address (the reporter's, or for the owners' notices the owners') and SMTP
/// is configured, the webhook when configured; minus those already delivered (a retried job
/// repeats nothing that went through).
pub fn channels_due(
    notice: &Notice,
    has_address: bool,
    reach: Reach,
    delivered: &[Channel],
) -> Vec<Channel> {
    let for_reporter = matches!(notice.audience, Audience::Reporter(_));
    Channel::ALL
        .into_iter()
        .filter(|channel| match channel {
            Channel::Inbox => for_reporter,
            Channel::Email => has_address && reach.smtp,
            Channel::Webhook => reach.webhook,
        })
        .filter(|channel| !delivered.contains(channel))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn a_reproduction_question_goes_to_its_reporter_and_names_only_ids_to_owners() {
        let notice = compose(
            "ask_reproduction",
            &payload(&[("bug", "B-7"), ("report", "R-3"), ("request_id", "q1")]),
        )
        .unwrap();
        assert_eq!(notice.audience, Audience::Reporter("R-3".into()));
        assert_eq!(notice.bug.as_deref(), Some("B-7"));
        assert!(notice.subject.contains("Is this the bug you saw?"));
        assert!(notice.body.contains("R-3") && notice.body.contains("private tracking link"));
        assert_eq!(
            notice.webhook_text,
            "B-7: reproduction ready; the reporter of R-3 was asked to confirm it."
        );
    }

    #[test]
    fn an_owner_message_reaches_the_reporter_but_not_the_webhook() {
        let notice = compose(
            "owner_message",
            &payload(&[("report", "R-9"), ("text", "Which browser were you using?")]),
        )
        .unwrap();
        assert!(notice.body.contains("Which browser were you using?"));
        assert!(!notice.webhook_text.contains("browser"));
    }

    #[test]
    fn composing_is_deterministic_so_retries_carry_the_same_text() {
        let p = payload(&[("bug", "B-1"), ("report", "R-1")]);
        assert_eq!(compose("ask_fix", &p), compose("ask_fix", &p));
    }

    #[test]
    fn unknown_kinds_and_missing_fields_are_refused() {
        assert_eq!(
            compose("launch_rockets", &payload(&[])),
            Err(NoticeError::UnknownKind("launch_rockets".into()))
        );
        assert_eq!(
            compose("ask_fix", &payload(&[("bug", "B-1"), ("report", " ")])),
            Err(NoticeError::Missing {
                kind: "ask_fix".into(),
                field: "report"
            })
        );
        assert!(compose("owner_message", &payload(&[("report", "R-1")])).is_err());
    }

    #[test]
    fn a_failed_release_tells_the_owners_why_and_keeps_the_log_off_the_webhook() {
        let notice = compose(
            "notify_owners_release_failed",
            &payload(&[
                ("commit", &"c".repeat(40)),
                ("service", "shoplite"),
                ("reason", "the build of cccc failed: error[E0425]"),
            ]),
        )
        .unwrap();
        assert_eq!(notice.audience, Audience::Owners);
        assert_eq!(notice.subject, "Release of shoplite cccccccccccc failed");
        assert!(notice.body.contains("error[E0425]"), "{}", notice.body);
        assert!(notice.body.contains("previous release stays live"));
        assert!(!notice.webhook_text.contains("E0425"));
        assert!(compose("notify_owners_release_failed", &payload(&[("commit", "c")])).is_err());
    }

    #[test]
    fn owners_notices_skip_the_inbox() {
        let notice = compose(
            "notify_owners",
            &payload(&[("bug", "B-2"), ("reason", "fix_attempts_exhausted")]),
        )
        .unwrap();
        assert_eq!(notice.audience, Audience::Owners);
        assert_eq!(
            notice.webhook_text,
            "B-2 needs a person: both of the crew's fix attempts failed the checks."
        );
        let everything = Reach {
            smtp: true,
            webhook: true,
        };
        assert_eq!(
            channels_due(&notice, true, everything, &[]),
            vec![Channel::Email, Channel::Webhook]
        );
        assert_eq!(
            channels_due(&notice, false, everything, &[]),
            vec![Channel::Webhook]
        );
    }

    #[test]
    fn channels_follow_configuration_address_and_what_went_through() {
        let notice = compose("ask_fix", &payload(&[("bug", "B-1"), ("report", "R-1")])).unwrap();
        let none = Reach {
            smtp: false,
            webhook: false,
        };
        let all = Reach {
            smtp: true,
            webhook: true,
        };
        assert_eq!(channels_due(&notice, true, none, &[]), vec![Channel::Inbox]);
        assert_eq!(
            channels_due(&notice, false, all, &[]),
            vec![Channel::Inbox, Channel::Webhook]
        );
        assert_eq!(channels_due(&notice, true, all, &[]), Channel::ALL.to_vec());
        assert_eq!(
            channels_due(&notice, true, all, &[Channel::Inbox, Channel::Email]),
            vec![Channel::Webhook]
        );
        assert!(channels_due(&notice, true, all, &Channel::ALL).is_empty());
    }

    #[test]
    fn channel_names_round_trip() {
        for channel in Channel::ALL {
            assert_eq!(Channel::parse(channel.as_str()), Some(channel));
        }
        assert_eq!(Channel::parse("pigeon"), None);
    }
}
