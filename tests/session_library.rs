//! The session API as a library user drives it: `bridge::router()` → [`Session::open`] → two
//! turns against the real Claude Code CLI and the project's mock model server (inside the
//! loopback-only network namespace), one warm process.

mod common;

use bridge::core::conversation::{Session, SessionOptions};
use bridge::core::event::Event;
use bridge::core::request::Request;
use common::*;
use futures_util::StreamExt;
use serde_json::json;
use tokio_util::sync::CancellationToken;

async fn turn(session: &Session, request: serde_json::Value) -> Vec<Event> {
    let request = Request::from_value(request).expect("a valid request");
    session
        .turn(Ok(request), CancellationToken::new())
        .collect()
        .await
}

fn answer(events: &[Event]) -> (bool, String) {
    match events.last() {
        Some(Event::TurnEnd(end)) => (end.success, end.result.clone().unwrap_or_default()),
        other => panic!("the last event is not a turn end: {other:?}"),
    }
}

#[test]
fn two_turns_through_the_public_session_api() {
    let mock = Mock::start();
    let sandbox = Sandbox::new();
    // This test binary has one test: setting the environment before the runtime starts races
    // nothing. The CLI's config stays in the sandbox.
    // SAFETY: single-threaded at this point (no runtime, no other test in this binary).
    unsafe {
        std::env::set_var("HOME", sandbox.home());
        std::env::set_var("CLAUDE_CONFIG_DIR", sandbox.home().join(".claude"));
        std::env::set_var("CLAUDE_CODE_PATH", cli_path("claude"));
        std::env::set_var("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
        std::env::set_var("DISABLE_AUTOUPDATER", "1");
        std::env::set_var("CLAUDE_CODE_MAX_RETRIES", "1");
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let channel = bridge::router()
            .get("claude")
            .expect("claude is registered");
        let session = Session::open(channel, SessionOptions::default());
        let base = json!({"cwd": sandbox.work(), "baseUrl": mock.url(), "apiKey": CANARY_KEY});
        let mut first = base.clone();
        first["message"] = json!("MOCK:text first turn");
        let events = turn(&session, first).await;
        assert!(
            matches!(events.first(), Some(Event::TurnStart { provider }) if provider == "claude")
        );
        assert!(answer(&events).0, "{events:?}");
        assert!(
            !format!("{events:?}").contains(CANARY_KEY),
            "the key never reaches an event"
        );
        let id = session
            .session_id()
            .expect("the session has its id after turn 1");
        let mut second = base.clone();
        second["message"] = json!("MOCK:recall what did I say?");
        let events = turn(&session, second).await;
        let (success, text) = answer(&events);
        assert!(success, "{events:?}");
        assert!(
            text.contains("first turn"),
            "turn 2 did not see turn 1: {text}"
        );
        assert_eq!(session.session_id().as_deref(), Some(id.as_str()));
        // An invalid request is refused by the session itself, as `send` refuses it.
        let events = session
            .turn(
                Request::from_json(b"{\"message\": 42}"),
                CancellationToken::new(),
            )
            .collect::<Vec<_>>()
            .await;
        assert!(matches!(events.first(), Some(Event::TurnStart { .. })));
        assert!(
            events.iter().any(|e| matches!(e, Event::Error(_))),
            "{events:?}"
        );
        assert!(!answer(&events).0);
        session.close().await;
    });
}
