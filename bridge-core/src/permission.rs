//! One approval model for every provider: requests, decisions, and who answers them.
//!
//! A channel that learns its CLI wants to use a tool turns the provider's question into a
//! [`PermissionRequest`] and asks the turn's [`PermissionBroker`]. The broker gets the answer
//! from whoever can give one, in this order:
//!
//! 1. the client, over the bridge's stdin (`{"type":"permission_response","requestId":…,
//!    "decision":…}`), while stdin is open;
//! 2. the ai-bridge file IPC, when `CLAUDE_PERMISSION_DIR` is set ([`crate::permission_ipc`]);
//! 3. nobody: the request is denied at once with a reason the model and the user both see,
//!    and likewise when the approval timeout passes. A turn never hangs on an approval.
//!
//! The channel maps the [`Resolution`] back to its provider and reports what it actually did
//! as an [`EffectiveDecision`] (e.g. "allow for the session" on a provider that only knows
//! "allow once" is applied as allow once, and says so).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::oneshot;

use crate::event::ToolKind;
use crate::permission_ipc::FileIpc;

/// What is being asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RequestKind {
    /// May the agent run this tool?
    Tool,
    /// The agent asks the user questions (Claude's AskUserQuestion); answer with `answers`.
    Question,
    /// The agent presents a plan and asks to leave plan mode (Claude's ExitPlanMode).
    PlanApproval,
}

/// The decisions a client can send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// Allow this call.
    AllowOnce,
    /// Allow this and similar calls for the rest of the session.
    AllowSession,
    /// Refuse this call (the turn goes on; the model sees the refusal).
    Deny,
    /// Refuse and stop the turn.
    Cancel,
}

/// An approval the agent is waiting for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRequest {
    /// Id to answer with.
    pub request_id: String,
    /// What is asked.
    pub kind: RequestKind,
    /// Provider tool name.
    pub tool_name: String,
    /// Normalized tool kind.
    pub tool_kind: ToolKind,
    /// Tool input (for questions: the questions; for plans: the plan).
    pub input: Value,
    /// Human description, e.g. `Create a file`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Files the call touches, where known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// The tool call this belongs to, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// Decisions this provider can honour exactly.
    pub options: Vec<DecisionKind>,
    /// Provider data the channel needs to answer (e.g. Claude's permission suggestions);
    /// not part of the wire format.
    #[serde(skip)]
    pub native: Option<Value>,
}

/// A client's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionDecision {
    /// The decision.
    pub decision: DecisionKind,
    /// Message for the model when denying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Replacement tool input when allowing (the client edited the call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_input: Option<Value>,
    /// Answers to a [`RequestKind::Question`] (`{"question text": "answer"}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<Value>,
    /// Mode to switch to after an approved plan (`default`, `acceptEdits`, `bypassPermissions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_mode: Option<String>,
}

impl PermissionDecision {
    /// A plain decision without extras.
    pub fn new(decision: DecisionKind) -> Self {
        PermissionDecision {
            decision,
            message: None,
            updated_input: None,
            answers: None,
            target_mode: None,
        }
    }

    /// A denial with a reason.
    pub fn deny(message: impl Into<String>) -> Self {
        PermissionDecision {
            message: Some(message.into()),
            ..PermissionDecision::new(DecisionKind::Deny)
        }
    }

