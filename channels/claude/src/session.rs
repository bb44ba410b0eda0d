//! A warm Claude Code conversation: one `claude --input-format stream-json …` process for
//! the whole session, on Anthropic's endpoint or on a relay's ([`ClaudeConversation::relay`]).
//!
//! Each turn writes one stream-json user message and ends at that turn's `result` (every turn
//! starts with a fresh `system/init` line, so each gets a fresh [`ClaudeNormalizer`]). Between
//! turns:
//!
//! * a permission mode or model change goes to the running CLI as a stream-json control request
//!   (`set_permission_mode`, `set_model`) and is confirmed by its `control_response`;
//! * entering or leaving `bypassPermissions` cannot be done live (it is a launch flag the
//!   control request can neither add nor remove): the process is restarted with `--resume`,
//!   and a `status` event says so;
//! * a process that died between turns (crash, OOM, killed) is restarted with `--resume` on the
//!   next turn, with a `status` event saying so;
//! * `get_context_usage` / `get_usage` go to the running process as control requests too
//!   ([`Conversation::inquire`]: the daemon's `getContextUsage` / `getUsage`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bridge_core::conversation::{Continuity, Conversation, Inquiry, InquiryError};
use bridge_core::event::{ErrorCode, ErrorInfo, Event, UsageScope};
use bridge_core::request::{LaunchSettings, Request};
use bridge_core::session::{Engine, EngineIo, Lifetime, LineEngine, Process};
use bridge_core::turn::{Normalizer, TurnContext, TurnLimits};
use futures_util::future::BoxFuture;
use permission_mapper::{PermissionMode, RequestedMode, claude as claude_mode};
use serde_json::{Value, json};

use crate::relay::ClaudeRelay;
use crate::{ClaudeNormalizer, ID, INTERRUPT_REQUEST, approvals, build_command, user_message};

/// How long the CLI gets to confirm a control request between turns.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(10);

/// How long it gets to answer an inquiry (`get_context_usage` counts the conversation's tokens
/// with the model API; the plugin waits 180 s for the answer).
const INQUIRY_TIMEOUT: Duration = Duration::from_secs(90);

/// What the running process was launched or switched to.
#[derive(Debug, Clone, PartialEq)]
struct Running {
    mode: PermissionMode,
    model: Option<String>,
    launch: LaunchSettings,
}

/// A warm Claude Code conversation (see the [module docs](self)).
#[derive(Debug, Default)]
pub struct ClaudeConversation {
    /// The relay Claude Code is pointed at, if any (`minimax`, `zcode`, a user's).
    relay: Option<&'static ClaudeRelay>,
    process: Option<Process>,
    running: Option<Running>,
    session_id: Option<String>,
    /// A process of this conversation has been started before (a restart, not the first
    /// launch: only then may a missing transcript be the CLI's loss rather than a wrong id).
    launched: bool,
    /// The running process got [`crate::no_auto_mode_in_plan_request`] (each turn offers it
    /// until one streams; a live switch to plan sends it first if none has).
    auto_plan_off: bool,
    control_id: u64,
    /// What the running process has spent so far: its `result.total_cost_usd` is a running
    /// total for the process, not the turn's cost.
    spent_usd: Arc<Mutex<f64>>,
}

/// The Claude normalizer of one turn of a warm process: the turn's `usage` gets the turn's own
/// cost (the process's running total minus what it had spent before the turn).
struct TurnCost {
    inner: ClaudeNormalizer,
    spent_usd: Arc<Mutex<f64>>,
}

impl Normalizer for TurnCost {
    fn line(&mut self, line: &str, out: &mut Vec<Event>) {
        let start = out.len();
        self.inner.line(line, out);
        for event in &mut out[start..] {
            if let Event::Usage(usage) = event
                && usage.scope == UsageScope::Turn
                && let Some(total) = usage.cost_usd
                && let Ok(mut spent) = self.spent_usd.lock()
            {
                usage.cost_usd = Some((total - *spent).max(0.0));
                *spent = total;
            }
        }
    }

    fn session_id(&self) -> Option<String> {
        self.inner.session_id()
    }
}

impl ClaudeConversation {
    /// A conversation whose process starts with the first turn.
    pub fn new() -> Self {
        ClaudeConversation::default()
    }

    /// A conversation with Claude Code on `relay`'s endpoint.
    pub fn relay(relay: &'static ClaudeRelay) -> Self {
        ClaudeConversation {
            relay: Some(relay),
            ..ClaudeConversation::default()
        }
    }

