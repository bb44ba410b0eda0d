//! Every row of the reference tables (ai-bridge-protocol.md §5.1, §5.2, §5.3 and the
//! `permission-mapper.test.js` assertions of §5.4), written as tables.

use permission_mapper::codex::{self, CodexApproval, CodexOverrides, CodexSandbox, CodexSettings};
use permission_mapper::{
    ModeAlias, NoteKind, ParseError, PermissionMode, Platform, Recognition, RequestedMode,
    UnifiedMode, claude,
};
use serde_json::json;

use ModeAlias::{AcceptEdits as AliasAcceptEdits, BypassPermissions as AliasBypass};
use UnifiedMode::{Default as CoreDefault, Sandbox as CoreSandbox, Yolo as CoreYolo};

/// `normalizeUnifiedMode`, as this crate computes it.
fn normalize(input: Option<&str>) -> (UnifiedMode, Option<ModeAlias>) {
    let m = RequestedMode::from_option(input).mode;
    (m.unified(), m.alias())
}

// ---- §5.1 `normalizeUnifiedMode` -------------------------------------------------------------

#[test]
fn s5_1_normalize_unified_mode_table() {
    #[rustfmt::skip]
    let table: &[(Option<&str>, UnifiedMode, Option<ModeAlias>)] = &[
        // null / empty → default, no alias
        (None,                      CoreDefault, None),
        (Some(""),                  CoreDefault, None),
        // bypassPermissions → yolo + alias
        (Some("bypassPermissions"), CoreYolo,    Some(AliasBypass)),
        // acceptEdits, autoEdit → default + alias acceptEdits
        (Some("acceptEdits"),       CoreDefault, Some(AliasAcceptEdits)),
        (Some("autoEdit"),          CoreDefault, Some(AliasAcceptEdits)),
        // plan, sandbox → sandbox
        (Some("plan"),              CoreSandbox, None),
        (Some("sandbox"),           CoreSandbox, None),
        // yolo → yolo
        (Some("yolo"),              CoreYolo,    None),
        // anything else (incl. auto) → default
        (Some("auto"),              CoreDefault, None),
        (Some("default"),           CoreDefault, None),
        (Some("unknown-mode"),      CoreDefault, None),
        (Some("dontAsk"),           CoreDefault, None),
    ];
    for &(input, core, alias) in table {
        assert_eq!(normalize(input), (core, alias), "input {input:?}");
    }
}

#[test]
fn s5_1_normalize_is_case_insensitive() {
    #[rustfmt::skip]
    let table: &[(&str, UnifiedMode, Option<ModeAlias>)] = &[
        ("BYPASSPERMISSIONS", CoreYolo,    Some(AliasBypass)),
        ("bypasspermissions", CoreYolo,    Some(AliasBypass)),
        ("ACCEPTEDITS",       CoreDefault, Some(AliasAcceptEdits)),
        ("AutoEdit",          CoreDefault, Some(AliasAcceptEdits)),
        ("PLAN",              CoreSandbox, None),
        ("SandBox",           CoreSandbox, None),
        ("YOLO",              CoreYolo,    None),
        ("AUTO",              CoreDefault, None),
    ];
    for &(input, core, alias) in table {
        assert_eq!(normalize(Some(input)), (core, alias), "input {input:?}");
    }
}

#[test]
fn s5_1_unknown_is_reported_so_the_caller_can_warn() {
    #[rustfmt::skip]
    let table: &[(Option<&str>, Recognition)] = &[
        (None,                Recognition::Missing),
        (Some(""),            Recognition::Missing),
        (Some("auto"),        Recognition::Unknown),
        (Some("unknown-mode"),Recognition::Unknown),
        (Some("autoEdit"),    Recognition::Known),
        (Some("YOLO"),        Recognition::Known),
    ];
    for &(input, recognition) in table {
        let r = RequestedMode::from_option(input);
        assert_eq!(r.recognition, recognition, "input {input:?}");
        assert_eq!(r.raw.as_deref(), input);
        assert_eq!(
            r.warning().is_some(),
            recognition == Recognition::Unknown,
            "input {input:?}"
        );
    }
}

