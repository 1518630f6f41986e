//! SQL shared by both backends. The statements are identical (`$n` placeholders work in
//! SQLite and PostgreSQL); only the pool and transaction types differ, so these macros expand
//! the same code once per backend.

/// Runs `$body` with `$pool` bound to the backend's pool and `$begin()` opening a write
/// transaction (SQLite: `BEGIN IMMEDIATE`, taking the write lock up front so two writers never
/// deadlock upgrading a read lock, after queueing on the store's in-process writer lock).
macro_rules! for_each_backend {
    ($store:expr, $pool:ident, $begin:ident => $body:block) => {
        match &$store.pool {
            $crate::Pool::Sqlite($pool) => {
                let _writer = $store.writer.lock().await;
                let $begin = || $pool.begin_with("BEGIN IMMEDIATE");
                $body
            }
            $crate::Pool::Postgres($pool) => {
                let $begin = || $pool.begin();
                $body
            }
        }
    };
}

/// Inserts a new bug row inside a transaction.
macro_rules! insert_bug {
    ($tx:ident, $bug:expr, $document:expr, $event_count:expr, $head:expr, $now:expr) => {
        sqlx::query(
            "INSERT INTO bugs (id, component, state, version, document, event_count, head_hash, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)",
        )
        .bind(&$bug.id)
        .bind(&$bug.component)
        .bind($bug.state.as_str())
        .bind($crate::ledger::to_i64($bug.version))
        .bind($document)
        .bind($crate::ledger::to_i64($event_count as u64))
        .bind($head)
        .bind($now)
        .execute(&mut *$tx)
        .await
        .map_err($crate::StoreError::from)?
    };
}

/// Appends chained audit events (`&[domain::ledger::ChainedEvent]`) inside a transaction, in
/// one statement.
macro_rules! insert_events {
    ($tx:ident, $events:expr) => {{
        let events: &[domain::ledger::ChainedEvent] = $events;
        if !events.is_empty() {
            let mut bodies = Vec::with_capacity(events.len());
            for event in events {
                bodies.push($crate::ledger::json(&event.event)?);
            }
            let mut insert = sqlx::QueryBuilder::new(
                "INSERT INTO audit_events (bug_id, seq, kind, actor_kind, actor_id, at, body, prev_hash, hash) ",
            );
            insert.push_values(events.iter().zip(&bodies), |mut row, (event, body)| {
                row.push_bind(&event.bug_id)
                    .push_bind(i64::try_from(event.seq).unwrap_or(i64::MAX))
                    .push_bind(&event.event.kind)
                    .push_bind(&event.event.actor_kind)
                    .push_bind(&event.event.actor_id)
                    .push_bind(event.event.at)
                    .push_bind(body)
                    .push_bind(&event.prev_hash)
                    .push_bind(&event.hash);
            });
            insert
                .build()
                .execute(&mut *$tx)
                .await
                .map_err($crate::StoreError::from)?;
        }
    }};
}

/// Enqueues one outbox job inside a transaction; a duplicate idempotency key is a no-op.
/// Evaluates to the number of rows inserted (0 or 1).
macro_rules! insert_job {
    ($tx:ident, $job:expr, $bug:expr, $payload:expr, $now:expr) => {
        sqlx::query(
            "INSERT INTO outbox_jobs (idempotency_key, bug_id, kind, consumer, payload, available_at, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (idempotency_key) DO NOTHING",
        )
        .bind(&$job.idempotency_key)
        .bind($bug)
        .bind(&$job.kind)
        .bind($job.consumer.as_str())
        .bind($payload)
        .bind($job.available_at)
        .bind($now)
        .execute(&mut *$tx)
        .await
        .map_err($crate::StoreError::from)?
        .rows_affected()
    };
}

/// Reads one bug (document, version, chain head) on a connection or transaction; evaluates to
/// `Option<StoredBug>` and returns early on errors.
macro_rules! read_bug {
    ($conn:ident, $id:expr) => {
        read_bug!($conn, $id, "")
    };
    ($conn:ident, $id:expr, $lock:literal) => {{
        let row: Option<(String, i64, i64, String)> = sqlx::query_as(concat!(
            "SELECT document, version, event_count, head_hash FROM bugs WHERE id = $1",
            $lock
        ))
        .bind($id)
        .fetch_optional(&mut *$conn)
        .await
        .map_err($crate::StoreError::from)?;
        match row {
            Some(row) => Some($crate::ledger::stored_bug(row)?),
            None => None,
        }
    }};
}