    /// Provider key in messages (`claude`, or the relay's).
    fn provider(&self) -> &'static str {
        self.relay.map_or(ID, |relay| relay.id)
    }
}

fn mode_of(request: &Request) -> PermissionMode {
    RequestedMode::from_option(request.permission_mode.as_deref()).mode
}

/// Waits for the `control_response` to one control request.
struct ControlReply {
    request_id: String,
    outcome: Option<Result<Value, String>>,
}

impl Engine for ControlReply {
    fn stdout_line(&mut self, line: &str, io: &mut EngineIo) {
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            return;
        };
        let response = &value["response"];
        if value["type"] == "control_response"
            && response["request_id"].as_str() == Some(&self.request_id)
        {
            self.outcome = Some(match response["subtype"].as_str() {
                Some("success") => Ok(response["response"].clone()),
                _ => Err(response["error"]
                    .as_str()
                    .unwrap_or("the CLI refused it")
                    .to_string()),
            });
            io.done();
        }
    }

    fn session_id(&self) -> Option<String> {
        None
    }
}

impl ClaudeConversation {
    /// Sends one control request to the running process and waits for its answer.
    async fn control(&mut self, ctx: &TurnContext, request: Value) -> Result<Value, String> {
        self.control_within(ctx, request, CONTROL_TIMEOUT).await
    }

    /// [`ClaudeConversation::control`] with its own deadline.
    async fn control_within(
        &mut self,
        ctx: &TurnContext,
        request: Value,
        timeout: Duration,
    ) -> Result<Value, String> {
        let Some(process) = self.process.as_mut() else {
            return Err("the CLI is not running".into());
        };
        self.control_id += 1;
        let request_id = format!("bridge-control-{}", self.control_id);
        let line = json!({"type": "control_request", "request_id": request_id, "request": request});
        let mut reply = ControlReply {
            request_id,
            outcome: None,
        };
        let sent = process
            .step(&mut reply, ctx, format!("{line}\n").into_bytes(), timeout)
            .await;
        match (sent, reply.outcome) {
            (Ok(()), Some(outcome)) => outcome,
            (Ok(()), None) => Err("no answer".into()),
            (Err(failure), _) => Err(format!("{failure:?}")),
        }
    }

    /// Applies what changed since the last turn; returns false when the process must restart.
    async fn apply_changes(&mut self, request: &Request, ctx: &TurnContext) -> bool {
        let Some(running) = self.running.clone() else {
            return false;
        };
        let wanted = Running {
            mode: mode_of(request),
            model: request.model.clone(),
            launch: request.launch_settings(),
        };
        let changed = running.launch.changed(&wanted.launch);
        if !changed.is_empty() {
            ctx.emit(Event::status(format!(
                "restarting Claude Code with --resume: the request changed {}, which it takes only at launch",
                changed.join(", ")
            )))
            .await;
            return false;
        }
        let bypass = |mode: PermissionMode| {
            claude_mode::to_provider(mode) == claude_mode::ClaudeMode::BypassPermissions
        };
        if bypass(running.mode) != bypass(wanted.mode) {
            ctx.emit(Event::status(format!(
                "restarting Claude Code with --resume to change the permission mode from {} to {}: bypassPermissions is a launch flag it cannot change live",
                running.mode.as_str(),
                wanted.mode.as_str()
            )))
            .await;
            return false;
        }
        let to_plan = claude_mode::to_provider(wanted.mode) == claude_mode::ClaudeMode::Plan;
        if running.mode != wanted.mode && to_plan && !self.auto_plan_off {
            if let Err(why) = self
                .control(ctx, crate::no_auto_mode_in_plan_request())
                .await
            {
                ctx.emit(Event::status(format!(
                    "Claude Code did not take the plan-mode settings live ({why}); restarting it with --resume"
                )))
                .await;
                return false;
            }
            self.auto_plan_off = true;
        }
        if running.mode != wanted.mode {
            let mode = claude_mode::to_provider(wanted.mode).as_str();
            let request = json!({"subtype": "set_permission_mode", "mode": mode});
            match self.control(ctx, request).await {
                Ok(_) => {
                    ctx.emit(Event::status(format!("permission mode is now {mode}")))
                        .await;
                }
                Err(why) => {
                    ctx.emit(Event::status(format!(
                        "Claude Code did not take permission mode {mode} live ({why}); restarting it with --resume"
                    )))
                    .await;
                    return false;
                }
            }
        }
        if running.model != wanted.model {
            let model = wanted.model.clone().unwrap_or_else(|| "default".into());
            let request = json!({"subtype": "set_model", "model": model});
            match self.control(ctx, request).await {
                Ok(_) => {
                    ctx.emit(Event::status(format!("model is now {model}")))
                        .await
                }
                Err(why) => {
                    ctx.emit(Event::status(format!(
                        "Claude Code did not take model {model} live ({why}); restarting it with --resume"
                    )))
                    .await;
                    return false;
                }
            };
        }
        self.running = Some(wanted);
        true
    }

