//! The engine against misbehaving fake agents (`tests/fake_agent.py`): an agent that never
//! answers `initialize`, one that prints garbage, one that answers nonsense, one that dies or
//! hangs mid-prompt, a 2 MB line, a file-system request. Each yields a clear error (or the
//! documented handling) within its deadline, and the process is gone afterwards.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use bridge_acp::{AcpProvider, launch, run_launch};
use bridge_core::event::{ErrorCode, Event};
use bridge_core::request::Request;
use bridge_core::turn::{TurnContext, TurnLimits};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const PROBE: sdk_probe::ProbeSpec = sdk_probe::ProbeSpec::new("fake", "Fake agent", &["python3"]);
static FAKE: AcpProvider = AcpProvider::new(PROBE);

fn agent() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fake_agent.py")
}

/// Runs one turn against `behaviour` with `limits`; returns the events and the wall time.
async fn turn(behaviour: &str, limits: TurnLimits) -> (Vec<Event>, Duration) {
    turn_resuming(behaviour, None, limits).await
}

/// [`turn`], resuming `session` when given.
async fn turn_resuming(
    behaviour: &str,
    session: Option<&str>,
    limits: TurnLimits,
) -> (Vec<Event>, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let request = Request {
        cwd: Some(dir.path().to_path_buf()),
        session_id: session.map(str::to_string),
        ..Request::from_prompt("hi")
    };
    let mut launch = launch(&FAKE, PathBuf::from("python3"), &request);
    launch.command.args = vec![agent().into(), behaviour.into()];
    // A short handshake deadline where the test is about it; a roomy one elsewhere, so a busy
    // machine starting python slowly does not fail an unrelated test.
    let handshake = if matches!(behaviour, "silent" | "garbage" | "bad-init") {
        2
    } else {
        20
    };
    launch.config.handshake_timeout = Duration::from_secs(handshake);
    let (tx, mut rx) = mpsc::channel(1024);
    let ctx = TurnContext::new(tx, CancellationToken::new(), limits);
    let started = Instant::now();
    let task = tokio::spawn(run_launch(launch, request, ctx));
    let mut events = Vec::new();
    while let Some(event) = rx.recv().await {
        events.push(event);
    }
    task.await.unwrap();
    let elapsed = started.elapsed();
    let ends = events
        .iter()
        .filter(|e| matches!(e, Event::TurnEnd(_)))
        .count();
    assert_eq!(ends, 1, "exactly one turn end: {events:?}");
    assert!(
        matches!(events.last(), Some(Event::TurnEnd(_))),
        "{events:?}"
    );
    (events, elapsed)
}

