//! An ACP agent as the worker, through the real binary: a scripted agent of our own (it writes
//! files and runs commands itself; a variant uses the client's `fs/*` and `terminal/*`; a
//! hostile one tries to get out) on real git, real validators and a scripted evaluator.

use super::acp::configure;
use super::loop_fixture::{accept, case, harrow_cmd, reject, repo_and_plan, serve};
use super::support::{self, git};
use super::tools;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// `harrow run` headless with the configured agent; the evaluator answers `evaluator`.
fn run_agent(
    tmp: &Path,
    evaluator: &Value,
    validators: bool,
    env: &[(&str, &str)],
) -> (std::process::Output, Vec<Value>) {
    let (repo, plan) = repo_and_plan(tmp, 1);
    let script = json!({"worker": {}, "evaluator": {"T-001": evaluator}});
    let served = serve(&script, true);
    let run = ["run", plan.to_str().unwrap(), "--repo", repo.to_str().unwrap(), "--headless"];
    let mut cmd = agent_cmd(tmp, &served.1.base_url(), &run);
    cmd.envs(env.iter().copied());
    if !validators {
        cmd.arg("--no-validators");
    }
    let out = support::ends_within(spawn_run(&mut cmd), 300, "the agent's run");
    let bodies = served.1.received().into_iter().map(|r| r.body).collect();
    (out, bodies)
}

/// The harrow command for a run whose worker is the configured agent and whose evaluator is
/// the scripted server at `base_url`.
fn agent_cmd(tmp: &Path, base_url: &str, args: &[&str]) -> std::process::Command {
    let mut cmd = harrow_cmd(tmp, base_url);
    cmd.env_remove("HARROW_WORKER_MODEL").env("HARROW_EVALUATOR_MODEL", "scripted/evaluator");
    cmd.args(args);
    cmd
}

