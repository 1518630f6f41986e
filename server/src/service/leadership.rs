//! Work only one server on the database may do at a time, held as a leadership in the
//! database ([`store::leaders`]) and renewed while the work goes on: a bug's measurement, a
//! merge of duplicates, a service's deployer. A server that stops (killed, cut off) loses what
//! it held once the holding runs out; a clean end hands it on at once.

use crate::error::Kind;
use crate::web::AppState;
use std::time::Duration;

/// A leadership this server holds; renewed until dropped, then given up.
#[derive(Debug)]
pub struct Held {
    name: String,
    /// This hold's own holder name (the server's id and a nonce): a later hold by the same
    /// server is another holder, so giving this one up never ends that one.
    holder: String,
    state: AppState,
    renewal: tokio::task::JoinHandle<()>,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.renewal.abort();
        let (store, name, holder) = (
            self.state.store.clone(),
            self.name.clone(),
            self.holder.clone(),
        );
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(error) = store.give_up_leadership(&name, &holder).await {
                    tracing::warn!(leadership = name, %error, "cannot give the leadership up; it runs out by itself");
                }
            });
        }
    }
}

/// This host's name, as instances record it.
pub fn this_host() -> String {
    std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_default()
}

/// Whether the server process that holds as `holder` (an instance id, or an instance id and
/// `#` and a nonce) is known to be gone: an instance on this host whose process no longer
/// exists — an earlier life of a restarted server. Never a live process, never another
/// host's instance (those lose what they hold when their holding runs out).
async fn gone(state: &AppState, holder: &str) -> bool {
    let id = holder.split('#').next().unwrap_or(holder);
    if id == state.server.id {
        return false;
    }
    match state.store.instance(id).await {
        Ok(Some(instance)) => {
            instance.host == this_host()
                && instance.pid != i64::from(std::process::id())
                && !alive(instance.pid)
        }
        _ => false,
    }
}

/// Whether process `pid` runs on this host (a zombie, killed and not yet reaped, does not).
fn alive(pid: i64) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // `pid (comm) S …`: the state follows the last `)` (a command name may hold one).
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next());
    !matches!(state, Some('Z' | 'X') | None)
}

/// Asks for leadership `name` as `holder` until `until`; a holding of a server process known
/// to be gone ([`gone`]) is taken over at once instead of waited out.
pub async fn ask(
    state: &AppState,
    name: &str,
    holder: &str,
    until: i64,
) -> Result<store::leaders::Leader, store::StoreError> {
    let now = crate::clock::now_ms();
    let leader = state
        .store
        .hold_leadership(name, holder, &state.server.address, now, until)
        .await?;
    if leader.holder != holder && gone(state, &leader.holder).await {
        tracing::info!(
            leadership = name,
            earlier = leader.holder,
            "taking over from this host's earlier server, which is gone"
        );
        return state
            .store
            .take_over_leadership(name, &leader.holder, holder, &state.server.address, until)
            .await;
    }
    Ok(leader)
}

/// Takes leadership `name` for `hold` (renewed every third of it while the returned guard
/// lives), or answers the base URL of the server that holds it.
pub async fn take(
    state: &AppState,
    name: &str,
    hold: Duration,
) -> Result<Result<Held, String>, store::StoreError> {
    let hold_ms = i64::try_from(hold.as_millis()).unwrap_or(i64::MAX / 4);
    let holder = format!("{}#{:08x}", state.server.id, rand::random::<u32>());
    let leader = ask(state, name, &holder, crate::clock::now_ms() + hold_ms).await?;
    if leader.holder != holder {
        return Ok(Err(leader.address));
    }
    let renewal = tokio::spawn({
        let (state, name, holder) = (state.clone(), name.to_owned(), holder.clone());
        async move {
            loop {
                tokio::time::sleep(hold / 3).await;
                let now = crate::clock::now_ms();
                match state
                    .store
                    .hold_leadership(&name, &holder, &state.server.address, now, now + hold_ms)
                    .await
                {
                    Ok(leader) if leader.holder == holder => {}
                    Ok(leader) => {
                        tracing::warn!(
                            leadership = name,
                            other = leader.address,
                            "another server took the leadership over"
                        );
                        return;
                    }
                    Err(error) => {
                        tracing::warn!(leadership = name, %error, "cannot renew a leadership")
                    }
                }
            }
        }
    });
    Ok(Ok(Held {
        name: name.to_owned(),
        holder,
        state: state.clone(),
        renewal,
    }))
}

/// Waits (asking every 100 ms, at most `patience`) until leadership `name` is this server's.
pub async fn wait_for(
    state: &AppState,
    name: &str,
    hold: Duration,
    patience: Duration,
) -> Result<Held, crate::web::Refused> {
    let until = tokio::time::Instant::now() + patience;
    loop {
        match take(state, name, hold).await.map_err(crate::web::Refused::storage)? {
            Ok(held) => return Ok(held),
            Err(other) if tokio::time::Instant::now() >= until => {
                return Err(crate::web::Refused::new(
                    Kind::Unavailable,
                    "busy_elsewhere",
                    format!("the desk server at {other} has been doing this for {} s; try again shortly", patience.as_secs()),
                )
                .with_retry_after(5))
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// How long a measurement's hold lasts unless renewed (it is, every 10 s, while it runs).
const MEASURE_HOLD: Duration = Duration::from_secs(30);

/// Holds bug `bug`'s measurement across every server on the database (beside this process's
/// own [`AppState::measure`]): 409 `already_measuring` when another server measures a
/// proposal for it now — only one of the two could be recorded.
pub async fn measure(state: &AppState, bug: &str) -> Result<Held, crate::web::Refused> {
    match take(state, &format!("measure:{bug}"), MEASURE_HOLD)
        .await
        .map_err(crate::web::Refused::storage)?
    {
        Ok(held) => Ok(held),
        Err(other) => Err(crate::web::Refused::new(
            Kind::Conflict,
            "already_measuring",
            format!(
                "the desk server at {other} is measuring another proposal for {bug} now; nothing of this one was run or recorded (wait for that answer)"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_process_is_alive_and_a_reaped_one_is_not() {
        assert!(super::alive(i64::from(std::process::id())));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = i64::from(child.id());
        child.wait().unwrap();
        assert!(!super::alive(pid));
        // Killed but not reaped: a zombie is gone too.
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = i64::from(sleeper.id());
        sleeper.kill().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(!super::alive(pid));
        sleeper.wait().unwrap();
        assert!(!super::alive(-1));
    }
}