    /// Reads the `decision` of a `permission_response` control message. Accepted shapes:
    /// `"allow"`, `"allow_once"`, `"allow_session"` (`"allow_always"`), `"deny"`, `"cancel"`, or an
    /// object `{"behavior":"allow"|"deny"|…, "scope":"session", "message":…, "updatedInput":…,
    /// "answers":…, "approved":bool, "targetMode":…}` (the ai-bridge IPC shapes `{"allow":bool}`,
    /// `{"answers":…}` and `{"approved":…,"targetMode":…}` too).
    ///
    /// ```
    /// use bridge_core::permission::{DecisionKind, PermissionDecision};
    /// let d = PermissionDecision::from_wire(&serde_json::json!("allow_session")).unwrap();
    /// assert_eq!(d.decision, DecisionKind::AllowSession);
    /// let d = PermissionDecision::from_wire(&serde_json::json!({"allow": false})).unwrap();
    /// assert_eq!(d.decision, DecisionKind::Deny);
    /// ```
    pub fn from_wire(value: &Value) -> Result<PermissionDecision, String> {
        let parse_kind = |s: &str| match s.to_ascii_lowercase().replace('-', "_").as_str() {
            "allow" | "allow_once" | "approve" | "approved" | "yes" => {
                Some(DecisionKind::AllowOnce)
            }
            "allow_session" | "allow_always" | "always" => Some(DecisionKind::AllowSession),
            "deny" | "reject" | "no" | "denied" => Some(DecisionKind::Deny),
            "cancel" | "abort" | "interrupt" => Some(DecisionKind::Cancel),
            _ => None,
        };
        match value {
            Value::String(s) => parse_kind(s)
                .map(PermissionDecision::new)
                .ok_or_else(|| format!("unknown decision `{s}`")),
            Value::Bool(b) => Ok(PermissionDecision::new(if *b {
                DecisionKind::AllowOnce
            } else {
                DecisionKind::Deny
            })),
            Value::Object(obj) => {
                let text = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_string);
                let mut kind = if let Some(b) = obj.get("behavior").or_else(|| obj.get("decision"))
                {
                    match b.as_str().and_then(parse_kind) {
                        Some(kind) => kind,
                        None => return Err(format!("unknown decision {b}")),
                    }
                } else if let Some(allow) = obj.get("allow").or_else(|| obj.get("approved")) {
                    // ai-bridge: only a literal `true` allows.
                    if allow == &Value::Bool(true) {
                        DecisionKind::AllowOnce
                    } else {
                        DecisionKind::Deny
                    }
                } else if obj.contains_key("answers") {
                    DecisionKind::AllowOnce
                } else {
                    return Err(
                        "a decision object needs `behavior`, `allow`, `approved` or `answers`"
                            .into(),
                    );
                };
                if kind == DecisionKind::AllowOnce
                    && matches!(text("scope").as_deref(), Some("session" | "always"))
                {
                    kind = DecisionKind::AllowSession;
                }
                Ok(PermissionDecision {
                    decision: kind,
                    message: text("message").or_else(|| text("reason")),
                    updated_input: obj
                        .get("updatedInput")
                        .or_else(|| obj.get("updated_input"))
                        .cloned(),
                    answers: obj.get("answers").cloned(),
                    target_mode: text("targetMode").or_else(|| text("target_mode")),
                })
            }
            other => Err(format!(
                "a decision must be a string or an object, got {other}"
            )),
        }
    }
}

/// Who decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecisionSource {
    /// The client, over stdin.
    Client,
    /// The client, through the file IPC.
    FileIpc,
    /// The bridge's permission-mode policy (e.g. plan mode never lets a write through).
    Policy,
    /// Nobody could answer.
    NoClient,
    /// The approval timeout passed.
    Timeout,
}

/// A decision and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolution {
    /// The decision.
    pub decision: PermissionDecision,
    /// Its source.
    pub source: DecisionSource,
}

impl Resolution {
    /// The note for a refusal's message on a provider that cannot pass one on: a client's
    /// message is reported as not sent (`instead` says what the model is told), the bridge's
    /// own reason (a policy, nobody to answer, a timeout) is the note. `None` when `applied`
    /// is not a refusal or there is no message.
    ///
    /// ```
    /// use bridge_core::permission::*;
    /// let r = Resolution { decision: PermissionDecision::deny("no"), source: DecisionSource::Client };
    /// let note = r.unsent_refusal_note(DecisionKind::Deny, "X has no denial message").unwrap();
    /// assert_eq!(note, "X has no denial message (not sent: no)");
    /// assert!(r.unsent_refusal_note(DecisionKind::AllowOnce, "…").is_none());
    /// ```
    pub fn unsent_refusal_note(&self, applied: DecisionKind, instead: &str) -> Option<String> {
        if !matches!(applied, DecisionKind::Deny | DecisionKind::Cancel) {
            return None;
        }
        let message = self.decision.message.as_ref()?;
        Some(if self.source == DecisionSource::Client {
            format!("{instead} (not sent: {message})")
        } else {
            message.clone()
        })
    }
}

