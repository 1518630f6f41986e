//! The spend guard's rule, pure: a model call may start only if its worst-case cost fits the
//! per-call cap and what is left of the budget, and the hourly call limits (overall and per
//! client) are not reached. Amounts are micro-dollars. Open reservations count at their
//! worst case, so parallel calls can never overshoot; a call that timed out or lost its
//! connection stays booked at its worst case.

use serde::{Deserialize, Serialize};

/// Micro-dollars (1 $ = 1,000,000).
pub type Micros = u64;

/// The configured limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    /// Most one call may cost.
    pub per_call: Micros,
    /// Most all calls together may cost.
    pub total: Micros,
    /// Most the calls about one bug may cost together (every round, every role).
    #[serde(default = "default_per_bug")]
    pub per_bug: Micros,
    /// Calls per rolling hour, all clients.
    pub calls_per_hour: u32,
    /// Calls per rolling hour, one client.
    pub client_calls_per_hour: u32,
    /// The share (percent, 1 to 100) of the total and of the hourly calls that calls about
    /// unconfirmed bugs (no reporter confirmed, no owner promoted) may take together; the rest
    /// is kept for confirmed and promoted bugs, which strangers' reports can never starve.
    #[serde(default = "default_unconfirmed_percent")]
    pub unconfirmed_percent: u8,
}

/// The default share of the budget open to unconfirmed bugs: half.
pub const DEFAULT_UNCONFIRMED_PERCENT: u8 = 50;

fn default_unconfirmed_percent() -> u8 {
    DEFAULT_UNCONFIRMED_PERCENT
}

impl Budget {
    /// The most calls about unconfirmed bugs may commit together.
    pub fn unconfirmed_total(&self) -> Micros {
        let percent = u64::from(self.unconfirmed_percent.clamp(1, 100));
        self.total / 100 * percent + self.total % 100 * percent / 100
    }

    /// Calls about unconfirmed bugs per rolling hour (at least one).
    pub fn unconfirmed_calls_per_hour(&self) -> u32 {
        let percent = u64::from(self.unconfirmed_percent.clamp(1, 100));
        u32::try_from(u64::from(self.calls_per_hour) * percent / 100)
            .unwrap_or(u32::MAX)
            .max(1)
    }
}

/// The default per-bug budget: $0.50, room for a whole loop's calls at the per-call cap
/// (triage, three reproduction attempts and their review, two fix attempts and a review: 8 ×
/// $0.03) twice over.
pub const DEFAULT_PER_BUG: Micros = 500_000;

fn default_per_bug() -> Micros {
    DEFAULT_PER_BUG
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            per_call: 30_000,
            total: 5_000_000,
            per_bug: DEFAULT_PER_BUG,
            calls_per_hour: 60,
            client_calls_per_hour: 10,
            unconfirmed_percent: DEFAULT_UNCONFIRMED_PERCENT,
        }
    }
}

/// What has been spent and reserved, as the store counts it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Settled costs plus open reservations at their worst case.
    pub committed: Micros,
    /// The same, of the calls about the bug this call is about.
    pub bug_committed: Micros,
    /// Calls started in the last hour.
    pub calls_last_hour: u32,
    /// Calls this client started in the last hour.
    pub client_calls_last_hour: u32,
    /// Set when the call is about an unconfirmed bug: what the calls about unconfirmed bugs
    /// committed together, and how many started in the last hour.
    pub unconfirmed: Option<UnconfirmedUsage>,
}

/// What the calls about unconfirmed bugs took of the budget.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnconfirmedUsage {
    /// Settled costs plus open reservations at their worst case.
    pub committed: Micros,
    /// Calls started in the last hour.
    pub calls_last_hour: u32,
}