/// Inside an open transaction: compare-and-swap the bug from `read_version` to the decision's
/// version, append its events to the chain and enqueue its jobs. Evaluates to a `Commit`;
/// the caller commits the transaction only on `Commit::Done`.
macro_rules! write_decision {
    ($tx:ident, $read_version:expr, $decision:expr, $now:expr) => {{
        use $crate::ledger::{to_u64, Commit};
        let current: Option<(i64, i64, String)> =
            sqlx::query_as("SELECT version, event_count, head_hash FROM bugs WHERE id = $1")
                .bind(&$decision.bug.id)
                .fetch_optional(&mut *$tx)
                .await
                .map_err($crate::StoreError::from)?;
        match current {
            None => Commit::VersionConflict,
            Some((version, _, _)) if to_u64(version) != $read_version => Commit::VersionConflict,
            Some((_, event_count, head_hash)) => {
                write_decision_at!(
                    $tx,
                    $read_version,
                    to_u64(event_count),
                    &head_hash,
                    $decision,
                    $now
                )
            }
        }
    }};
}

/// [`write_decision!`] for a bug read in this same transaction at `read_version`, with
/// `event_count` events ending in `head_hash`: no second read. The update's compare-and-swap
/// on the version still guards it (every write of a bug's chain moves its version).
macro_rules! write_decision_at {
    ($tx:ident, read($stored:expr), $decision:expr, $now:expr) => {{
        let stored: &$crate::ledger::StoredBug = $stored;
        write_decision_at!($tx, stored.bug.version, stored.event_count, &stored.head_hash, $decision, $now)
    }};
    ($tx:ident, $read_version:expr, $event_count:expr, $head_hash:expr, $decision:expr, $now:expr) => {{
        use $crate::ledger::{json, to_i64, Commit};
        let decision = $decision;
        let bug = &decision.bug;
        let event_count: u64 = $event_count;
        let head_hash: &str = $head_hash;
        let chained = domain::ledger::chain(&bug.id, event_count, head_hash, &decision.events);
        let new_head = chained.last().map_or(head_hash.to_owned(), |e| e.hash.clone());
        let updated = sqlx::query(
            "UPDATE bugs SET state = $1, version = $2, document = $3, event_count = $4, head_hash = $5, \
             updated_at = $6 WHERE id = $7 AND version = $8",
        )
        .bind(bug.state.as_str())
        .bind(to_i64(bug.version))
        .bind(json(bug)?)
        .bind(to_i64(event_count + chained.len() as u64))
        .bind(&new_head)
        .bind($now)
        .bind(&bug.id)
        .bind(to_i64($read_version))
        .execute(&mut *$tx)
        .await
        .map_err($crate::StoreError::from)?
        .rows_affected();
        if updated == 1 {
            insert_events!($tx, &chained);
            for job in &decision.jobs {
                let payload = json(&job.payload)?;
                insert_job!($tx, job, Some(bug.id.as_str()), &payload, $now);
            }
            Commit::Done
        } else {
            Commit::VersionConflict
        }
    }};
}

/// Inside the intake's transaction: when the budget's client may next start the crew on a new
/// bug of `$component` ([`domain::spend::stranger_start`] over its starts in the window). Only
/// the newest `limit` starts decide it, so only they are read: a stranger's thousandth report
/// costs what their tenth did.
macro_rules! crew_turn {
    ($tx:ident, $budget:expr, $component:expr, $now:expr) => {{
        let budget: &$crate::reports::StrangerBudget = $budget;
        let mut starts: Vec<domain::workflow::Millis> = sqlx::query_scalar(
            "SELECT start_at FROM crew_starts \
             WHERE client_hash = $1 AND component = $2 AND start_at > $3 \
             ORDER BY start_at DESC LIMIT $4",
        )
        .bind(&budget.client_hash)
        .bind($component)
        .bind($now - budget.window)
        .bind(i64::from(budget.limit.max(1)))
        .fetch_all(&mut *$tx)
        .await?;
        starts.reverse();
        domain::spend::stranger_start(&starts, budget.limit, budget.window, $now)
    }};
}

/// Inside the intake's transaction: when the crew starts on new bug `$bug` of the budget's
/// client in `$component` — now while fewer than the budget's limit of starts fall in the
/// window before it, else in turn ([`domain::spend::stranger_start`]) — recorded for the bug;
/// now and then (one claim in 64) starts older than the window are dropped (they count for
/// nothing). Evaluates to the start.
macro_rules! claim_crew_start {
    ($tx:ident, $budget:expr, $bug:expr, $component:expr, $now:expr) => {{
        let budget: &$crate::reports::StrangerBudget = $budget;
        if $crate::reports::now_and_then() {
            sqlx::query("DELETE FROM crew_starts WHERE start_at < $1")
                .bind($now - budget.window)
                .execute(&mut *$tx)
                .await?;
        }
        let start_at = crew_turn!($tx, budget, $component, $now);
        sqlx::query(
            "INSERT INTO crew_starts (bug_id, client_hash, component, start_at) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (bug_id) DO NOTHING",
        )
        .bind($bug)
        .bind(&budget.client_hash)
        .bind($component)
        .bind(start_at)
        .execute(&mut *$tx)
        .await?;
        start_at
    }};
}