// ---- §5.2 Codex mapping ----------------------------------------------------------------------

#[test]
fn s5_2_codex_to_provider_table_both_platforms() {
    use CodexApproval::{Never, OnRequest};
    use CodexSandbox::{DangerFullAccess as Dfa, ReadOnly as Ro, WorkspaceWrite as Ww};
    // (input, skipGitRepoCheck, sandbox on Unix, sandbox on Windows, approvalPolicy)
    #[rustfmt::skip]
    let table: &[(Option<&str>, bool, CodexSandbox, CodexSandbox, CodexApproval)] = &[
        (Some("bypassPermissions"), true, Ww,  Dfa, Never),
        (Some("acceptEdits"),       true, Ww,  Dfa, OnRequest),
        (Some("autoEdit"),          true, Ww,  Dfa, OnRequest),
        (Some("plan"),              true, Ro,  Ro,  OnRequest),
        (Some("sandbox"),           true, Ro,  Ro,  OnRequest),
        (Some("yolo"),              true, Dfa, Dfa, Never),
        (Some("default"),           true, Ww,  Dfa, OnRequest),
        (Some("other"),             true, Ww,  Dfa, OnRequest),
        (Some("auto"),              true, Ww,  Dfa, OnRequest),
        (Some(""),                  true, Ww,  Dfa, OnRequest),
        (None,                      true, Ww,  Dfa, OnRequest),
    ];
    for &(input, skip, unix, windows, approval) in table {
        let mode = RequestedMode::from_option(input).mode;
        for (platform, sandbox) in [(Platform::Unix, unix), (Platform::Windows, windows)] {
            assert_eq!(
                codex::to_provider(mode, platform),
                CodexSettings {
                    skip_git_repo_check: skip,
                    sandbox,
                    approval_policy: approval
                },
                "input {input:?} on {platform:?}"
            );
        }
    }
}

#[test]
fn s5_2_codex_from_provider_table() {
    #[rustfmt::skip]
    let table: &[(Option<&str>, PermissionMode)] = &[
        (Some("read-only"),          PermissionMode::Sandbox),
        (Some("danger-full-access"), PermissionMode::Yolo),
        (Some("workspace-write"),    PermissionMode::Default),
        (Some("untrusted"),          PermissionMode::Default),
        (Some("something-else"),     PermissionMode::Default),
        (Some(""),                   PermissionMode::Default),
        (None,                       PermissionMode::Default),
    ];
    for &(sandbox, expected) in table {
        assert_eq!(
            codex::from_provider(sandbox),
            expected,
            "sandbox {sandbox:?}"
        );
    }
}

#[test]
fn s5_2_codex_round_trip_keeps_the_unified_core_where_the_table_allows() {
    // to_provider then from_provider keeps the core for sandbox and yolo rows; ws rows read back as
    // default (bypassPermissions included: its sandbox is workspace-write).
    #[rustfmt::skip]
    let table: &[(PermissionMode, PermissionMode)] = &[
        (PermissionMode::Default,           PermissionMode::Default),
        (PermissionMode::AcceptEdits,       PermissionMode::Default),
        (PermissionMode::Plan,              PermissionMode::Sandbox),
        (PermissionMode::Sandbox,           PermissionMode::Sandbox),
        (PermissionMode::Yolo,              PermissionMode::Yolo),
        (PermissionMode::BypassPermissions, PermissionMode::Default),
    ];
    for &(mode, back) in table {
        let s = codex::to_provider(mode, Platform::Unix);
        assert_eq!(codex::from_settings(&s), back, "{mode}");
        assert_eq!(
            codex::from_provider(Some(s.sandbox.as_str())),
            back,
            "{mode}"
        );
    }
}