/// Why a call may not start.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum SpendRefusal {
    /// The worst case exceeds the per-call cap.
    #[error("a call may cost at most {limit} µ$; this one could cost {asked} µ$")]
    OverPerCall {
        /// Worst case asked.
        asked: Micros,
        /// The cap.
        limit: Micros,
    },
    /// The budget would be exceeded.
    #[error("the budget of {total} µ$ has {left} µ$ left; this call could cost {asked} µ$")]
    OverBudget {
        /// Worst case asked.
        asked: Micros,
        /// What is left.
        left: Micros,
        /// The budget.
        total: Micros,
    },
    /// The bug's own budget would be exceeded.
    #[error("this bug's budget of {limit} µ$ has {left} µ$ left; this call could cost {asked} µ$")]
    OverBugBudget {
        /// Worst case asked.
        asked: Micros,
        /// What is left of the bug's budget.
        left: Micros,
        /// The per-bug budget.
        limit: Micros,
    },
    /// The overall hourly limit is reached.
    #[error("{limit} calls per hour already started")]
    HourlyLimit {
        /// The limit.
        limit: u32,
    },
    /// The share of the budget open to unconfirmed bugs is used up (the rest is kept for
    /// confirmed and promoted bugs).
    #[error("unconfirmed bugs may take {share} µ$ of the budget together and {left} µ$ of it is left; this call could cost {asked} µ$ (a reporter's confirmation or an owner's promotion lifts this)")]
    OverUnconfirmedShare {
        /// Worst case asked.
        asked: Micros,
        /// What is left of the share.
        left: Micros,
        /// The share.
        share: Micros,
    },
    /// The hourly calls open to unconfirmed bugs are used up.
    #[error("{limit} calls about unconfirmed bugs per hour already started (a reporter's confirmation or an owner's promotion lifts this)")]
    UnconfirmedHourlyLimit {
        /// The limit.
        limit: u32,
    },
    /// This client's hourly limit is reached.
    #[error("this client already started {limit} calls this hour")]
    ClientHourlyLimit {
        /// The limit.
        limit: u32,
    },
}

/// Whether a call with this worst case may start now.
pub fn admit(budget: &Budget, usage: &Usage, worst_case: Micros) -> Result<(), SpendRefusal> {
    if worst_case > budget.per_call {
        return Err(SpendRefusal::OverPerCall {
            asked: worst_case,
            limit: budget.per_call,
        });
    }
    let left = budget.total.saturating_sub(usage.committed);
    if worst_case > left {
        return Err(SpendRefusal::OverBudget {
            asked: worst_case,
            left,
            total: budget.total,
        });
    }
    let bug_left = budget.per_bug.saturating_sub(usage.bug_committed);
    if worst_case > bug_left {
        return Err(SpendRefusal::OverBugBudget {
            asked: worst_case,
            left: bug_left,
            limit: budget.per_bug,
        });
    }
    if usage.calls_last_hour >= budget.calls_per_hour {
        return Err(SpendRefusal::HourlyLimit {
            limit: budget.calls_per_hour,
        });
    }
    if usage.client_calls_last_hour >= budget.client_calls_per_hour {
        return Err(SpendRefusal::ClientHourlyLimit {
            limit: budget.client_calls_per_hour,
        });
    }
    if let Some(unconfirmed) = usage.unconfirmed {
        let share = budget.unconfirmed_total();
        let left = share.saturating_sub(unconfirmed.committed);
        if worst_case > left {
            return Err(SpendRefusal::OverUnconfirmedShare {
                asked: worst_case,
                left,
                share,
            });
        }
        let limit = budget.unconfirmed_calls_per_hour();
        if unconfirmed.calls_last_hour >= limit {
            return Err(SpendRefusal::UnconfirmedHourlyLimit { limit });
        }
    }
    Ok(())
}

/// When the crew may start on a new bug filed by a stranger (a client address and component
/// whose bugs nobody confirmed yet), so that at most `limit` such starts fall in any `window`:
/// `starts` are that address's and component's starts not older than the window (past ones
/// and those already put off), oldest first. Now, while fewer than `limit` are in the window;
/// otherwise a window after the start `limit` places back. The bug is kept either way: only
/// its crew work waits.
pub fn stranger_start(starts: &[i64], limit: u32, window: i64, now: i64) -> i64 {
    let limit = usize::try_from(limit.max(1)).unwrap_or(usize::MAX);
    match starts.len().checked_sub(limit) {
        None => now,
        Some(index) => now.max(starts[index].saturating_add(window)),
    }
}