fn error(events: &[Event]) -> (ErrorCode, String) {
    events
        .iter()
        .find_map(|e| match e {
            Event::Error(info) => Some((info.code, info.message.clone())),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no error in {events:?}"))
}

fn short() -> TurnLimits {
    TurnLimits {
        kill_grace: Duration::from_millis(500),
        exit_grace: Duration::from_secs(1),
        ..TurnLimits::default()
    }
}

#[tokio::test]
async fn an_agent_that_never_answers_initialize_is_killed_and_reported() {
    let (events, elapsed) = turn("silent", short()).await;
    let (code, message) = error(&events);
    assert_eq!(code, ErrorCode::IdleTimeout);
    assert!(
        message.contains("did not answer `initialize` within 2 s"),
        "{message}"
    );
    assert!(elapsed < Duration::from_secs(6), "{elapsed:?}");
}

#[tokio::test]
async fn an_agent_that_prints_garbage_is_named_as_such() {
    let (events, elapsed) = turn("garbage", short()).await;
    let (_, message) = error(&events);
    assert!(message.contains("not JSON-RPC"), "{message}");
    assert!(
        message.contains("this is not JSON-RPC, line 0"),
        "{message}"
    );
    assert!(message.contains("is this an ACP agent?"), "{message}");
    let warnings = events
        .iter()
        .filter(|e| matches!(e, Event::Warning { code, .. } if code == "unparsed_line"))
        .count();
    assert!(
        (1..=5).contains(&warnings),
        "warnings are capped: {warnings}"
    );
    assert!(elapsed < Duration::from_secs(6), "{elapsed:?}");
}

#[tokio::test]
async fn a_nonsense_initialize_answer_is_an_error() {
    let (events, _) = turn("bad-init", short()).await;
    let (code, message) = error(&events);
    assert_eq!(code, ErrorCode::Provider);
    assert!(
        message.contains("not an ACP initialize result"),
        "{message}"
    );
}

#[tokio::test]
async fn an_agent_that_dies_mid_prompt_is_an_early_exit_with_its_stderr() {
    let (events, elapsed) = turn("die-mid-prompt", short()).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::TextDelta { text } if text == "partial "))
    );
    let info = events
        .iter()
        .find_map(|e| match e {
            Event::Error(info) => Some(info.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(info.code, ErrorCode::ExitedEarly);
    assert!(info.message.contains("exit code 3"), "{}", info.message);
    assert!(
        info.stderr_tail
            .as_deref()
            .unwrap_or("")
            .contains("simulated crash"),
        "{info:?}"
    );
    assert!(matches!(events.last(), Some(Event::TurnEnd(t)) if !t.success));
    assert!(elapsed < Duration::from_secs(15), "{elapsed:?}");
}

#[tokio::test]
async fn an_agent_that_hangs_mid_prompt_hits_the_idle_deadline() {
    let limits = TurnLimits {
        idle: Duration::from_secs(2),
        ..short()
    };
    let (events, elapsed) = turn("hang-in-prompt", limits).await;
    let (code, message) = error(&events);
    assert_eq!(code, ErrorCode::IdleTimeout);
    assert!(message.contains("idle deadline"), "{message}");
    assert!(elapsed < Duration::from_secs(15), "{elapsed:?}");
}

#[tokio::test]
async fn a_huge_line_is_skipped_with_bounded_memory() {
    let limits = TurnLimits {
        max_line_bytes: 64 * 1024,
        ..short()
    };
    let (events, _) = turn("huge-line", limits).await;
    assert!(
        events.iter().any(|e| matches!(e, Event::Warning { code, message } if code == "line_too_long" && message.contains("2000000"))),
        "{events:?}"
    );
    assert!(
        matches!(events.last(), Some(Event::TurnEnd(t)) if t.success && t.result.as_deref() == Some("partial done"))
    );
}

#[tokio::test]
async fn file_system_requests_are_refused_honestly() {
    let (events, _) = turn("fs-request", short()).await;
    assert!(
        events.iter().any(|e| matches!(e, Event::Warning { code, message } if code == "client_method_refused" && message.contains("fs/read_text_file"))),
        "{events:?}"
    );
    let Some(Event::TurnEnd(end)) = events.last() else {
        panic!()
    };
    assert!(end.success);
    assert_eq!(
        end.result.as_deref(),
        Some("partial client answered fs with error -32601")
    );
}

#[tokio::test]
async fn a_normal_turn_reports_session_and_strategy() {
    let (events, _) = turn("ok", short()).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::SessionId { id } if id == "fake-1"))
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Status(s) if s.message.contains("session/new")))
    );
    assert!(
        matches!(events.last(), Some(Event::TurnEnd(t)) if t.success && t.result.as_deref() == Some("partial done"))
    );
}

#[tokio::test]
async fn a_load_that_replays_history_resumes_the_session() {
    let (events, _) = turn_resuming("load-history", Some("s-42"), short()).await;
    assert!(
        events.iter().any(
            |e| matches!(e, Event::Status(s) if s.message.contains("session/load (1 replayed"))
        )
    );
    assert!(
        matches!(events.last(), Some(Event::TurnEnd(t)) if t.success && t.session_id.as_deref() == Some("s-42"))
    );
}

/// An agent that answers a load of an unknown id with a fresh session (Qwen Code 0.15.10) must
/// not turn a mistyped id into a silent new conversation.
#[tokio::test]
async fn a_load_that_replays_nothing_is_an_unknown_session() {
    let (events, _) = turn_resuming("load-empty", Some("s-typo"), short()).await;
    let (code, message) = error(&events);
    assert_eq!(code, ErrorCode::Provider);
    assert!(
        message.contains("no session s-typo") && message.contains("replayed no history"),
        "{message}"
    );
    assert!(matches!(events.last(), Some(Event::TurnEnd(t)) if !t.success));
}