    /// Starts the CLI for `request` (resuming the session when there is one).
    async fn start(&mut self, request: &Request, ctx: &TurnContext) -> Result<(), ErrorInfo> {
        let probe = self.relay.map_or(crate::PROBE, ClaudeRelay::probe);
        let env = sdk_probe::ProbeEnv::from_process();
        let located = sdk_probe::locate(&probe, &env)
            .map_err(|message| ErrorInfo::new(ErrorCode::CliNotFound, message))?;
        for warning in located.warnings {
            ctx.emit(Event::warning("cli_path", warning)).await;
        }
        if let Some(check) = sdk_probe::turn_version_check(probe, &located.resolved) {
            ctx.warn_later("untested_version", check);
        }
        let mut request = request.clone();
        request.session_id = self.session_id.clone().or(request.session_id);
        let lost = self.launched
            && request.session_id.as_deref().is_some_and(|id| {
                crate::history::config_dir(&env)
                    .is_some_and(|dir| !crate::history::session_saved(&dir, id))
            });
        let lost = if lost {
            request.session_id.take()
        } else {
            None
        };
        let program: PathBuf = located.resolved.path;
        let (mut command, warnings) = build_command(program, &request);
        if let Some(id) = lost {
            // The CLI died before it flushed the transcript: `--resume` would fail on every
            // later turn. The conversation goes on under the same id, without what was lost.
            command.arg("--session-id").arg(&id);
            ctx.emit(Event::warning(
                "history_lost",
                format!(
                    "Claude Code exited before it saved session {id}; it starts again under the same id without the earlier turns"
                ),
            ))
            .await;
        }
        if let Some(relay) = self.relay {
            relay
                .configure(&mut command, &request, &env)
                .map_err(|e| ErrorInfo::new(e.code, e.message))?;
        }
        for warning in warnings {
            ctx.emit(warning).await;
        }
        self.process = Some(Process::spawn(self.provider(), &command, ctx)?);
        self.launched = true;
        self.auto_plan_off = false;
        // A new process starts its running total at zero.
        if let Ok(mut spent) = self.spent_usd.lock() {
            *spent = 0.0;
        }
        self.running = Some(Running {
            mode: mode_of(&request),
            model: request.model.clone(),
            launch: request.launch_settings(),
        });
        Ok(())
    }

    async fn run(&mut self, request: Request, ctx: TurnContext) {
        if self.session_id.is_none() {
            self.session_id.clone_from(&request.session_id);
        }
        if let Some(process) = self.process.as_mut()
            && !process.check_alive()
        {
            let how = process
                .exit_description()
                .unwrap_or_else(|| "stopped".into());
            let pid = process.pid().unwrap_or_default();
            ctx.emit(Event::status(format!(
                "Claude Code (pid {pid}) exited between turns ({how}); restarting it{}",
                self.session_id
                    .as_ref()
                    .map(|id| format!(" with --resume {id}"))
                    .unwrap_or_default()
            )))
            .await;
            self.process = None;
        }
        if self.process.is_some()
            && !self.apply_changes(&request, &ctx).await
            && let Some(mut process) = self.process.take()
        {
            process.shutdown(ctx.limits).await;
        }
        if self.process.is_none()
            && let Err(info) = self.start(&request, &ctx).await
        {
            ctx.fail(info, self.session_id.clone()).await;
            return;
        }
        let message = match user_message(&request) {
            Ok(message) => message,
            Err(message) => {
                let info = ErrorInfo::new(ErrorCode::InvalidRequest, message);
                ctx.fail(info, self.session_id.clone()).await;
                return;
            }
        };
        let Some(process) = self.process.as_mut() else {
            return;
        };
        let responder = approvals::ClaudeResponder::new(mode_of(&request));
        let normalizer = TurnCost {
            inner: self
                .relay
                .map_or_else(ClaudeNormalizer::new, ClaudeRelay::normalizer),
            spent_usd: Arc::clone(&self.spent_usd),
        };
        let mut engine = LineEngine::new(
            Box::new(normalizer),
            Some(Arc::new(responder)),
            Some(INTERRUPT_REQUEST.as_bytes().to_vec()),
        )
        .with_deferred((!self.auto_plan_off).then(crate::no_auto_mode_in_plan));
        process
            .run_turn(&mut engine, &ctx, message.into_bytes(), Lifetime::Warm)
            .await;
        self.auto_plan_off |= engine.deferred_written();
        if let Some(id) = engine.session_id() {
            self.session_id = Some(id);
        }
        if !process.check_alive() {
            self.process = None;
        }
    }
}