/// What a finished call is booked at: its reported cost (never above its reservation) when
/// it answered; its worst case when it timed out or lost its connection, because the
/// provider may have charged for work we never saw.
pub fn booked(reserved: Micros, reported: Option<Micros>, answered: bool) -> Micros {
    match (answered, reported) {
        (true, Some(cost)) => cost.min(reserved),
        _ => reserved,
    }
}

/// Parses a dollar amount such as `0.03` or `5` into micro-dollars.
pub fn parse_dollars(text: &str) -> Option<Micros> {
    let text = text.trim().trim_start_matches('$');
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty() && fraction.is_empty()
        || fraction.len() > 6
        || !whole.chars().all(|c| c.is_ascii_digit())
        || !fraction.chars().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let fraction: u64 = format!("{fraction:0<6}").parse().ok()?;
    whole.checked_mul(1_000_000)?.checked_add(fraction)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_limit_refuses_by_name() {
        let budget = Budget::default();
        let fresh = Usage::default();
        assert_eq!(admit(&budget, &fresh, 30_000), Ok(()));
        assert!(matches!(
            admit(&budget, &fresh, 30_001),
            Err(SpendRefusal::OverPerCall { .. })
        ));
        let nearly_spent = Usage {
            committed: 4_980_000,
            ..fresh
        };
        assert_eq!(
            admit(&budget, &nearly_spent, 30_000),
            Err(SpendRefusal::OverBudget {
                asked: 30_000,
                left: 20_000,
                total: 5_000_000
            })
        );
        assert_eq!(admit(&budget, &nearly_spent, 20_000), Ok(()));
        let costly_bug = Usage {
            bug_committed: 490_000,
            ..fresh
        };
        assert_eq!(
            admit(&budget, &costly_bug, 10_001),
            Err(SpendRefusal::OverBugBudget {
                asked: 10_001,
                left: 10_000,
                limit: 500_000
            })
        );
        assert_eq!(admit(&budget, &costly_bug, 10_000), Ok(()));
        let busy = Usage {
            calls_last_hour: 60,
            ..fresh
        };
        assert!(matches!(
            admit(&budget, &busy, 1),
            Err(SpendRefusal::HourlyLimit { limit: 60 })
        ));
        let chatty = Usage {
            client_calls_last_hour: 10,
            ..fresh
        };
        assert!(matches!(
            admit(&budget, &chatty, 1),
            Err(SpendRefusal::ClientHourlyLimit { limit: 10 })
        ));
    }

    #[test]
    fn unconfirmed_bugs_take_their_share_and_confirmed_ones_keep_the_rest() {
        let budget = Budget::default();
        assert_eq!(budget.unconfirmed_total(), 2_500_000);
        assert_eq!(budget.unconfirmed_calls_per_hour(), 30);
        let strangers_spent = Usage {
            committed: 2_490_000,
            unconfirmed: Some(UnconfirmedUsage {
                committed: 2_490_000,
                calls_last_hour: 29,
            }),
            ..Usage::default()
        };
        assert_eq!(
            admit(&budget, &strangers_spent, 10_001),
            Err(SpendRefusal::OverUnconfirmedShare {
                asked: 10_001,
                left: 10_000,
                share: 2_500_000
            })
        );
        assert_eq!(admit(&budget, &strangers_spent, 10_000), Ok(()));
        // The same usage, for a call about a confirmed bug: the rest of the total is open.
        let confirmed = Usage {
            unconfirmed: None,
            ..strangers_spent
        };
        assert_eq!(admit(&budget, &confirmed, 30_000), Ok(()));
        let hourly = Usage {
            unconfirmed: Some(UnconfirmedUsage {
                committed: 0,
                calls_last_hour: 30,
            }),
            calls_last_hour: 30,
            ..Usage::default()
        };
        assert_eq!(
            admit(&budget, &hourly, 1),
            Err(SpendRefusal::UnconfirmedHourlyLimit { limit: 30 })
        );
        assert_eq!(
            admit(
                &budget,
                &Usage {
                    unconfirmed: None,
                    ..hourly
                },
                1
            ),
            Ok(())
        );
        // Odd totals and small hourly limits round down, never to nothing.
        let small = Budget {
            total: 199,
            calls_per_hour: 1,
            unconfirmed_percent: 33,
            ..budget
        };
        assert_eq!(small.unconfirmed_total(), 65);
        assert_eq!(small.unconfirmed_calls_per_hour(), 1);
        let all = Budget {
            unconfirmed_percent: 100,
            ..budget
        };
        assert_eq!(all.unconfirmed_total(), budget.total);
    }

    #[test]
    fn a_strangers_new_bugs_start_at_most_limit_an_hour_in_turn() {
        const HOUR: i64 = 3_600_000;
        let now = 10 * HOUR;
        let mut starts: Vec<i64> = Vec::new();
        for _ in 0..7 {
            let at = stranger_start(&starts, 2, HOUR, now);
            starts.push(at);
        }
        assert_eq!(
            starts,
            vec![
                now,
                now,
                now + HOUR,
                now + HOUR,
                now + 2 * HOUR,
                now + 2 * HOUR,
                now + 3 * HOUR
            ]
        );
        // Every window of an hour holds at most two.
        for (i, start) in starts.iter().enumerate() {
            let inside = starts[i..].iter().filter(|s| **s < start + HOUR).count();
            assert!(inside <= 2, "{starts:?}");
        }
        // Starts older than the window do not count (the caller leaves them out): fresh again.
        assert_eq!(stranger_start(&[], 2, HOUR, now), now);
        assert_eq!(stranger_start(&[now - HOUR + 1], 1, HOUR, now), now + 1);
        // A limit of zero reads as one: a stranger's bug is never put off for ever.
        assert_eq!(stranger_start(&[now], 0, HOUR, now), now + HOUR);
    }

    #[test]
    fn only_the_newest_limit_starts_decide_a_strangers_turn() {
        // The store reads only the newest `limit` starts; the turn must not change.
        const HOUR: i64 = 3_600_000;
        let now = 10 * HOUR;
        let mut starts: Vec<i64> = Vec::new();
        for n in 0..40 {
            for limit in [0, 1, 2, 3, 7] {
                let newest = &starts[starts.len().saturating_sub(limit.max(1) as usize)..];
                assert_eq!(
                    stranger_start(newest, limit, HOUR, now),
                    stranger_start(&starts, limit, HOUR, now),
                    "{limit} of {starts:?}"
                );
            }
            starts.push(now - HOUR + 1 + n * 997 % HOUR / 2 + n);
            starts.sort_unstable();
        }
    }

    #[test]
    fn unanswered_calls_are_booked_at_worst_case() {
        assert_eq!(booked(30_000, Some(1_200), true), 1_200);
        assert_eq!(
            booked(30_000, Some(90_000), true),
            30_000,
            "never above the reservation"
        );
        assert_eq!(booked(30_000, None, true), 30_000);
        assert_eq!(
            booked(30_000, Some(10), false),
            30_000,
            "timeout or dropped connection"
        );
    }

    #[test]
    fn dollar_amounts_parse_exactly() {
        assert_eq!(parse_dollars("0.03"), Some(30_000));
        assert_eq!(parse_dollars("5"), Some(5_000_000));
        assert_eq!(parse_dollars("$1.5"), Some(1_500_000));
        assert_eq!(parse_dollars(".25"), Some(250_000));
        for bad in ["", "-1", "1.2.3", "0.0000001", "abc", "1e3", "."] {
            assert_eq!(parse_dollars(bad), None, "{bad}");
        }
    }
}