/// Issue 4 item 3, in the plugin's JSON spelling.
#[test]
fn issue_4_yolo_and_read_only_json() {
    let yolo = codex::to_provider(PermissionMode::parse("yolo").mode, Platform::Unix);
    assert_eq!(
        serde_json::to_value(yolo).unwrap(),
        json!({"skipGitRepoCheck": true, "sandbox": "danger-full-access", "approvalPolicy": "never"})
    );
    let cfg: serde_json::Value = json!({"sandbox": "read-only"});
    assert_eq!(
        codex::from_provider(cfg["sandbox"].as_str()),
        PermissionMode::Sandbox
    );
    assert_eq!(PermissionMode::Sandbox.as_str(), "sandbox");
}

#[test]
fn s5_2_override_validity() {
    // Valid sandbox ∈ {read-only, workspace-write, danger-full-access};
    // approval ∈ {never, on-request, on-failure}; anything else ignored with a reason.
    #[rustfmt::skip]
    let sandboxes: &[(&str, Option<CodexSandbox>)] = &[
        ("read-only",          Some(CodexSandbox::ReadOnly)),
        ("workspace-write",    Some(CodexSandbox::WorkspaceWrite)),
        ("danger-full-access", Some(CodexSandbox::DangerFullAccess)),
        ("full-access",        None),
        ("readonly",           None),
        ("yolo",               None),
    ];
    for &(value, expected) in sandboxes {
        for (var, o) in [
            (
                "CODEX_SANDBOX_MODE",
                CodexOverrides {
                    sandbox_mode: Some(value.into()),
                    ..Default::default()
                },
            ),
            (
                "CODEX_SANDBOX",
                CodexOverrides {
                    sandbox: Some(value.into()),
                    ..Default::default()
                },
            ),
        ] {
            let r = o.resolve();
            assert_eq!(r.sandbox.map(|(_, s)| s), expected, "{var}={value}");
            assert_eq!(r.sandbox.map(|(v, _)| v).unwrap_or(var), var);
            assert_eq!(
                r.ignored.len(),
                usize::from(expected.is_none()),
                "{var}={value}"
            );
            if expected.is_none() {
                assert_eq!(r.ignored[0].var, var);
                assert_eq!(
                    r.ignored[0].reason,
                    ParseError::UnknownCodexSandbox(value.into())
                );
            }
        }
    }
    #[rustfmt::skip]
    let approvals: &[(&str, Result<CodexApproval, ParseError>)] = &[
        ("never",      Ok(CodexApproval::Never)),
        ("on-request", Ok(CodexApproval::OnRequest)),
        ("on-failure", Ok(CodexApproval::OnFailure)),
        ("untrusted",  Err(ParseError::UntrustedApproval)),
        ("always",     Err(ParseError::UnknownCodexApproval("always".into()))),
    ];
    for (value, expected) in approvals {
        let o = CodexOverrides {
            approval_policy: Some((*value).into()),
            ..Default::default()
        };
        let r = o.resolve();
        match expected {
            Ok(a) => {
                assert_eq!(r.approval_policy, Some(("CODEX_APPROVAL_POLICY", *a)));
                assert!(r.ignored.is_empty());
            }
            Err(e) => {
                assert_eq!(r.approval_policy, None, "{value}");
                assert_eq!(&r.ignored[0].reason, e, "{value}");
            }
        }
    }
}

/// "The effective Codex run is: approval `never` only for bypassPermissions, and the sandbox is
/// whatever the user configured": the Java plugin's overrides, applied.
#[test]
fn s5_2_plugin_overrides_give_the_documented_effective_run() {
    for configured in ["workspace-write", "danger-full-access"] {
        for mode in PermissionMode::ALL {
            // What CodexSDKBridge sets.
            let approval = if mode == PermissionMode::BypassPermissions {
                "never"
            } else {
                "on-request"
            };
            let env = CodexOverrides::from_env(|k| match k {
                "CODEX_SANDBOX_MODE" | "CODEX_SANDBOX" => Some(configured.into()),
                "CODEX_APPROVAL_POLICY" => Some(approval.into()),
                _ => None,
            });
            let eff = codex::effective(&mode.into(), Platform::Unix, &env);
            assert_eq!(eff.settings.sandbox.as_str(), configured, "{mode}");
            assert_eq!(eff.settings.approval_policy.as_str(), approval, "{mode}");
            // Every change the overrides made is in the notes.
            let mapped = codex::to_provider(mode, Platform::Unix);
            let changes = usize::from(mapped.sandbox != eff.settings.sandbox)
                + usize::from(mapped.approval_policy != eff.settings.approval_policy);
            let override_notes = eff
                .notes
                .iter()
                .filter(|n| n.kind == NoteKind::Override)
                .count();
            assert_eq!(override_notes, changes, "{mode}: {:?}", eff.notes);
        }
    }
}

