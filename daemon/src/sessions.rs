//! The daemon's warm sessions: keyed by provider and session id, closed when idle too long,
//! and at most so many with a live CLI process (the least recently used goes first).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bridge_core::conversation::Session;

use crate::wire::SessionStatus;

/// One session the daemon holds.
struct Entry {
    /// Registry-local handle (stable while the entry lives).
    handle: u64,
    provider: String,
    /// The conversation id: the request's, or the one its first turn reported.
    session_id: Option<String>,
    /// The plugin's `runtimeSessionEpoch` the session was opened for.
    epoch: Option<String>,
    session: Arc<Session>,
    /// Turns running or queued on it.
    busy: usize,
    last_used: Instant,
    turns: u64,
    /// Started by a `preconnect` and not used since: the next new conversation takes it.
    spare: bool,
}

/// A session checked out for one request; give it back with [`Registry::release`].
#[derive(Debug, Clone)]
pub struct Lease {
    /// The entry.
    pub handle: u64,
    /// The runtime epoch it was opened for.
    pub epoch: Option<String>,
    /// Its session.
    pub session: Arc<Session>,
}

/// What names a session: its conversation id and the plugin's runtime epoch.
#[derive(Debug, Clone, Copy)]
pub struct Names<'a> {
    /// The conversation id.
    pub session_id: Option<&'a str>,
    /// The `runtimeSessionEpoch` it was opened for.
    pub epoch: Option<&'a str>,
}

/// Sessions closed by the registry: the caller closes them (gracefully, off the lock).
pub type Evicted = Vec<Arc<Session>>;

/// The sessions of one daemon (see the [module docs](self)).
#[derive(Default)]
pub struct Registry {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    entries: Vec<Entry>,
    next_handle: u64,
}

impl Registry {
    /// The session for `provider` and `session_id`, checked out for one request: the one
    /// that holds that conversation, or for a request without an id a spare started by a
    /// pre-connect; `None` when there is none (open one and [`Registry::insert`] it).
    pub fn checkout(&self, provider: &str, session_id: Option<&str>) -> Option<Lease> {
        let mut inner = self.inner.lock().ok()?;
        let entry = inner.entries.iter_mut().find(|e| {
            e.provider == provider
                && match session_id {
                    Some(id) => e.session_id.as_deref() == Some(id),
                    None => e.spare && e.busy == 0,
                }
        })?;
        entry.busy += 1;
        entry.spare = false;
        entry.last_used = Instant::now();
        Some(Lease {
            handle: entry.handle,
            epoch: entry.epoch.clone(),
            session: Arc::clone(&entry.session),
        })
    }

    /// Adds a new session, checked out (`spare`: made by a pre-connect, not checked out).
    pub fn insert(
        &self,
        provider: &str,
        session_id: Option<String>,
        epoch: Option<String>,
        session: Arc<Session>,
        spare: bool,
    ) -> Lease {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.next_handle += 1;
        let handle = inner.next_handle;
        inner.entries.push(Entry {
            handle,
            provider: provider.to_string(),
            session_id,
            epoch: epoch.clone(),
            session: Arc::clone(&session),
            busy: usize::from(!spare),
            last_used: Instant::now(),
            turns: 0,
            spare,
        });
        Lease {
            handle,
            epoch,
            session,
        }
    }

    /// Records the conversation id a turn of `handle` reported (the next request with that id
    /// lands on it). A second entry that claimed the same id (two requests resumed it at
    /// once) gives it up: the newest holder wins.
    pub fn name(&self, handle: u64, session_id: &str) {
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        for entry in &mut inner.entries {
            if entry.handle == handle {
                entry.session_id = Some(session_id.to_string());
            } else if entry.session_id.as_deref() == Some(session_id) {
                entry.session_id = None;
            }
        }
    }

    /// Gives back a checked-out session after its request (`turned`: a turn ran on it).
    pub fn release(&self, handle: u64, turned: bool) {
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        if let Some(entry) = inner.entries.iter_mut().find(|e| e.handle == handle) {
            entry.busy = entry.busy.saturating_sub(1);
            entry.last_used = Instant::now();
            entry.turns += u64::from(turned);
        }
    }

    /// Makes `handle` the spare of its provider: the next request without a session id takes
    /// it (a pre-connect that started a new conversation's CLI).
    pub fn mark_spare(&self, handle: u64) {
        if let Ok(mut inner) = self.inner.lock()
            && let Some(entry) = inner.entries.iter_mut().find(|e| e.handle == handle)
        {
            entry.spare = entry.session_id.is_none();
        }
    }