/// What the bridge actually did with a decision, reported as an event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EffectiveDecision {
    /// The request answered.
    pub request_id: String,
    /// The decision that was asked for.
    pub requested: DecisionKind,
    /// The decision that was applied.
    pub applied: DecisionKind,
    /// Who decided.
    pub source: DecisionSource,
    /// Why `applied` differs from `requested`, or why the bridge decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What a channel does to carry out a decision.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// Bytes to write to the CLI's stdin (a control response, possibly followed by others).
    pub stdin: Vec<u8>,
    /// What was applied, reported to the client.
    pub effective: EffectiveDecision,
    /// The decision stops the turn (e.g. [`DecisionKind::Cancel`]).
    pub cancel_turn: bool,
}

/// The provider side of approvals: a channel whose CLI asks for permission over its stdin
/// implements this so the shared engine can answer.
pub trait PermissionResponder: Send + Sync + std::fmt::Debug {
    /// A decision the permission mode makes without asking anyone (e.g. plan mode never lets a
    /// write through), or `None` to ask.
    fn policy(&self, request: &PermissionRequest) -> Option<Resolution> {
        let _ = request;
        None
    }

    /// Encodes `resolution` for the CLI and reports what was applied.
    fn respond(&self, request: &PermissionRequest, resolution: &Resolution) -> Response;
}

/// Decides permission requests for one bridge run.
#[derive(Debug)]
pub struct PermissionBroker {
    pending: Mutex<HashMap<String, oneshot::Sender<PermissionDecision>>>,
    /// Answers that arrived before their request was being waited for (a fast client can
    /// answer the `permission_request` event before the engine starts waiting).
    early: Mutex<HashMap<String, PermissionDecision>>,
    client_open: AtomicBool,
    ipc: Option<FileIpc>,
    timeout: Duration,
    /// Told of every request the broker waits on the client for ([`PermissionBroker::watched`]).
    watcher: Option<tokio::sync::mpsc::UnboundedSender<PermissionRequest>>,
}

impl PermissionBroker {
    /// A broker. `client_open` says whether a client can answer over stdin; `ipc` enables the
    /// file protocol; `timeout` bounds every wait.
    pub fn new(client_open: bool, ipc: Option<FileIpc>, timeout: Duration) -> Self {
        PermissionBroker {
            pending: Mutex::new(HashMap::new()),
            early: Mutex::new(HashMap::new()),
            client_open: AtomicBool::new(client_open),
            ipc,
            timeout,
            watcher: None,
        }
    }

    /// The same broker, telling `watcher` of every request it starts waiting on the client
    /// for (not those the permission-mode policy decides, nor those nobody can answer): a
    /// front end that asks its client itself (the ACP agent's `session/request_permission`)
    /// forwards them and delivers the answer with [`PermissionBroker::answer`].
    pub fn watched(
        mut self,
        watcher: tokio::sync::mpsc::UnboundedSender<PermissionRequest>,
    ) -> Self {
        self.watcher = Some(watcher);
        self
    }

    /// A broker nobody answers: every request is denied at once.
    pub fn unattended() -> Self {
        PermissionBroker::new(false, None, Duration::from_secs(1))
    }

    /// The approval timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The client's stdin closed: pending and future requests are not waited for on stdin.
    pub fn client_gone(&self) {
        self.client_open.store(false, Ordering::SeqCst);
        if let Ok(mut pending) = self.pending.lock() {
            // Dropping the senders wakes the waiters, which then fall back to IPC or deny.
            pending.clear();
        }
    }

    /// Most early answers kept (a client sending junk ids cannot grow memory without bound).
    const MAX_EARLY: usize = 256;