#[test]
fn s5_2_stripped_env() {
    assert_eq!(
        codex::STRIPPED_ENV,
        [
            "CODEX_APPROVAL_POLICY",
            "CODEX_SANDBOX_MODE",
            "CODEX_SANDBOX",
            "CODEX_SANDBOX_NETWORK_DISABLED",
            "CODEX_CI"
        ]
    );
}

// ---- §5.4 `utils/permission-mapper.test.js` ------------------------------------------------

const INPUTS_5_4: [Option<&str>; 10] = [
    Some("default"),
    Some("sandbox"),
    Some("yolo"),
    Some("bypassPermissions"),
    Some("acceptEdits"),
    Some("autoEdit"),
    Some("plan"),
    Some("unknown-mode"),
    None, // null
    None, // undefined
];

#[test]
fn s5_4_approval_policy_is_never_untrusted_and_always_valid() {
    for input in INPUTS_5_4 {
        for platform in [Platform::Unix, Platform::Windows] {
            let s = codex::to_provider(RequestedMode::from_option(input).mode, platform);
            let json = serde_json::to_value(s).unwrap();
            assert_ne!(json["approvalPolicy"], "untrusted", "{input:?}");
            assert!(CodexApproval::ALL.contains(&s.approval_policy), "{input:?}");
        }
    }
}

#[test]
fn s5_4_approval_policy_per_mode() {
    #[rustfmt::skip]
    let table: &[(&str, &str)] = &[
        ("default",           "on-request"),
        ("sandbox",           "on-request"),
        ("plan",              "on-request"),
        ("yolo",              "never"),
        ("bypassPermissions", "never"),
        ("acceptEdits",       "on-request"),
        ("autoEdit",          "on-request"),
    ];
    for &(input, expected) in table {
        let s = codex::to_provider(PermissionMode::parse(input).mode, Platform::Unix);
        assert_eq!(s.approval_policy.as_str(), expected, "{input}");
    }
}

#[test]
fn s5_4_valid_approval_policies() {
    let valid: Vec<&str> = CodexApproval::ALL.iter().map(|a| a.as_str()).collect();
    for p in ["on-request", "never", "on-failure"] {
        assert!(valid.contains(&p), "{p}");
    }
    assert!(!valid.contains(&"untrusted"));
    assert_eq!(
        "untrusted".parse::<CodexApproval>(),
        Err(ParseError::UntrustedApproval)
    );
}

// ---- §5.3 Claude --------------------------------------------------------------------------

#[test]
fn s5_3_claude_to_provider_table() {
    use claude::ClaudeMode::*;
    #[rustfmt::skip]
    let table: &[(Option<&str>, claude::ClaudeMode, bool /* exact */)] = &[
        (Some("default"),           Default,           true),
        (Some(""),                  Default,           true),
        (None,                      Default,           true),
        (Some("acceptEdits"),       AcceptEdits,       true),
        (Some("autoEdit"),          AcceptEdits,       true),
        (Some("plan"),              Plan,              true),
        (Some("sandbox"),           Plan,              false),
        (Some("bypassPermissions"), BypassPermissions, true),
        (Some("yolo"),              BypassPermissions, true),
        (Some("auto"),              Default,           false), // unknown → default, with a warning
    ];
    for &(input, expected, exact) in table {
        let requested = RequestedMode::from_option(input);
        assert_eq!(claude::to_provider(requested.mode), expected, "{input:?}");
        let eff = claude::effective(&requested, claude::ClaudeContext::default());
        assert_eq!(eff.settings.permission_mode, expected, "{input:?}");
        assert_eq!(eff.exact, exact, "{input:?}: {:?}", eff.notes);
        assert_eq!(eff.notes.is_empty(), exact, "{input:?}");
        assert!(!eff.settings.needs_sandbox_env);
    }
}