    /// Removes the sessions idle for longer than `idle`, and while more than `max_warm` hold a
    /// live CLI process, the least recently used idle ones (`keep`: a handle not to evict, the
    /// one about to be used). Busy sessions are never removed.
    pub fn sweep(&self, idle: Duration, max_warm: usize, keep: Option<u64>) -> Evicted {
        let Ok(mut inner) = self.inner.lock() else {
            return Vec::new();
        };
        let now = Instant::now();
        let mut evicted = Vec::new();
        inner.entries.retain(|entry| {
            let stale = entry.busy == 0
                && Some(entry.handle) != keep
                && now.duration_since(entry.last_used) >= idle;
            if stale {
                evicted.push(Arc::clone(&entry.session));
            }
            !stale
        });
        loop {
            let warm = inner
                .entries
                .iter()
                .filter(|e| e.session.pid().is_some())
                .count();
            if warm <= max_warm {
                break;
            }
            let oldest = inner
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.busy == 0 && Some(e.handle) != keep && e.session.pid().is_some())
                .min_by_key(|(_, e)| e.last_used)
                .map(|(index, _)| index);
            match oldest {
                Some(index) => evicted.push(inner.entries.remove(index).session),
                // Every warm one is busy: the cap is met again as their turns end.
                None => break,
            }
        }
        evicted
    }

    /// Removes the sessions `select` picks (`select(handle, provider, names)`; not busy ones
    /// unless `busy_too`).
    pub fn remove_where(
        &self,
        busy_too: bool,
        select: impl Fn(u64, &str, Names<'_>) -> bool,
    ) -> Evicted {
        let Ok(mut inner) = self.inner.lock() else {
            return Vec::new();
        };
        let mut removed = Vec::new();
        inner.entries.retain(|entry| {
            let names = Names {
                session_id: entry.session_id.as_deref(),
                epoch: entry.epoch.as_deref(),
            };
            let pick =
                (busy_too || entry.busy == 0) && select(entry.handle, &entry.provider, names);
            if pick {
                removed.push(Arc::clone(&entry.session));
            }
            !pick
        });
        removed
    }

    /// The sessions `select` picks (for live settings such as the permission mode).
    pub fn find(&self, select: impl Fn(&str, Option<&str>) -> bool) -> Vec<Arc<Session>> {
        let Ok(inner) = self.inner.lock() else {
            return Vec::new();
        };
        inner
            .entries
            .iter()
            .filter(|e| select(&e.provider, e.session_id.as_deref()))
            .map(|e| Arc::clone(&e.session))
            .collect()
    }

    /// Every session, for `status` (`rss`: the memory of a process tree).
    pub fn status(&self, rss: impl Fn(u32) -> Option<u64>) -> Vec<SessionStatus> {
        let Ok(inner) = self.inner.lock() else {
            return Vec::new();
        };
        let now = Instant::now();
        inner
            .entries
            .iter()
            .map(|entry| {
                let pid = entry.session.pid();
                SessionStatus {
                    provider: entry.provider.clone(),
                    session_id: entry.session_id.clone(),
                    pid,
                    idle_seconds: if entry.busy > 0 {
                        0
                    } else {
                        now.duration_since(entry.last_used).as_secs()
                    },
                    busy: entry.busy > 0,
                    turns: entry.turns,
                    rss_bytes: pid.and_then(&rss),
                }
            })
            .collect()
    }

    /// Removes every session (shutdown).
    pub fn drain(&self) -> Evicted {
        match self.inner.lock() {
            Ok(mut inner) => inner.entries.drain(..).map(|e| e.session).collect(),
            Err(_) => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bridge_core::channel::Channel;
    use bridge_core::conversation::SessionOptions;
    use bridge_core::request::Request;
    use bridge_core::turn::TurnContext;
    use futures_util::future::BoxFuture;

    /// A channel that is never asked to run a turn here.
    struct Idle;
    impl Channel for Idle {
        fn id(&self) -> &'static str {
            "idle"
        }
        fn display_name(&self) -> &'static str {
            "Idle"
        }
        fn send(&self, _: Request, _: TurnContext) -> BoxFuture<'static, ()> {
            Box::pin(async {})
        }
    }

    fn session() -> Arc<Session> {
        Arc::new(Session::open(Arc::new(Idle), SessionOptions::default()))
    }

    #[tokio::test]
    async fn a_conversation_is_found_by_the_id_its_turn_reported() {
        let registry = Registry::default();
        let new = registry.insert("idle", None, None, session(), false);
        assert!(registry.checkout("idle", Some("s-1")).is_none());
        registry.name(new.handle, "s-1");
        registry.release(new.handle, true);
        let again = registry.checkout("idle", Some("s-1")).expect("found by id");
        assert_eq!(again.handle, new.handle);
        assert!(
            registry.checkout("other", Some("s-1")).is_none(),
            "per provider"
        );
        // A request without an id never lands on an existing conversation.
        assert!(registry.checkout("idle", None).is_none());
        // A second holder of the same id takes it over.
        let second = registry.insert("idle", None, None, session(), false);
        registry.name(second.handle, "s-1");
        assert_eq!(
            registry.checkout("idle", Some("s-1")).unwrap().handle,
            second.handle
        );
        let status = registry.status(|_| None);
        assert_eq!(status.iter().filter(|s| s.session_id.is_some()).count(), 1);
        assert_eq!(status[0].turns, 1);
    }

    #[tokio::test]
    async fn a_spare_goes_to_the_next_new_conversation_once() {
        let registry = Registry::default();
        let spare = registry.insert("idle", None, None, session(), true);
        let taken = registry.checkout("idle", None).expect("the spare");
        assert_eq!(taken.handle, spare.handle);
        assert!(registry.checkout("idle", None).is_none(), "taken once");
    }

    #[tokio::test]
    async fn idle_sessions_are_swept_busy_ones_never() {
        let registry = Registry::default();
        let busy = registry.insert("idle", Some("busy".into()), None, session(), false);
        let idle = registry.insert("idle", Some("idle".into()), None, session(), false);
        registry.release(idle.handle, true);
        let swept = registry.sweep(Duration::ZERO, 8, None);
        assert_eq!(swept.len(), 1);
        assert!(registry.checkout("idle", Some("idle")).is_none());
        registry.release(busy.handle, true);
        let kept = registry.sweep(Duration::ZERO, 8, Some(busy.handle));
        assert!(kept.is_empty(), "the session about to be used stays");
        assert!(
            registry
                .sweep(Duration::from_secs(3600), 8, None)
                .is_empty()
        );
        let removed = registry.remove_where(false, |_, _, names| names.session_id == Some("busy"));
        assert_eq!(removed.len(), 1);
        assert!(registry.drain().is_empty());
    }
}