    /// Delivers a client's answer. An answer for a request that is not (yet) being waited for
    /// is kept until it is asked; false when it had to be dropped.
    pub fn answer(&self, request_id: &str, decision: PermissionDecision) -> bool {
        let Ok(mut pending) = self.pending.lock() else {
            return false;
        };
        if let Some(sender) = pending.remove(request_id) {
            return sender.send(decision).is_ok();
        }
        let Ok(mut early) = self.early.lock() else {
            return false;
        };
        if early.len() >= Self::MAX_EARLY {
            return false;
        }
        early.insert(request_id.to_string(), decision);
        true
    }

    /// Gets a decision for `request` (see the module docs for the order).
    pub async fn ask(&self, request: &PermissionRequest) -> Resolution {
        let stdin_answer = match self.pending.lock() {
            Ok(mut pending) => {
                let early = self
                    .early
                    .lock()
                    .ok()
                    .and_then(|mut early| early.remove(&request.request_id));
                if let Some(decision) = early {
                    return Resolution {
                        decision,
                        source: DecisionSource::Client,
                    };
                }
                if self.client_open.load(Ordering::SeqCst) {
                    let (tx, rx) = oneshot::channel();
                    pending.insert(request.request_id.clone(), tx);
                    if let Some(watcher) = &self.watcher {
                        let _ = watcher.send(request.clone());
                    }
                    Some(rx)
                } else {
                    None
                }
            }
            Err(_) => None,
        };
        let ipc_answer = self.ipc.as_ref().map(|ipc| ipc.ask(request, self.timeout));
        if stdin_answer.is_none() && ipc_answer.is_none() {
            return Resolution {
                decision: PermissionDecision::deny(
                    "Permission denied: no client can answer approval requests (the bridge's stdin is closed and CLAUDE_PERMISSION_DIR is not set). Re-run in a mode that allows this tool, or keep stdin open to answer.",
                ),
                source: DecisionSource::NoClient,
            };
        }
        let timeout_resolution = || Resolution {
            decision: PermissionDecision::deny(format!(
                "Permission denied: no answer within {} s",
                self.timeout.as_secs()
            )),
            source: DecisionSource::Timeout,
        };
        let stdin_future = async {
            match stdin_answer {
                Some(rx) => rx.await.ok(),
                None => std::future::pending().await,
            }
        };
        let ipc_future = async {
            match ipc_answer {
                Some(future) => future.await,
                None => std::future::pending().await,
            }
        };
        let outcome = tokio::time::timeout(self.timeout, async {
            tokio::pin!(stdin_future);
            tokio::pin!(ipc_future);
            let mut stdin_done = false;
            loop {
                tokio::select! {
                    answer = &mut stdin_future, if !stdin_done => match answer {
                        Some(decision) => return Some(Resolution { decision, source: DecisionSource::Client }),
                        // The client went away: fall back to the IPC, or deny.
                        None if self.ipc.is_some() => stdin_done = true,
                        None => return None,
                    },
                    answer = &mut ipc_future => return answer.map(|decision| Resolution { decision, source: DecisionSource::FileIpc }),
                }
            }
        })
        .await;
        if let Ok(mut pending) = self.pending.lock() {
            pending.remove(&request.request_id);
        }
        match outcome {
            Ok(Some(resolution)) => resolution,
            Ok(None) => Resolution {
                decision: PermissionDecision::deny(
                    "Permission denied: the client closed stdin before answering",
                ),
                source: DecisionSource::NoClient,
            },
            Err(_) => timeout_resolution(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn request(id: &str) -> PermissionRequest {
        PermissionRequest {
            request_id: id.into(),
            kind: RequestKind::Tool,
            tool_name: "Bash".into(),
            tool_kind: ToolKind::Execute,
            input: serde_json::json!({"command": "touch x"}),
            description: None,
            paths: vec![],
            tool_use_id: None,
            options: vec![DecisionKind::AllowOnce, DecisionKind::Deny],
            native: None,
        }
    }

    #[tokio::test]
    async fn the_watcher_hears_of_each_wait_and_the_answer_resolves_it() {
        let (tx, mut asked) = tokio::sync::mpsc::unbounded_channel();
        let broker =
            Arc::new(PermissionBroker::new(true, None, Duration::from_secs(5)).watched(tx));
        let waiting = {
            let broker = Arc::clone(&broker);
            tokio::spawn(async move { broker.ask(&request("w1")).await })
        };
        let seen = asked.recv().await.expect("the watcher is told");
        assert_eq!(seen.request_id, "w1");
        assert!(broker.answer("w1", PermissionDecision::new(DecisionKind::AllowSession)));
        let res = waiting.await.unwrap();
        assert_eq!(
            (res.source, res.decision.decision),
            (DecisionSource::Client, DecisionKind::AllowSession)
        );
        // Nobody can answer: the watcher is not told, the request is denied at once.
        broker.client_gone();
        assert_eq!(
            broker.ask(&request("w2")).await.source,
            DecisionSource::NoClient
        );
        assert!(asked.try_recv().is_err());
    }

    #[tokio::test]
    async fn nobody_to_ask_denies_at_once() {
        let broker = PermissionBroker::unattended();
        let res = broker.ask(&request("r1")).await;
        assert_eq!(res.source, DecisionSource::NoClient);
        assert_eq!(res.decision.decision, DecisionKind::Deny);
        assert!(res.decision.message.unwrap().contains("no client"));
    }

    #[tokio::test]
    async fn a_stdin_answer_resolves_the_request() {
        let broker = Arc::new(PermissionBroker::new(true, None, Duration::from_secs(5)));
        let b = Arc::clone(&broker);
        let asking = tokio::spawn(async move { b.ask(&request("r2")).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(broker.answer("r2", PermissionDecision::new(DecisionKind::AllowSession)));
        let res = asking.await.unwrap();
        assert_eq!(res.source, DecisionSource::Client);
        assert_eq!(res.decision.decision, DecisionKind::AllowSession);
    }

    #[tokio::test]
    async fn timeout_and_client_gone_deny() {
        let broker = PermissionBroker::new(true, None, Duration::from_millis(50));
        let res = broker.ask(&request("r3")).await;
        assert_eq!(res.source, DecisionSource::Timeout);
        let broker = Arc::new(PermissionBroker::new(true, None, Duration::from_secs(5)));
        let b = Arc::clone(&broker);
        let asking = tokio::spawn(async move { b.ask(&request("r4")).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        broker.client_gone();
        let res = asking.await.unwrap();
        assert_eq!(res.source, DecisionSource::NoClient);
        assert_eq!(res.decision.decision, DecisionKind::Deny);
    }

    #[tokio::test]
    async fn an_answer_that_arrives_before_the_wait_is_kept() {
        let broker = PermissionBroker::new(true, None, Duration::from_secs(5));
        assert!(broker.answer("r5", PermissionDecision::deny("early")));
        let res = broker.ask(&request("r5")).await;
        assert_eq!(res.source, DecisionSource::Client);
        assert_eq!(res.decision.message.as_deref(), Some("early"));
    }

    #[test]
    fn wire_shapes() {
        let cases = [
            (serde_json::json!("deny"), DecisionKind::Deny),
            (
                serde_json::json!("allow-always"),
                DecisionKind::AllowSession,
            ),
            (
                serde_json::json!({"behavior": "allow", "scope": "session"}),
                DecisionKind::AllowSession,
            ),
            (serde_json::json!({"allow": "true"}), DecisionKind::Deny),
            (
                serde_json::json!({"approved": true, "targetMode": "acceptEdits"}),
                DecisionKind::AllowOnce,
            ),
            (
                serde_json::json!({"answers": {"q": "a"}}),
                DecisionKind::AllowOnce,
            ),
            (
                serde_json::json!({"behavior": "cancel"}),
                DecisionKind::Cancel,
            ),
        ];
        for (wire, kind) in cases {
            assert_eq!(
                PermissionDecision::from_wire(&wire).unwrap().decision,
                kind,
                "{wire}"
            );
        }
        assert!(PermissionDecision::from_wire(&serde_json::json!("maybe")).is_err());
        assert!(PermissionDecision::from_wire(&serde_json::json!({"x": 1})).is_err());
    }
}
