//! The audit trail's hash chain. Each bug's events form a chain: an event's hash is the
//! SHA-256 of its predecessor's hash and a canonical encoding of the event, so an edited,
//! deleted or reordered event breaks every hash after it.

use crate::workflow::EventDraft;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The predecessor hash of a bug's first event.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// An event as the ledger stores it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainedEvent {
    /// The bug whose chain it belongs to.
    pub bug_id: String,
    /// Position in that chain, from 1.
    pub seq: u64,
    /// The event.
    pub event: EventDraft,
    /// Hash of the previous event ([`GENESIS_HASH`] for the first).
    pub prev_hash: String,
    /// Hash of this event.
    pub hash: String,
}

/// The fixed field order that is hashed (struct order is serialisation order).
#[derive(Serialize)]
struct Canonical<'a> {
    bug_id: &'a str,
    seq: u64,
    prev_hash: &'a str,
    kind: &'a str,
    actor_kind: &'a str,
    actor_id: &'a str,
    at: i64,
    evidence: &'a [String],
    detail: &'a std::collections::BTreeMap<String, String>,
}

/// The canonical bytes of an event at a position in a chain.
pub fn canonical_bytes(bug_id: &str, seq: u64, prev_hash: &str, event: &EventDraft) -> Vec<u8> {
    let canonical = Canonical {
        bug_id,
        seq,
        prev_hash,
        kind: &event.kind,
        actor_kind: &event.actor_kind,
        actor_id: &event.actor_id,
        at: event.at,
        evidence: &event.evidence,
        detail: &event.detail,
    };
    // Serialising plain strings, integers and a BTreeMap cannot fail.
    serde_json::to_vec(&canonical).unwrap_or_default()
}

/// The hash of an event given its predecessor's hash.
pub fn event_hash(bug_id: &str, seq: u64, prev_hash: &str, event: &EventDraft) -> String {
    let mut hasher = Sha256::new();
    hasher.update(prev_hash.as_bytes());
    hasher.update(canonical_bytes(bug_id, seq, prev_hash, event));
    hex::encode(hasher.finalize())
}

/// Chains new events after `(last_seq, last_hash)`.
pub fn chain(
    bug_id: &str,
    last_seq: u64,
    last_hash: &str,
    events: &[EventDraft],
) -> Vec<ChainedEvent> {
    let mut prev = last_hash.to_owned();
    events
        .iter()
        .enumerate()
        .map(|(index, event)| {
            let seq = last_seq + 1 + index as u64;
            let hash = event_hash(bug_id, seq, &prev, event);
            let chained = ChainedEvent {
                bug_id: bug_id.to_owned(),
                seq,
                event: event.clone(),
                prev_hash: prev.clone(),
                hash: hash.clone(),
            };
            prev = hash;
            chained
        })
        .collect()
}

/// Where and why a chain breaks.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("bug {bug_id}: event {seq} is broken: {reason}")]
pub struct ChainBreak {
    /// The bug.
    pub bug_id: String,
    /// The first broken position.
    pub seq: u64,
    /// What is wrong.
    pub reason: String,
}

/// Recomputes one bug's chain (events in stored order) and checks it ends at `head_hash` with
/// `count` events, as recorded on the bug itself, so that dropping the newest events shows.
pub fn verify(
    bug_id: &str,
    events: &[ChainedEvent],
    head_hash: &str,
    count: u64,
) -> Result<(), ChainBreak> {
    let broken = |seq: u64, reason: String| ChainBreak {
        bug_id: bug_id.to_owned(),
        seq,
        reason,
    };
    let mut prev = GENESIS_HASH.to_owned();
    for (index, stored) in events.iter().enumerate() {
        let expected_seq = index as u64 + 1;
        if stored.seq != expected_seq {
            return Err(broken(
                expected_seq,
                format!(
                    "found position {} instead (deleted or reordered)",
                    stored.seq
                ),
            ));
        }
        if stored.prev_hash != prev {
            return Err(broken(
                expected_seq,
                "does not follow its predecessor".to_owned(),
            ));
        }
        let hash = event_hash(bug_id, stored.seq, &stored.prev_hash, &stored.event);
        if hash != stored.hash {
            return Err(broken(
                expected_seq,
                "its content does not match its hash (edited)".to_owned(),
            ));
        }
        prev = hash;
    }
    let found = events.len() as u64;
    if found != count {
        return Err(broken(
            found.min(count) + 1,
            format!("the bug records {count} events but {found} exist"),
        ));
    }
    if prev != head_hash && count > 0 {
        return Err(broken(
            count,
            "the chain does not end at the bug's recorded head".to_owned(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn event(kind: &str, at: i64) -> EventDraft {
        EventDraft {
            kind: kind.to_owned(),
            actor_kind: "desk".to_owned(),
            actor_id: String::new(),
            at,
            evidence: vec!["e1".to_owned()],
            detail: BTreeMap::from([("state".to_owned(), "new".to_owned())]),
        }
    }

    fn sample() -> Vec<ChainedEvent> {
        chain(
            "bug-1",
            0,
            GENESIS_HASH,
            &[event("a", 1), event("b", 2), event("c", 3)],
        )
    }

    #[test]
    fn an_intact_chain_verifies() {
        let events = sample();
        assert_eq!(events[0].prev_hash, GENESIS_HASH);
        assert_eq!(events[1].prev_hash, events[0].hash);
        assert_eq!(verify("bug-1", &events, &events[2].hash, 3), Ok(()));
    }

    #[test]
    fn an_edited_event_is_named() {
        let mut events = sample();
        events[1].event.actor_id = "mallory".to_owned();
        let head = events[2].hash.clone();
        let error = verify("bug-1", &events, &head, 3).unwrap_err();
        assert_eq!(error.seq, 2);
        assert!(error.reason.contains("edited"));
    }

    #[test]
    fn a_deleted_event_is_named() {
        let mut events = sample();
        let head = events[2].hash.clone();
        events.remove(1);
        assert_eq!(verify("bug-1", &events, &head, 3).unwrap_err().seq, 2);
    }

    #[test]
    fn reordered_events_are_named() {
        let mut events = sample();
        let head = events[2].hash.clone();
        events.swap(0, 1);
        assert_eq!(verify("bug-1", &events, &head, 3).unwrap_err().seq, 1);
    }

    #[test]
    fn dropping_the_newest_event_is_caught_by_the_recorded_count() {
        let mut events = sample();
        let head = events[2].hash.clone();
        events.pop();
        assert!(verify("bug-1", &events, &head, 3).is_err());
    }

    #[test]
    fn a_recomputed_forgery_still_fails_against_the_recorded_head() {
        // An attacker who edits an event and recomputes every later hash changes the head.
        let mut events = sample();
        let head = events[2].hash.clone();
        let mut forged = vec![events[0].clone()];
        events[1].event.actor_id = "mallory".to_owned();
        forged.extend(chain(
            "bug-1",
            1,
            &events[0].hash,
            &[events[1].event.clone(), events[2].event.clone()],
        ));
        assert!(verify("bug-1", &forged, &head, 3).is_err());
    }
}