impl Conversation for ClaudeConversation {
    fn continuity(&self) -> Continuity {
        Continuity::WarmProcess
    }

    fn turn<'a>(&'a mut self, request: Request, ctx: TurnContext) -> BoxFuture<'a, ()> {
        Box::pin(self.run(request, ctx))
    }

    fn close<'a>(&'a mut self, limits: TurnLimits) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Some(mut process) = self.process.take() {
                process.shutdown(limits).await;
            }
        })
    }

    fn prepare<'a>(
        &'a mut self,
        request: &'a Request,
        ctx: &'a TurnContext,
    ) -> BoxFuture<'a, Result<(), ErrorInfo>> {
        Box::pin(async move {
            if self.session_id.is_none() {
                self.session_id.clone_from(&request.session_id);
            }
            if self.process.as_mut().is_some_and(|p| p.check_alive()) {
                return Ok(());
            }
            // Claude Code reads its first stream-json message whenever it comes: starting it
            // now is all a pre-connect can do.
            self.start(request, ctx).await
        })
    }

    fn inquire<'a>(
        &'a mut self,
        inquiry: Inquiry,
        ctx: &'a TurnContext,
    ) -> BoxFuture<'a, Result<Value, InquiryError>> {
        Box::pin(async move {
            if !self.process.as_mut().is_some_and(|p| p.check_alive()) {
                return Err(InquiryError::NotRunning);
            }
            let subtype = match inquiry {
                Inquiry::ContextUsage => "get_context_usage",
                Inquiry::Usage => "get_usage",
                Inquiry::Models => {
                    // The SDK's first request; Claude Code answers it at any point between
                    // turns, with the model list `listModels` starts a CLI for.
                    let initialize = json!({"subtype": "initialize", "hooks": null});
                    let reply = self
                        .control_within(ctx, initialize, INQUIRY_TIMEOUT)
                        .await
                        .map_err(|why| InquiryError::Failed(format!("initialize: {why}")))?;
                    let list = crate::models::models_of(&reply).map_err(InquiryError::Failed)?;
                    return serde_json::to_value(list)
                        .map_err(|e| InquiryError::Failed(e.to_string()));
                }
            };
            self.control_within(ctx, json!({"subtype": subtype}), INQUIRY_TIMEOUT)
                .await
                .map_err(|why| InquiryError::Failed(format!("{subtype}: {why}")))
        })
    }

    fn pid(&self) -> Option<u32> {
        self.process
            .as_ref()
            .filter(|process| process.is_alive())
            .and_then(Process::pid)
            .and_then(|pid| u32::try_from(pid).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(total: f64) -> String {
        json!({"type": "result", "subtype": "success", "is_error": false, "result": "ok",
               "session_id": "s-1", "total_cost_usd": total,
               "usage": {"input_tokens": 100, "output_tokens": 20}})
        .to_string()
    }

    fn turn_cost(spent: &Arc<Mutex<f64>>, line: &str) -> Option<f64> {
        let mut normalizer = TurnCost {
            inner: ClaudeNormalizer::new(),
            spent_usd: Arc::clone(spent),
        };
        let mut out = Vec::new();
        normalizer.line(line, &mut out);
        out.iter().find_map(|e| match e {
            Event::Usage(u) if u.scope == UsageScope::Turn => u.cost_usd,
            _ => None,
        })
    }

    #[test]
    fn each_turn_of_a_warm_process_reports_its_own_cost() {
        let spent = Arc::new(Mutex::new(0.0));
        let first = turn_cost(&spent, &result(0.001)).unwrap();
        let second = turn_cost(&spent, &result(0.0025)).unwrap();
        assert!((first - 0.001).abs() < 1e-12, "{first}");
        assert!(
            (second - 0.0015).abs() < 1e-12,
            "the running total minus turn 1: {second}"
        );
    }
}