/// Inside the intake's transaction: a report of the budget's client joined bug `$bug`, whose
/// crew start (`$start`: its component and time, read with the bug) a stranger's budget may
/// have put off. When this client's own budget for the bug's component has room sooner, the
/// start moves to this client's turn and is charged to it, and the bug's triage wakes then: a
/// stranger's look-alike bug cannot hold a real reporter's report back.
macro_rules! join_crew_start {
    ($tx:ident, $budget:expr, $bug:expr, $start:expr, $now:expr) => {{
        let budget: &$crate::reports::StrangerBudget = $budget;
        let row: Option<(String, domain::workflow::Millis)> = $start;
        if let Some((component, start_at)) = row.filter(|(_, at)| *at > $now) {
            let mine = crew_turn!($tx, budget, &component, $now);
            if mine < start_at {
                sqlx::query(
                    "UPDATE crew_starts SET client_hash = $1, start_at = $2 WHERE bug_id = $3",
                )
                .bind(&budget.client_hash)
                .bind(mine)
                .bind($bug)
                .execute(&mut *$tx)
                .await?;
                sqlx::query(
                    "UPDATE outbox_jobs SET available_at = $1 \
                     WHERE idempotency_key = $2 AND done_at IS NULL AND available_at > $1",
                )
                .bind(mine)
                .bind(format!("triage:{}", $bug))
                .execute(&mut *$tx)
                .await?;
            }
        }
    }};
}

/// Holds a [`crate::rate::Bucket`] until the transaction ends (PostgreSQL: its row, locked by
/// the upsert; SQLite: the write lock the transaction already holds), creating it full; one
/// statement. Evaluates to its stored `(tokens, updated_ms)`.
macro_rules! hold_bucket {
    ($tx:ident, $bucket:expr, $now:expr) => {{
        let bucket: &$crate::rate::Bucket = $bucket;
        let held: (f64, i64) = sqlx::query_as(
            "INSERT INTO rate_buckets (key, tokens, updated_ms) VALUES ($1, $2, $3) \
             ON CONFLICT (key) DO UPDATE SET tokens = rate_buckets.tokens \
             RETURNING tokens, updated_ms",
        )
        .bind(&bucket.key)
        .bind(bucket.refill.capacity)
        .bind($now)
        .fetch_one(&mut *$tx)
        .await?;
        held
    }};
}

/// Takes one token of a [`crate::rate::Bucket`] inside a transaction, holding the bucket until
/// it ends ([`hold_bucket!`]): `Ok(())` when one was taken, `Err(ms)` until one refills.
macro_rules! take_bucket {
    ($tx:ident, $bucket:expr, $now:expr) => {{
        let bucket: &$crate::rate::Bucket = $bucket;
        let (tokens, updated) = hold_bucket!($tx, bucket, $now);
        let (left, took) = $crate::rate::refill_and_take(bucket.refill, tokens, $now - updated);
        if took {
            store_bucket!($tx, &bucket.key, left, $now.max(updated));
            Ok(())
        } else {
            Err($crate::rate::retry_ms(bucket.refill, left))
        }
    }};
}

/// Writes bucket `$key`'s tokens and time inside a transaction that holds it.
macro_rules! store_bucket {
    ($tx:ident, $key:expr, $tokens:expr, $updated:expr) => {
        sqlx::query("UPDATE rate_buckets SET tokens = $1, updated_ms = $2 WHERE key = $3")
            .bind($tokens)
            .bind($updated)
            .bind($key)
            .execute(&mut *$tx)
            .await?
    };
}

/// Inserts a report row inside a transaction.
macro_rules! insert_report {
    ($tx:ident, $report:expr, $status:expr, $families:expr, $dossier:expr, $bug:expr, $opens:expr, $repeat:expr, $now:expr) => {
        sqlx::query(
            "INSERT INTO reports (id, bug_id, capability_hash, component, status, families, raw_sha256, \
             dossier, opens_bug, repeat_of, contact, created_at, title_terms) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
        )
        .bind(&$report.id)
        .bind($bug)
        .bind(&$report.capability_hash)
        .bind(&$report.component)
        .bind($status)
        .bind($families)
        .bind(&$report.raw_sha256)
        .bind($dossier)
        .bind(i64::from($opens))
        .bind($repeat)
        .bind(&$report.contact)
        .bind($now)
        .bind(match &$report.content {
            $crate::reports::ReportContent::Admitted(dossier) => Some(domain::cluster::stored_terms(&dossier.title)),
            $crate::reports::ReportContent::Quarantined { .. } => None,
        })
        .execute(&mut *$tx)
        .await
        .map_err($crate::StoreError::from)?
    };
}