/// Starts `cmd` in the background, its output kept for [`support::ends_within`].
fn spawn_run(cmd: &mut std::process::Command) -> std::process::Child {
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// A one-task run of the scripted agent with `agent`'s script (and `extra` `[agent]` lines)
/// under bubblewrap, headless and without validators, started in the background; T-001's
/// evaluator answers `evaluator`. The scripted server, and the run.
fn started(
    tmp: &Path,
    agent: &Value,
    extra: &str,
    evaluator: &Value,
    args: &[&str],
) -> ((tokio::runtime::Runtime, harrow::brain::scripted::ScriptedServer), std::process::Child) {
    configure(tmp, agent, "bwrap", extra);
    let (repo, plan) = repo_and_plan(tmp, 1);
    let served = serve(&json!({"worker": {}, "evaluator": {"T-001": evaluator}}), true);
    let run = ["run", plan.to_str().unwrap(), "--repo", repo.to_str().unwrap(), "--headless"];
    let mut cmd = agent_cmd(tmp, &served.1.base_url(), &run);
    let child = spawn_run(cmd.arg("--no-validators").args(args));
    (served, child)
}

fn session(tmp: &Path) -> PathBuf {
    let mut found = std::fs::read_dir(tmp.join("sessions")).unwrap().flatten().map(|e| e.path());
    found.find(|p| p.is_dir()).unwrap()
}

fn events_of(tmp: &Path, kind: &str) -> Vec<Value> {
    support::strict_events(&session(tmp))
        .into_iter()
        .filter(|e| e["type"] == kind)
        .map(|e| e["payload"].clone())
        .collect()
}

/// What the agent said, all its messages joined.
fn agent_said(tmp: &Path) -> String {
    events_of(tmp, "assistant_message")
        .iter()
        .filter_map(|p| p["content"].as_str().map(str::to_owned))
        .collect::<Vec<_>>()
        .join("\n")
}

fn on_branch(tmp: &Path, file: &str) -> String {
    let id = session(tmp).file_name().unwrap().to_string_lossy().into_owned();
    git(&tmp.join("repo"), &["show", &format!("session/{id}:{file}")])
}

fn text(out: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn a_scripted_agent_works_a_task_that_lands_judged_with_its_turns_in_the_log() {
    tools::require_bwrap();
    let tmp = tempfile::tempdir().unwrap();
    let agent = json!({
        "work": [[
            {"plan": ["Write f1.txt", "Check it"]},
            {"say": "I will write the file. \u{1b}[2J\u{1b}]0;owned\u{7}"},
            {"write": ["f1.txt", "1\n"]},
            {"run": "cat f1.txt"},
            {"usage": {"used": 1200, "size": 200_000, "cost": 0.02}}
        ]],
        "case": [case(1)]
    });
    configure(
        tmp.path(),
        &agent,
        "bwrap",
        "[[validators]]\nname = \"says-1\"\ncommand = \"grep -qx 1 f1.txt\"\n",
    );
    let (out, bodies) = run_agent(tmp.path(), &json!({"1": [accept()]}), true, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!support::holds_controls(&out.stdout), "the agent's escapes reached the terminal");
    assert_eq!(on_branch(tmp.path(), "f1.txt"), "1\n");
    let calls = events_of(tmp.path(), "tool_call");
    let kinds: Vec<&str> = calls.iter().filter_map(|c| c["tool"].as_str()).collect();
    assert!(kinds.contains(&"edit") && kinds.contains(&"execute"), "{kinds:?}");
    let run = calls.iter().find(|c| c["tool"] == "execute").unwrap();
    assert_eq!(run["args"]["command"], "sh -c cat f1.txt");
    let results = events_of(tmp.path(), "tool_result");
    assert!(
        results.iter().any(|r| r["output"].as_str().is_some_and(|o| o.contains('1'))),
        "{results:?}"
    );
    let turns: Vec<Value> = events_of(tmp.path(), "model_call")
        .into_iter()
        .filter(|c| c["provider"] == "acp")
        .collect();
    assert!(turns.len() >= 2, "the work turn and the case turn: {turns:?}");
    assert!(
        turns.iter().all(|t| t.get("prompt_tokens").is_none()),
        "no usage was reported: no count"
    );
    assert!((turns[0]["cost"].as_f64().unwrap() - 0.02).abs() < 1e-9, "{turns:?}");
    assert!(turns[0]["model"].as_str().unwrap().contains("scripted-agent"), "{turns:?}");
    let said = agent_said(tmp.path());
    assert!(
        said.contains("Plan:\n[pending] Write f1.txt") && said.contains("I will write"),
        "{said}"
    );
    assert_eq!(events_of(tmp.path(), "case_parse_error").len(), 0, "the case was the agent's own");
    let verdicts = events_of(tmp.path(), "evaluator_verdict");
    assert_eq!(verdicts.len(), 1, "{verdicts:?}");
    assert!(events_of(tmp.path(), "validator_run").iter().any(|v| v["passed"] == true));
    // The evaluator judged the diff and the case, never the agent's words on the way.
    let sent = serde_json::to_string(&bodies).unwrap();
    assert!(sent.contains("Wrote f1.txt.") && !sent.contains("I will write the file"), "{sent}");
    let start = &events_of(tmp.path(), "session_start")[0];
    assert!(start["worker_model"].as_str().unwrap().contains("ACP agent"), "{start}");
}

#[test]
fn a_reject_is_the_agents_next_prompt_and_the_reworked_attempt_lands() {
    tools::require_bwrap();
    let tmp = tempfile::tempdir().unwrap();
    let agent = json!({
        "work": [[{"write": ["f1.txt", "1\n"]}]],
        "rework": [[{"say": "Adding the note."}, {"write": ["f1.txt", "1\nchecked\n"]}]],
        "case": ["I think I am done, no JSON here.", case(1)]
    });
    configure(tmp.path(), &agent, "bwrap", "");
    let (out, _) = run_agent(
        tmp.path(),
        &json!({"1": [reject("acceptance_gap")], "2": [accept()]}),
        false,
        &[],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(on_branch(tmp.path(), "f1.txt"), "1\nchecked\n");
    let prompts: Vec<String> = events_of(tmp.path(), "prompt_assembled")
        .iter()
        .filter_map(|p| p["content"].as_str().map(str::to_owned))
        .collect();
    let rework = prompts.iter().find(|p| p.starts_with("harrow: your work was checked")).unwrap();
    assert!(rework.contains("Append the line 'checked' to the file."), "{rework}");
    // The first case was no JSON: harrow built one, said so, and the gate judged it.
    let built = events_of(tmp.path(), "case_parse_error");
    assert_eq!(built.len(), 1, "{built:?}");
    let cases: Vec<Value> = events_of(tmp.path(), "tool_call")
        .into_iter()
        .filter(|c| c["tool"] == "submit_case")
        .collect();
    assert!(
        cases[0]["args"]["summary"].as_str().unwrap().starts_with("(case built by harrow"),
        "{cases:?}"
    );
    assert_eq!(cases[0]["args"]["ac_coverage"][0]["addressed_by"], "f1.txt");
    assert_eq!(cases[1]["args"]["summary"], "Wrote f1.txt.");
}

#[test]
fn an_agent_that_uses_fs_and_terminal_is_served_through_the_hands() {
    tools::require_bwrap();
    let tmp = tempfile::tempdir().unwrap();
    let agent = json!({
        "work": [[
            {"permission": ["allow_once", "reject_once"]},
            {"permission": []},
            {"fs_write": ["f1.txt", "1\n"]},
            {"fs_read": "f1.txt"},
            {"terminal": ["cat", "f1.txt"]},
            {"fs_write": ["../outside.txt", "no\n"]},
            {"fs_read": "/etc/hostname"}
        ]],
        "case": [case(1)]
    });
    configure(tmp.path(), &agent, "bwrap", "");
    let (out, _) = run_agent(tmp.path(), &json!({"1": [accept()]}), false, &[]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(on_branch(tmp.path(), "f1.txt"), "1\n");
    let said = agent_said(tmp.path());
    assert!(
        said.contains("PERMISSION opt-allow_once") && said.contains("PERMISSION cancelled"),
        "{said}"
    );
    assert!(said.contains("FS_WRITE f1.txt: ok") && said.contains("FS_READ f1.txt: 1"), "{said}");
    assert!(said.contains("TERMINAL exit=0 output=1"), "{said}");
    assert!(said.contains("FS_WRITE ../outside.txt: refused"), "{said}");
    assert!(said.contains("FS_READ /etc/hostname: refused"), "{said}");
    assert!(!tmp.path().join("sessions/outside.txt").exists());
    let hands: Vec<String> = events_of(tmp.path(), "tool_call")
        .iter()
        .filter_map(|c| c["tool"].as_str().map(str::to_owned))
        .collect();
    for tool in ["write_file", "read_file", "bash"] {
        assert!(hands.iter().any(|h| h == tool), "{tool} in {hands:?}");
    }
    let asked: Vec<Value> = events_of(tmp.path(), "hook_run")
        .into_iter()
        .filter(|h| h["hook"] == "permission")
        .collect();
    assert_eq!(asked.len(), 2, "every answer is logged: {asked:?}");
    assert_eq!(
        (asked[0]["outcome"].as_str(), asked[1]["outcome"].as_str()),
        (Some("allow"), Some("block"))
    );
}

/// What a hostile agent tries, under `sandbox`: to write outside its worktree (the source
/// repository's git folder, a folder beside the session), to find harrow's keys in any
/// process's environment, and to plant a link to a file outside.
fn hostile_under(sandbox: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside-the-worktree.txt");
    let hook = tmp.path().join("repo/.git/hooks/post-commit");
    // Its own: every other test's harrow has the shared test key, and a process is readable
    // in the moment between its start and its sealing of the key.
    let key = format!(
        "sk-agent-canary-{}",
        tmp.path().file_name().unwrap().to_string_lossy().trim_start_matches('.')
    );
    let key = key.as_str();
    let agent = json!({
        "work": [[
            {"try_write": outside.display().to_string()},
            {"try_write": hook.display().to_string()},
            {"try_write": tmp.path().join("sessions/planted.txt").display().to_string()},
            {"environ": key},
            {"link": ["leak", "/etc/passwd"]},
            {"write": ["f1.txt", "1\n"]}
        ]],
        "case": [case(1)]
    });
    configure(tmp.path(), &agent, sandbox, "");
    let (out, bodies) =
        run_agent(tmp.path(), &json!({"1": [accept()]}), false, &[("HARROW_API_KEY", key)]);
    let said = agent_said(tmp.path());
    assert!(said.contains("TRY_WRITE"), "{said}\n{}", text(&out));
    // Under bubblewrap `/tmp` is the sandbox's own: a write there lands in it, never here.
    if sandbox == "landlock" {
        assert!(!said.contains(": written"), "{sandbox}: {said}");
    }
    assert!(!outside.exists() && !hook.exists(), "{sandbox}: a write got out");
    assert!(!tmp.path().join("sessions/planted.txt").exists(), "{sandbox}");
    assert!(said.contains("ENVIRON marker in 0 processes, in mine: False"), "{sandbox}: {said}");
    let sent = serde_json::to_string(&bodies).unwrap();
    assert!(!sent.contains("root:x:0:0"), "{sandbox}: the link was read through");
    assert!(
        !super::loop_fixture::all_text(&session(tmp.path())).contains(key),
        "{sandbox}: the key reached the session folder"
    );
}

#[test]
fn a_hostile_agent_escapes_nothing_under_bubblewrap() {
    tools::require_bwrap();
    hostile_under("bwrap");
}

#[test]
fn a_hostile_agent_escapes_nothing_under_landlock() {
    hostile_under("landlock");
}

/// A run whose agent does `work`: it must stop, the task held, with one line saying why.
fn held(work: &Value, extra: &str) -> (String, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let agent = json!({"work": [work], "case": [case(1)]});
    configure(tmp.path(), &agent, "bwrap", extra);
    let (out, _) = run_agent(tmp.path(), &json!({"1": [accept()]}), false, &[]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(!support::holds_controls(&out.stdout) && !support::holds_controls(&out.stderr));
    let gates = events_of(tmp.path(), "task_state");
    assert!(gates.iter().any(|g| g["to"] == "needs_operator"), "{gates:?}");
    (text(&out), tmp.keep())
}

#[test]
fn a_crashed_agent_is_started_again_then_the_task_held_with_its_stderr() {
    tools::require_bwrap();
    let (said, dir) =
        held(&json!([{"stderr": "panic: the model \u{1b}[31mexploded"}, {"exit": 3}]), "");
    assert!(
        said.contains("the agent ended (exit 3)") && said.contains("panic: the model"),
        "{said}"
    );
    let failed: Vec<Value> = events_of(&dir, "model_call")
        .into_iter()
        .filter(|c| c["error_class"] == "agent_exited")
        .collect();
    assert_eq!(failed.len(), 3, "the first start and two more: {failed:?}");
    assert_eq!(agents_alive(&dir), 0, "no agent process is left");
    let _ = std::fs::remove_dir_all(dir);
}

/// Processes whose command line names `dir`: the agents a test started.
fn agents_alive(dir: &Path) -> usize {
    let wanted = dir.display().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|c| String::from_utf8_lossy(c).contains(&wanted))
        .count()
}

#[test]
fn a_hung_agent_is_stopped_and_the_task_held() {
    tools::require_bwrap();
    let (said, dir) =
        held(&json!([{"stderr": "waiting on the model"}, {"hang": true}]), "quiet_secs = 2\n");
    assert!(
        said.contains("sent nothing for 2 s during its turn")
            && said.contains("waiting on the model"),
        "{said}"
    );
    assert_eq!(agents_alive(&dir), 0, "no agent process is left");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn an_agent_that_floods_or_speaks_no_acp_is_held_with_one_line() {
    tools::require_bwrap();
    let (said, dir) = held(&json!([{"raw": "Welcome to \u{1b}[31mAgent\u{1b}[0m v1"}]), "");
    assert!(said.contains("not an ACP (JSON-RPC) message: Welcome to"), "{said}");
    let _ = std::fs::remove_dir_all(dir);
    let (said, dir) = held(&json!([{"flood_line": 17 * 1024 * 1024}]), "");
    assert!(said.contains("a line of more than 16 MiB"), "{said}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn an_agent_command_that_is_not_there_is_one_line_before_anything_is_made() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 1);
    let out = harrow_cmd(tmp.path(), "http://127.0.0.1:9")
        .args(["run", plan.to_str().unwrap(), "--repo", repo.to_str().unwrap(), "--headless"])
        .args(["--agent", "no-such-agent-xyz --acp"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("\"no-such-agent-xyz\" was not found") && said.contains("harrow agents"),
        "{said}"
    );
    assert_eq!(said.trim().lines().count(), 1, "{said}");
    assert!(
        !tmp.path().join("sessions").exists()
            || std::fs::read_dir(tmp.path().join("sessions")).unwrap().next().is_none()
    );
}

#[test]
fn a_real_codex_agent_from_npm_lands_a_task_judged_with_its_tool_calls_in_the_log() {
    tools::require_bwrap();
    let codex = tools::require_codex_acp();
    let tmp = tempfile::tempdir().unwrap();
    let model = super::responses::ResponsesServer::start("printf '1\\n' > f1.txt", case(1));
    let agent_key = "sk-agent-key-for-codex-5521";
    let set = |key: &str, value: &str| format!("-c {key}={value}");
    let command: Vec<String> = std::iter::once(codex.display().to_string())
        .chain(
            [
                set("model_provider", "\"scripted\""),
                set("model", "\"scripted-model\""),
                set("model_providers.scripted.name", "\"scripted\""),
                set("model_providers.scripted.base_url", &format!("\"{}\"", model.base_url)),
                set("model_providers.scripted.env_key", "\"OPENAI_API_KEY\""),
                set("model_providers.scripted.wire_api", "\"responses\""),
                set("approval_policy", "\"never\""),
                set("sandbox_mode", "\"danger-full-access\""),
            ]
            .iter()
            .flat_map(|pair| {
                let (flag, value) = pair.split_once(' ').unwrap();
                [flag.to_owned(), value.to_owned()]
            }),
        )
        .collect();
    let dir = tmp.path().join("harrow");
    std::fs::create_dir_all(&dir).unwrap();
    let config = format!(
        "[hands]\nsandbox = \"bwrap\"\n\n[agent]\ncommand = {}\nkeys = {{ OPENAI_API_KEY = \"HARROW_AGENT_API_KEY\" }}\nquiet_secs = 120\n",
        toml::Value::Array(command.into_iter().map(toml::Value::String).collect())
    );
    std::fs::write(dir.join("config.toml"), config).unwrap();
    let keys = [("HARROW_AGENT_API_KEY", agent_key)];
    let (out, _) = run_agent(tmp.path(), &json!({"1": [accept()]}), false, &keys);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(on_branch(tmp.path(), "f1.txt"), "1\n");
    let calls = events_of(tmp.path(), "tool_call");
    let ran = calls.iter().find(|c| c["tool"] == "execute").unwrap_or_else(|| panic!("{calls:?}"));
    assert!(ran["args"]["command"].as_str().unwrap().contains("printf"), "{ran}");
    let turns: Vec<Value> = events_of(tmp.path(), "model_call")
        .into_iter()
        .filter(|c| c["provider"] == "acp")
        .collect();
    assert!(turns[0]["model"].as_str().unwrap().contains("codex-acp"), "{turns:?}");
    assert_eq!(events_of(tmp.path(), "case_parse_error").len(), 0, "codex gave its own case");
    assert_eq!(events_of(tmp.path(), "evaluator_verdict").len(), 1);
    // The agent's model got the agent's key and nothing of harrow's.
    let asked = model.asked();
    assert!(!asked.is_empty());
    assert!(
        asked.iter().all(|a| a.authorization == format!("Bearer {agent_key}")),
        "{:?}",
        asked[0].authorization
    );
    let sent = serde_json::to_string(&asked.iter().map(|a| &a.body).collect::<Vec<_>>()).unwrap();
    assert!(!sent.contains("sk-binary-test"), "harrow's key reached the agent's model");
    // Its home, where it kept its key, went with it.
    assert!(!super::loop_fixture::all_text(&session(tmp.path())).contains(agent_key));
}

#[test]
fn a_steer_cancels_the_agents_turn_and_is_its_next_prompt() {
    tools::require_bwrap();
    let tmp = tempfile::tempdir().unwrap();
    // The agent leaves a file in its worktree as its turn begins to wait: the steer is sent
    // only then, so it cancels that turn (the words in the log could be the agent's command
    // line in `session_start`, logged before any turn).
    let agent = json!({
        "work": [[{"say": "WAITING-FOR-WORDS"}, {"write": ["waiting.txt", "w\n"]}, {"wait_cancel": true}]],
        "steered": [[{"say": "Steered: writing it."}, {"write": ["f1.txt", "1\n"]}]],
        "case": [case(1)]
    });
    let (served, child) = started(tmp.path(), &agent, "", &json!({"1": [accept()]}), &[]);
    let run = |args: &[&str]| agent_cmd(tmp.path(), &served.1.base_url(), args);
    let dir = super::loop_fixture::session_when_log_has(
        &tmp.path().join("sessions"),
        "WAITING-FOR-WORDS",
    );
    support::until("the agent's turn waiting for words", || {
        dir.join("workspace/waiting.txt").exists()
    });
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    let steer = run(&["control", &id, "steer", "--task", "T-001", "STEER-AGENT: write f1.txt now"])
        .output()
        .unwrap();
    assert!(steer.status.success(), "{}", text(&steer));
    let out = support::ends_within(child, 120, "the steered agent's run");
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(on_branch(tmp.path(), "f1.txt"), "1\n");
    let prompts: Vec<String> = events_of(tmp.path(), "prompt_assembled")
        .iter()
        .filter_map(|p| p["content"].as_str().map(str::to_owned))
        .collect();
    assert!(
        prompts
            .iter()
            .any(|p| p.starts_with("The operator, watching you work, says:\n\nSTEER-AGENT")),
        "{prompts:?}"
    );
    let turns: Vec<Value> = events_of(tmp.path(), "model_call")
        .into_iter()
        .filter(|c| c["provider"] == "acp")
        .collect();
    assert_eq!(turns[0]["finish_reason"], "cancelled", "{turns:?}");
    assert!(events_of(tmp.path(), "operator_steer").iter().any(|s| s["delivered"] == true));
}

#[test]
fn an_agent_that_dies_before_its_session_opens_is_held_with_its_stderr() {
    tools::require_bwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("harrow");
    std::fs::create_dir_all(&dir).unwrap();
    let dies = "import sys; print('no model is configured', file=sys.stderr); sys.exit(2)";
    std::fs::write(
        dir.join("config.toml"),
        format!(
            "[hands]\nsandbox = \"bwrap\"\n\n[agent]\ncommand = [\"python3\", \"-c\", \"{dies}\"]\n"
        ),
    )
    .unwrap();
    let (out, _) = run_agent(tmp.path(), &json!({"1": [accept()]}), false, &[]);
    assert!(!out.status.success(), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("the agent ended (exit 2)") && said.contains("no model is configured"),
        "{said}"
    );
    let gates = events_of(tmp.path(), "task_state");
    assert!(gates.iter().any(|g| g["to"] == "needs_operator"), "{gates:?}");
    let failed = events_of(tmp.path(), "model_call")
        .into_iter()
        .filter(|c| c["error_class"] == "agent_exited")
        .count();
    assert_eq!(failed, 3, "the first start and two more");
}

#[test]
fn a_resume_starts_an_agent_the_session_records_only_when_trusted() {
    tools::require_bwrap();
    let (_, dir) = held(&json!([{"stderr": "gone"}, {"exit": 3}]), "");
    // The operator's configuration no longer names an agent: only the record does.
    std::fs::write(dir.join("harrow/config.toml"), "[hands]\nsandbox = \"bwrap\"\n").unwrap();
    let id = session(&dir).file_name().unwrap().to_string_lossy().into_owned();
    let out = harrow_cmd(&dir, "http://127.0.0.1:9")
        .env("HARROW_EVALUATOR_MODEL", "scripted/evaluator")
        .args(["resume", &id, "--headless"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("records the ACP agent"), "{}", text(&out));
    assert!(text(&out).contains("--trust-recorded"), "{}", text(&out));
    assert_eq!(agents_alive(&dir), 0, "nothing was started");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn under_ask_an_agents_permission_request_waits_for_the_operators_allow_or_deny() {
    tools::require_bwrap();
    let tmp = tempfile::tempdir().unwrap();
    let agent = json!({
        "work": [[
            {"permission": ["allow_once", "reject_once"], "title": "Run ASK-ONE"},
            {"permission": ["allow_once", "reject_once"], "title": "Run ASK-TWO"},
            {"write": ["f1.txt", "1\n"]}
        ]],
        "case": [case(1)]
    });
    // An agent quiet for a second is taken for hung: one that waits on the operator is not.
    let (served, child) = started(
        tmp.path(),
        &agent,
        "permissions = \"ask\"\nquiet_secs = 1\n",
        &json!({"1": [accept()]}),
        &[],
    );
    let run = |args: &[&str]| agent_cmd(tmp.path(), &served.1.base_url(), args);
    let sessions = tmp.path().join("sessions");
    // The wait's own words: the script (with the titles) is in the log from the start.
    let dir = super::loop_fixture::session_when_log_has(&sessions, "asks: Run ASK-ONE");
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    // Longer than the agent may be quiet: the wait is the operator's, not the agent's.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let allow = run(&["control", &id, "allow"]).output().unwrap();
    assert!(allow.status.success(), "{}", text(&allow));
    super::loop_fixture::session_when_log_has(&sessions, "asks: Run ASK-TWO");
    let deny = run(&["control", &id, "deny", "--task", "T-001"]).output().unwrap();
    assert!(deny.status.success(), "{}", text(&deny));
    let out = support::ends_within(child, 120, "the asking agent's run");
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(on_branch(tmp.path(), "f1.txt"), "1\n");
    let said = agent_said(tmp.path());
    assert!(
        said.contains("PERMISSION opt-allow_once") && said.contains("PERMISSION opt-reject_once"),
        "{said}"
    );
    let waits = events_of(tmp.path(), "operator_wait");
    assert_eq!(waits.len(), 2, "{waits:?}");
    assert!(waits.iter().all(|w| w["tool"] == "agent"), "{waits:?}");
    let answers: Vec<Value> = events_of(tmp.path(), "hook_run")
        .into_iter()
        .filter(|h| h["hook"] == "permission")
        .collect();
    let outcomes: Vec<&str> = answers.iter().filter_map(|a| a["outcome"].as_str()).collect();
    assert_eq!(outcomes, ["allow", "block"], "{answers:?}");
    assert!(answers.iter().all(|a| a["reason"].as_str().unwrap().contains("the operator (cli)")));
    let hung = events_of(tmp.path(), "model_call")
        .iter()
        .filter(|c| c["error_class"] == "agent_hung")
        .count();
    assert_eq!(hung, 0, "an agent waiting on the operator is not hung");
}

#[test]
fn an_allow_with_no_agent_asking_is_refused_in_the_log() {
    tools::require_bwrap();
    let tmp = tempfile::tempdir().unwrap();
    let agent = json!({
        "work": [[{"say": "WAITING-FOR-WORDS"}, {"wait_cancel": true}]],
        "steered": [[{"write": ["f1.txt", "1\n"]}]],
        "case": [case(1)]
    });
    let (served, child) =
        started(tmp.path(), &agent, "permissions = \"ask\"\n", &json!({"1": [accept()]}), &[]);
    let run = |args: &[&str]| agent_cmd(tmp.path(), &served.1.base_url(), args);
    let sessions = tmp.path().join("sessions");
    let dir = super::loop_fixture::session_when_log_has(&sessions, "WAITING-FOR-WORDS");
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    let allow = run(&["control", &id, "allow"]).output().unwrap();
    assert!(allow.status.success(), "{}", text(&allow));
    super::loop_fixture::session_when_log_has(&sessions, "no permission request open");
    let steer = run(&["control", &id, "steer", "write it now"]).output().unwrap();
    assert!(steer.status.success(), "{}", text(&steer));
    let out = support::ends_within(child, 120, "the run");
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(on_branch(tmp.path(), "f1.txt"), "1\n");
    let after = run(&["control", &id, "allow"]).output().unwrap();
    assert_eq!(after.status.code(), Some(2), "{}", text(&after));
}

#[test]
fn two_tasks_in_two_lanes_each_get_an_agent_of_their_own_and_both_land() {
    tools::require_bwrap();
    let tmp = tempfile::tempdir().unwrap();
    let agent = json!({
        "work": [[{"say": "Lane work on T-00{N}."}, {"write": ["f{N}.txt", "{N}\n"]}]],
        "case": [{"summary": "Wrote f{N}.txt.", "ac_coverage": [
            {"criterion": "f{N}.txt exists and says {N}", "addressed_by": "f{N}.txt:1"}]}]
    });
    configure(tmp.path(), &agent, "bwrap", "");
    let (repo, plan) = repo_and_plan(tmp.path(), 2);
    super::loop_fixture::depends(&plan, 1, "[]");
    super::loop_fixture::depends(&plan, 2, "[]");
    let served = serve(&json!({"worker": {}, "evaluator": {"*": {"*": [accept()]}}}), true);
    let run = ["run", plan.to_str().unwrap(), "--repo", repo.to_str().unwrap(), "--headless"];
    let mut cmd = agent_cmd(tmp.path(), &served.1.base_url(), &run);
    cmd.args(["--lanes", "2", "--no-validators"]);
    let out = support::ends_within(spawn_run(&mut cmd), 300, "the agents' run in lanes");
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(on_branch(tmp.path(), "f1.txt"), "1\n");
    assert_eq!(on_branch(tmp.path(), "f2.txt"), "2\n");
    let log = support::strict_events(&session(tmp.path()));
    // Each task's turns came from an agent in its own lane, and each said its own task.
    let mut lanes_of = std::collections::BTreeMap::<String, Vec<u64>>::new();
    for e in log.iter().filter(|e| e["type"] == "model_call" && e["payload"]["provider"] == "acp") {
        let task = e["payload"]["task_id"].as_str().unwrap().to_owned();
        lanes_of.entry(task).or_default().push(e["lane"].as_u64().unwrap_or(0));
    }
    assert_eq!(lanes_of.len(), 2, "{lanes_of:?}");
    let first: Vec<u64> = lanes_of.values().map(|l| l[0]).collect();
    assert_ne!(first[0], first[1], "one agent per lane: {lanes_of:?}");
    let said = agent_said(tmp.path());
    assert!(said.contains("Lane work on T-001.") && said.contains("Lane work on T-002."), "{said}");
    let verdicts = events_of(tmp.path(), "evaluator_verdict");
    assert_eq!(verdicts.len(), 2, "each task judged: {verdicts:?}");
    assert_eq!(agents_alive(tmp.path()), 0, "every agent stopped");
}

#[test]
fn an_agent_run_stopped_mid_turn_resumes_with_a_fresh_agent_and_lands() {
    tools::require_bwrap();
    let tmp = tempfile::tempdir().unwrap();
    let stuck = json!({
        "work": [[{"say": "STUCK-IN-TURN"}, {"write": ["half.txt", "half\n"]}, {"hang": true}]],
        "case": [case(1)]
    });
    let (served, child) = started(tmp.path(), &stuck, "", &json!({"*": [accept()]}), &[]);
    let run = |args: &[&str]| agent_cmd(tmp.path(), &served.1.base_url(), args);
    let sessions = tmp.path().join("sessions");
    let dir = super::loop_fixture::session_when_log_has(&sessions, "STUCK-IN-TURN");
    // In its turn for sure (the words are in session_start's agent command from the start).
    support::until("the agent's turn hanging", || dir.join("workspace/half.txt").exists());
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    let stop = run(&["control", &id, "stop", "--now"]).output().unwrap();
    assert!(stop.status.success(), "{}", text(&stop));
    let out = support::ends_within(child, 120, "the stopped agent's run");
    assert!(!out.status.success(), "stopped, not done: {}", text(&out));
    assert_eq!(agents_alive(tmp.path()), 0, "the stopped run's agent is gone");
    // The operator's configuration now names an agent that finishes the work.
    let done = json!({
        "work": [[{"say": "RESUMED-AGENT"}, {"run": "cat half.txt"}, {"write": ["f1.txt", "1\n"]}]],
        "case": [case(1)]
    });
    configure(tmp.path(), &done, "bwrap", "");
    let resumed = support::ends_within(
        spawn_run(&mut run(&["resume", &id, "--headless", "--no-validators"])),
        120,
        "the resumed agent's run",
    );
    assert!(resumed.status.success(), "{}", text(&resumed));
    assert_eq!(on_branch(tmp.path(), "f1.txt"), "1\n");
    let said = agent_said(tmp.path());
    assert!(said.contains("RESUMED-AGENT"), "{said}");
    assert_eq!(events_of(tmp.path(), "session_resume").len(), 1);
    assert_eq!(agents_alive(tmp.path()), 0);
}

/// A pod's SIGTERM mid-turn: the run stops as on Ctrl-C (exit 143, a resumable `stop`), and
/// the agent — its whole process group — is stopped with it.
#[test]
fn sigterm_mid_turn_stops_the_run_and_the_agent_with_it() {
    tools::require_bwrap();
    let tmp = tempfile::tempdir().unwrap();
    // A child of its own, in the background: 617 s tells it from any other test's sleep.
    let agent = json!({"work": [[{"run": "sleep 617 > /dev/null 2>&1 &"}, {"hang": true}]]});
    let (_served, child) = started(tmp.path(), &agent, "", &json!({"1": [accept()]}), &[]);
    let sleeping = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .filter(|c| c.as_slice() == b"sleep\x00617\x00")
            .count()
    };
    support::until("the agent's background child", || sleeping() > 0);
    assert!(agents_alive(tmp.path()) > 0, "the premise: the agent runs");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let out = support::ends_within(child, 60, "the run after SIGTERM");
    assert_eq!(out.status.code(), Some(143), "{}", text(&out));
    let stop = events_of(tmp.path(), "stop");
    assert_eq!(stop.last().unwrap()["reason"], "interrupted", "{stop:?}");
    assert_eq!(agents_alive(tmp.path()), 0, "the agent is gone");
    support::until("the agent's child to be gone", || sleeping() == 0);
}

/// A rewind of an agent's task: the tree goes back to the attempt as it was judged, and a new
/// agent session starts from the brief with the operator's reason (an agent's conversation
/// cannot be rewound); what it does from there is judged and lands.
#[test]
fn a_rewound_agent_task_starts_a_new_agent_session_on_the_kept_tree_and_lands() {
    tools::require_bwrap();
    let tmp = tempfile::tempdir().unwrap();
    let agent = json!({
        "work": [[{"write": ["f1.txt", "ONE\n"]}]],
        "when": {"REWIND-REASON": [{"run": "cat f1.txt"}, {"write": ["g1.txt", "after the rewind\n"]}]},
        "rework": [[{"write": ["f1.txt", "TWO\n"]}, {"write": ["junk.txt", "j\n"]}]],
        "case": [case(1)]
    });
    let evaluator = json!({
        "1": [reject("weak_test")],
        "2": [reject("scope_creep")],
        "3": [super::loop_fixture::accept_quoting("f1.txt", "ONE")]
    });
    let held = ["--max-attempts", "2", "--wait-for-operator"];
    let (served, child) = started(tmp.path(), &agent, "", &evaluator, &held);
    let run = |args: &[&str]| agent_cmd(tmp.path(), &served.1.base_url(), args);
    let sessions = tmp.path().join("sessions");
    let dir = super::loop_fixture::session_when_log_has(&sessions, "\"operator_wait\"");
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    let rewind = run(&["control", &id, "rewind", "--task", "T-001", "--to-attempt", "1"])
        .args(["--reason", "REWIND-REASON: attempt 1 had it"])
        .output()
        .unwrap();
    assert!(rewind.status.success(), "{}", text(&rewind));
    let out = support::ends_within(child, 120, "the rewound agent's run");
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(on_branch(tmp.path(), "f1.txt"), "ONE\n", "attempt 1's tree, as judged");
    assert_eq!(on_branch(tmp.path(), "g1.txt"), "after the rewind\n");
    let id_path = format!("session/{id}");
    let files = git(&tmp.path().join("repo"), &["ls-tree", "-r", "--name-only", &id_path]);
    assert!(!files.contains("junk.txt"), "attempt 2's files went with it: {files}");
    let prompts: Vec<String> = events_of(tmp.path(), "prompt_assembled")
        .iter()
        .filter(|p| p["role"] == "worker")
        .filter_map(|p| p["content"].as_str().map(str::to_owned))
        .collect();
    let after = prompts.iter().position(|p| p.contains("REWIND-REASON")).expect("the reason");
    assert!(prompts[after].contains("## Your task"), "a new session starts from the brief");
    let read: Vec<String> = events_of(tmp.path(), "tool_result")
        .iter()
        .filter(|r| r["attempt"] == 3)
        .map(|r| r["output"].to_string())
        .collect();
    assert!(read.iter().any(|o| o.contains("ONE")), "the new agent read the kept tree: {read:?}");
    assert_eq!(agents_alive(tmp.path()), 0);
}