#[test]
fn s5_3_claude_from_provider_table() {
    #[rustfmt::skip]
    let table: &[(&str, Result<PermissionMode, ParseError>)] = &[
        ("default",           Ok(PermissionMode::Default)),
        ("acceptEdits",       Ok(PermissionMode::AcceptEdits)),
        ("plan",              Ok(PermissionMode::Plan)),
        ("bypassPermissions", Ok(PermissionMode::BypassPermissions)),
        ("dontAsk",           Ok(PermissionMode::Sandbox)), // lossy: deny-all reads back as sandbox
        ("auto",              Ok(PermissionMode::Default)), // lossy: classifier reads back as default
        ("autoEdit",          Err(ParseError::UnknownClaudeMode("autoEdit".into()))),
        ("sandbox",           Err(ParseError::UnknownClaudeMode("sandbox".into()))),
        ("",                  Err(ParseError::UnknownClaudeMode("".into()))),
    ];
    for (input, expected) in table {
        assert_eq!(&claude::from_provider(input), expected, "{input}");
    }
}

#[test]
fn claude_bypass_as_root_sets_is_sandbox() {
    let root = claude::ClaudeContext {
        running_as_root: true,
    };
    for input in ["bypassPermissions", "yolo"] {
        let eff = claude::effective(&PermissionMode::parse(input), root);
        assert!(eff.exact, "{input}");
        assert_eq!(eff.settings.env(), [("IS_SANDBOX", "1")]);
        assert_eq!(eff.notes.len(), 1);
        assert_eq!(eff.notes[0].kind, NoteKind::Requirement);
    }
    let eff = claude::effective(&PermissionMode::parse("plan"), root);
    assert!(eff.settings.env().is_empty());
}

// ---- Effective reports as JSON ----------------------------------------------------------------

#[test]
fn effective_report_json_shape() {
    let eff = codex::effective(
        &PermissionMode::parse("plan"),
        Platform::Windows,
        &CodexOverrides {
            approval_policy: Some("untrusted".into()),
            ..Default::default()
        },
    );
    let v = serde_json::to_value(&eff).unwrap();
    assert_eq!(
        v,
        json!({
            "provider": "codex",
            "requested": {"raw": "plan", "mode": "plan", "recognition": "known"},
            "settings": {"skipGitRepoCheck": true, "sandbox": "read-only", "approvalPolicy": "on-request"},
            "exact": false,
            "notes": [
                {"kind": "substituted", "message": "Codex has no plan mode; applied the read-only sandbox instead"},
                {"kind": "ignoredOverride", "message": "ignored CODEX_APPROVAL_POLICY=\"untrusted\": Codex approval policy \"untrusted\" is no longer accepted by the Codex CLI (since 0.149); use on-request"}
            ]
        })
    );

    let eff = claude::effective(
        &PermissionMode::parse("auto"),
        claude::ClaudeContext::default(),
    );
    let v = serde_json::to_value(&eff).unwrap();
    assert_eq!(v["requested"]["recognition"], "unknown");
    assert_eq!(
        v["settings"],
        json!({"permissionMode": "default", "needsSandboxEnv": false})
    );
    assert_eq!(v["notes"][0]["kind"], "unknownMode");
    assert_eq!(v["exact"], false);
}

#[test]
fn windows_fallback_is_reported_only_where_it_applies() {
    for mode in PermissionMode::ALL {
        let unix = codex::effective(&mode.into(), Platform::Unix, &CodexOverrides::default());
        let win = codex::effective(&mode.into(), Platform::Windows, &CodexOverrides::default());
        let fallback = unix.settings.sandbox == CodexSandbox::WorkspaceWrite;
        assert_eq!(
            win.notes.len(),
            unix.notes.len() + usize::from(fallback),
            "{mode}"
        );
        assert_eq!(win.exact, unix.exact && !fallback, "{mode}");
    }
}
