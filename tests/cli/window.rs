//! The worker's context window, known before the first request: configured, or as the
//! server says it (llama.cpp's `/props`), recorded in `session_start` for the console to show
//! how full it is; a server's garbage is passed over with a notice.

use crate::{loop_fixture, support};

use harrow::brain::scripted::{Options, ScriptedServer};
use loop_fixture::{accept, harrow_cmd, headless_run, repo_and_plan, write_and_submit};
use serde_json::{Value, json};
use std::path::Path;

/// A finished one-task run against a scripted server whose `/props` answers `props`, with
/// `config` as the configuration; the worker's recorded endpoint and what harrow said.
fn run_with(props: Option<Value>, config: &str) -> (Value, String) {
    let (tmp, _, stderr) = run_asked(props, config, None);
    (endpoint(tmp.path(), "worker"), stderr)
}

/// [`run_with`], the evaluator on `evaluator_model` when given (else on the worker's
/// endpoint); the run's folder, the server that answered and what harrow said.
fn run_asked(
    props: Option<Value>,
    config: &str,
    evaluator_model: Option<&str>,
) -> (tempfile::TempDir, ScriptedServer, String) {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 1);
    let script =
        json!({"worker": {"*": {"*": write_and_submit(1)}}, "evaluator": {"*": {"*": [accept()]}}});
    let (runtime, server) =
        loop_fixture::serve_with(&script, Options { fast: true, props, ..Options::default() });
    std::fs::create_dir_all(tmp.path().join("harrow")).unwrap();
    std::fs::write(tmp.path().join("harrow/config.toml"), config).unwrap();
    let mut cmd = harrow_cmd(tmp.path(), &server.base_url());
    if let Some(model) = evaluator_model {
        cmd.env("HARROW_EVALUATOR_MODEL", model);
    }
    let out = headless_run(cmd, &plan, &repo).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{}\n{stderr}", String::from_utf8_lossy(&out.stdout));
    // The server's tasks run on this runtime: it outlives the run, and the server is kept.
    std::mem::forget(runtime);
    (tmp, server, stderr)
}

fn endpoint(tmp: &Path, role: &str) -> Value {
    let dir = std::fs::read_dir(tmp.join("sessions")).unwrap().next().unwrap().unwrap().path();
    let events = support::strict_events(&dir);
    events.iter().find(|e| e["type"] == "session_start").unwrap()["payload"]["endpoints"][role]
        .clone()
}

#[test]
fn the_window_is_taken_from_the_configuration_else_the_server_and_garbage_is_passed_over() {
    let llama = json!({"default_generation_settings": {"n_ctx": 4096}});
    let (worker, _) = run_with(Some(llama.clone()), "");
    assert_eq!(
        (worker["context_window"].as_u64(), worker["window_source"].as_str()),
        (Some(4096), Some("/props"))
    );

    let (worker, _) = run_with(Some(llama), "[models]\ncontext_window = 8192\n");
    assert_eq!(
        (worker["context_window"].as_u64(), worker["window_source"].as_str()),
        (Some(8192), Some("configured")),
        "yours over the server's"
    );

    for garbage in [
        json!("<html>not json</html>"),
        json!({"default_generation_settings": {"n_ctx": -5}}),
        json!({"n_ctx": 99_999_999_999u64}),
    ] {
        let (worker, stderr) = run_with(Some(garbage), "");
        assert!(worker.get("context_window").is_none(), "{worker}");
        assert!(stderr.contains("/props answered, but with no context window"), "{stderr}");
        assert_eq!(
            stderr.lines().filter(|l| l.contains("/props")).count(),
            1,
            "said once: {stderr}"
        );
    }

    let (worker, stderr) = run_with(None, "");
    assert!(
        worker.get("context_window").is_none() && !stderr.contains("/props"),
        "{worker} {stderr}"
    );
}

#[test]
fn a_role_on_another_roles_endpoint_is_not_asked_again_at_the_start() {
    let llama = json!({"default_generation_settings": {"n_ctx": 4096}});
    let (tmp, server, _) = run_asked(Some(llama.clone()), "", None);
    let asked = |s: &ScriptedServer| [s.asked("models"), s.asked("ping"), s.asked("props")];
    assert_eq!(asked(&server), [1, 1, 1], "one endpoint, each question once");
    for role in ["worker", "evaluator"] {
        assert_eq!(endpoint(tmp.path(), role)["context_window"].as_u64(), Some(4096), "{role}");
    }

    let (tmp, server, _) = run_asked(Some(llama), "", Some("scripted/evaluator"));
    assert_eq!(asked(&server), [2, 2, 2], "another model is another endpoint, asked on its own");
    assert_eq!(endpoint(tmp.path(), "evaluator")["model"].as_str(), Some("scripted/evaluator"));
}
