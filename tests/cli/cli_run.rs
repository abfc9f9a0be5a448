//! `harrow run --headless` from the real binary against a scripted model on 127.0.0.1.

// A test whose setup fails should panic there, helpers included.
#![allow(clippy::unwrap_used)]

use crate::tools;
use crate::{loop_fixture, support};

use loop_fixture::{
    accept, case, harrow_cmd, headless_run, reject, repo_and_plan, serve, slow_first_task,
    write_and_submit,
};
use serde_json::json;
use std::path::Path;
use std::process::Command;

#[test]
fn headless_run_prints_one_line_per_significant_event_and_exits_zero() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 2);
    let script = json!({
        "worker": {"T-001": {"1": write_and_submit(1), "2": [{"tool_calls": [{"name": "bash", "arguments": {"command": "echo checked >> f1.txt"}}]}, {"tool_calls": [{"name": "submit_case", "arguments": loop_fixture::case(1)}]}]},
                   "T-002": {"1": write_and_submit(2)}},
        "evaluator": {"T-001": {"1": [reject("weak_test")], "2": [accept()]}, "T-002": {"1": [accept()]}}
    });
    let (_rt, server) = serve(&script, true);
    let out =
        headless_run(harrow_cmd(tmp.path(), &server.base_url()), &plan, &repo).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for needle in [
        "session started: plan (2 tasks), worker scripted/worker, evaluator scripted/worker",
        "▶ T-001 started (attempt 1)",
        "  T-001 #1 write_file f1.txt",
        "  T-001 #2 submit_case",
        "  T-001 #2 verdict: reject (weak_test) — The file lacks a trailing note.",
        "↻ T-001 rework (attempt 2)",
        "  T-001 #3 bash echo checked >> f1.txt",
        "✔ T-001 done, committed",
        "✔ T-002 done, committed",
        "■ stopped: all_done",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in\n{stdout}");
    }
    let dir = tmp.path().join("sessions").read_dir().unwrap().next().unwrap().unwrap().path();
    support::strict_events(&dir);
    let sessions = Command::new(env!("CARGO_BIN_EXE_harrow"))
        .args(["sessions"])
        .env("HARROW_SESSIONS_DIR", tmp.path().join("sessions"))
        .env("HOME", tmp.path())
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&sessions.stdout);
    assert!(
        listed.lines().any(|l| l.contains(" harrow ") && l.contains(" done ") && l.contains("2/2")),
        "{listed}"
    );
}

#[test]
fn bad_plans_and_missing_settings_are_one_line_and_status_2() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 1);
    std::fs::write(plan.join("T-009-broken.md"), "---\ntitle: no id\n---\n").unwrap();
    let harrow = |args: &[&str], base: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_harrow"));
        c.args(args)
            .env("HARROW_SESSIONS_DIR", tmp.path().join("sessions"))
            .env("XDG_CONFIG_HOME", tmp.path())
            .env_remove("HARROW_CONFIG")
            .env_remove("HARROW_BASE_URL")
            .env_remove("HARROW_WORKER_MODEL");
        if let Some(b) = base {
            c.env("HARROW_BASE_URL", b).env("HARROW_WORKER_MODEL", "m");
        }
        c.output().unwrap()
    };
    let out = harrow(
        &["run", plan.to_str().unwrap(), "--repo", repo.to_str().unwrap(), "--headless"],
        Some("http://127.0.0.1:9/v1"),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("T-009-broken.md:2: missing id; add `id: T-001`"), "{err}");
    std::fs::remove_file(plan.join("T-009-broken.md")).unwrap();
    let out = harrow(
        &["run", plan.to_str().unwrap(), "--repo", repo.to_str().unwrap(), "--headless"],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "missing model settings: HARROW_BASE_URL (or --base-url), HARROW_WORKER_MODEL"
        )
    );
    let out = harrow(
        &["run", plan.to_str().unwrap(), "--repo", tmp.path().to_str().unwrap(), "--headless"],
        Some("http://127.0.0.1:9/v1"),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is not inside a git repository"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !tmp.path().join("sessions").exists()
            || std::fs::read_dir(tmp.path().join("sessions")).unwrap().count() == 0,
        "a refused run leaves no session behind"
    );
    // The dead endpoint is tried as often as ever, without the default gaps between tries.
    std::fs::create_dir_all(tmp.path().join("harrow")).unwrap();
    std::fs::write(tmp.path().join("harrow/config.toml"), "[models]\nretry_base_ms = 50\n")
        .unwrap();
    let out = harrow(
        &[
            "run",
            plan.to_str().unwrap(),
            "--repo",
            repo.to_str().unwrap(),
            "--headless",
            "--no-preflight",
        ],
        Some("http://127.0.0.1:9/v1"),
    );
    assert_eq!(out.status.code(), Some(1), "a dead endpoint stops the run, resumably");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("■ stopped: provider_failure") && text.contains("cannot be reached"),
        "{text}"
    );
}

#[test]
fn a_start_that_fails_after_making_the_worktree_leaves_nothing_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 1);
    let config = tmp.path().join("harrow.toml");
    std::fs::write(&config, "[hands]\nsandbox = \"bwrap\"\n").unwrap();
    let (_rt, server) = serve(&json!({}), true);
    let out = headless_run(harrow_cmd(tmp.path(), &server.base_url()), &plan, &repo)
        .arg("--config")
        .arg(&config)
        .env("PATH", tmp.path().join("no-programs-here"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("sandbox = \"bwrap\" was asked for, but bubblewrap is not installed"),
        "{stderr}"
    );
    let left = tmp.path().join("sessions").read_dir().map_or(0, Iterator::count);
    assert_eq!(left, 0, "no session folder");
    assert!(!support::git(&repo, &["branch", "--list"]).contains("session/"), "no branch");
    assert_eq!(support::git(&repo, &["worktree", "list"]).lines().count(), 1, "no worktree");
}

/// Sessions, worktrees and `session/*` branches a refused start could have left.
fn leftovers(tmp: &Path, repo: &Path) -> (usize, String, String) {
    let sessions =
        std::fs::read_dir(tmp.join("sessions")).map_or(0, |d| d.filter_map(Result::ok).count());
    let worktrees = support::git(repo, &["worktree", "list"]);
    let branches = support::git(repo, &["branch", "--list", "session/*"]);
    (sessions, worktrees, branches)
}

#[test]
fn a_wrong_model_a_dead_url_or_a_rejected_key_is_exit_2_before_anything_is_made() {
    use harrow::brain::scripted::{Options, ScriptedServer, parse_script};
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 1);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let options = Options {
        fast: true,
        models: Some(vec!["scripted/worker".into()]),
        keys: Some(vec!["sk-the-right-key-0001".into()]),
        ..Options::default()
    };
    let server =
        runtime.block_on(ScriptedServer::start_with(parse_script("{}").unwrap(), options)).unwrap();
    let cases = [
        (
            "nope/model",
            server.base_url(),
            "sk-the-right-key-0001",
            "has no model 'nope/model'",
            "HARROW_WORKER_MODEL",
        ),
        (
            "scripted/worker",
            "http://127.0.0.1:9/v1".to_owned(),
            "sk-the-right-key-0001",
            "cannot be reached",
            "HARROW_BASE_URL",
        ),
        (
            "scripted/worker",
            server.base_url(),
            "sk-a-wrong-key-0002",
            "refused the API key (401)",
            "HARROW_API_KEY",
        ),
    ];
    for (model, url, key, says, fix) in cases {
        let out = headless_run(harrow_cmd(tmp.path(), &url), &plan, &repo)
            .env("HARROW_WORKER_MODEL", model)
            .env("HARROW_API_KEY", key)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{model} {url}: {err}");
        assert!(
            err.contains("the worker endpoint") && err.contains(&url),
            "names role and URL: {err}"
        );
        assert!(err.contains(says) && err.contains(fix), "says what and the fix: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        assert!(!err.contains(key), "never prints the key: {err}");
        let (sessions, worktrees, branches) = leftovers(tmp.path(), &repo);
        assert_eq!(sessions, 0, "no session folder");
        assert_eq!(worktrees.lines().count(), 1, "no worktree: {worktrees}");
        assert!(branches.trim().is_empty(), "no branch: {branches}");
    }
    let ok = headless_run(harrow_cmd(tmp.path(), &server.base_url()), &plan, &repo)
        .env("HARROW_API_KEY", "sk-the-right-key-0001")
        .arg("--max-iterations")
        .arg("1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&ok.stderr);
    assert!(!err.contains("checked before starting"), "the right settings pass: {err}");
}

#[test]
fn max_minutes_takes_a_fraction_and_refuses_what_is_not_a_number_of_minutes() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 2);
    let (_rt, server) = serve(&slow_first_task(2, 1500), false);
    let mut cmd = headless_run(harrow_cmd(tmp.path(), &server.base_url()), &plan, &repo);
    let out = cmd.args(["--max-minutes", "0.01"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("stopped: wall_clock"), "0.6 s is spent after T-001: {stdout}");
    assert!(stdout.contains("T-001 done") && !stdout.contains("T-002 started"), "{stdout}");
    for bad in ["-1", "soon", "NaN"] {
        let mut cmd = headless_run(harrow_cmd(tmp.path(), &server.base_url()), &plan, &repo);
        let out = cmd.arg(format!("--max-minutes={bad}")).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {stderr}");
        assert!(stderr.contains("is not a number of minutes"), "{bad}: {stderr}");
    }
}

#[test]
fn the_next_task_hears_what_happened_in_words_never_the_harness_state_names() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 2);
    let script = json!({
        "worker": {"T-001": {"1": write_and_submit(1)}, "T-002": {"1": write_and_submit(2)}},
        "evaluator": {"T-001": {"*": [reject("weak_test")]}, "T-002": {"*": [accept()]}}
    });
    let (_rt, server) = serve(&script, true);
    let mut cmd = headless_run(harrow_cmd(tmp.path(), &server.base_url()), &plan, &repo);
    let out = cmd.args(["--on-cap", "force-accept", "--max-attempts", "1"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    let t2 = server.received().into_iter().find(|r| r.role == "worker" && r.task == "T-002");
    let prompt = t2.unwrap().body["messages"].to_string();
    assert!(prompt.contains("- T-001 (Write file 1): accepted below the quality bar"), "{prompt}");
    assert!(prompt.contains("[done, accepted below the quality bar]"), "{prompt}");
    for name in ["failed:", "evaluator_cap", "done_below_bar", "done (below the bar)"] {
        assert!(!prompt.contains(name), "the harness's name '{name}' reached the worker");
    }
}

#[test]
fn ctrl_c_on_a_headless_run_stops_it_resumable_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 2);
    let (_rt, server) = serve(&slow_first_task(2, 600_000), false);
    let mut cmd = headless_run(harrow_cmd(tmp.path(), &server.base_url()), &plan, &repo);
    let child = cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let child = child.spawn().unwrap();
    let sessions = tmp.path().join("sessions");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !std::fs::read_dir(&sessions).ok().and_then(|mut d| d.next()).is_some_and(|e| {
        std::fs::read_to_string(e.unwrap().path().join("events.jsonl"))
            .is_ok_and(|t| t.contains("prompt_assembled"))
    }) {
        assert!(std::time::Instant::now() < deadline, "the run never reached its first call");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    support::until("the first worker call reaching the server", || {
        server.received().iter().any(|r| r.role == "worker")
    });
    let pid = child.id().to_string();
    assert!(Command::new("kill").args(["-INT", &pid]).status().unwrap().success());
    // The reply in flight is ten minutes away: ending well before proves it was dropped.
    let out = support::ends_within(child, 60, "the run after Ctrl-C");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.lines().last().unwrap_or("").contains("harrow resume"), "{stdout}");
    let session = std::fs::read_dir(&sessions).unwrap().next().unwrap().unwrap().path();
    let events = support::strict_events(&session);
    let stop = events.iter().rev().find(|e| e["type"] == "stop").unwrap();
    assert_eq!(stop["payload"]["reason"], "interrupted", "{stop}");
    let id = session.file_name().unwrap().to_string_lossy().into_owned();
    let shown = harrow_cmd(tmp.path(), &server.base_url()).args(["sessions"]).output().unwrap();
    let listed = String::from_utf8_lossy(&shown.stdout);
    let row = listed.lines().find(|l| l.contains(&id)).unwrap_or_default();
    assert!(row.contains("stopped") && !row.contains("crashed"), "{listed}");
}

#[test]
fn a_headless_run_says_what_it_waits_on_every_ten_seconds_of_silence() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 1);
    // Streamed: half the delay before the first piece, the rest spread between the pieces.
    let (_rt, server) = serve(&slow_first_task(1, 14_000), false);
    let out =
        headless_run(harrow_cmd(tmp.path(), &server.base_url()), &plan, &repo).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let beat = stdout.lines().find(|l| l.contains("… worker on T-001: replying for"));
    let beat = beat.unwrap_or_else(|| panic!("no heartbeat: {stdout}"));
    assert!(beat.contains("chars so far"), "{beat}");
}

#[test]
fn a_validator_written_in_shell_is_not_mistaken_for_missing_programs() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 1);
    let script = json!({"worker": {"T-001": {"1": write_and_submit(1)}}, "evaluator": {"*": {"*": [accept()]}}});
    let (_rt, server) = serve(&script, true);
    let config = tmp.path().join("harrow.toml");
    let command =
        "wait; VAR=1 true 2>&1 | cat >/dev/null; [ -d . ] && (cd . && true) & wait; time true";
    std::fs::write(&config, format!("[[validators]]\nname = \"shell\"\ncommand = '{command}'\n"))
        .unwrap();
    let out = harrow_cmd(tmp.path(), &server.base_url())
        .args(["run", plan.to_str().unwrap(), "--repo", repo.to_str().unwrap(), "--headless"])
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{}", String::from_utf8_lossy(&out.stdout));
    assert!(!stderr.contains("not installed"), "{stderr}");
}

/// Small slips get the right one-line answer: a `--repo` that does not exist says so (not
/// "not inside a git repository"), a `--dir` that does not exist is refused rather than
/// listing nothing, and a replay speed outside 0.5–64 is refused with the range.
#[test]
fn a_missing_repo_a_missing_dir_and_a_speed_out_of_range_are_each_said() {
    let tmp = tempfile::tempdir().unwrap();
    let (_repo, plan) = repo_and_plan(tmp.path(), 1);
    let missing = tmp.path().join("nowhere");
    let out = harrow_cmd(tmp.path(), "http://127.0.0.1:9/v1")
        .args(["run", plan.to_str().unwrap(), "--repo", missing.to_str().unwrap(), "--headless"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("does not exist") && !said.contains("not inside a git repository"),
        "{said}"
    );
    for (args, needle) in [
        (vec!["sessions", "--dir", missing.to_str().unwrap()], "does not exist"),
        (vec!["replay", "x", "--speed", "100"], "0.5 to 64"),
    ] {
        let out = harrow_cmd(tmp.path(), "http://127.0.0.1:9/v1").args(&args).output().unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
        assert!(said.contains(needle), "{args:?}: {said}");
    }
}

/// harrow's HTTPS requests go through rustls with the provider harrow installs (reqwest is
/// built with none): against a loopback TLS server whose self-signed certificate the user's
/// `SSL_CERT_FILE` trusts, the handshake succeeds and the server's own answer is what harrow
/// reports; with the certificate not trusted, the request never reaches it.
#[test]
fn a_model_over_https_is_reached_through_the_users_roots_and_an_untrusted_one_is_not() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, _) = repo_and_plan(tmp.path(), 1);
    let (other, _) = support::self_signed(tmp.path(), "other");
    let (cert, key) = support::self_signed(tmp.path(), "server");
    // A TLS server that answers every request with its own 400, and says what it was asked.
    let server = r#"
import json, socket, ssl, sys
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[1], sys.argv[2])
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
print(s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept()
    try:
        t = ctx.wrap_socket(c, server_side=True)
        line = t.recv(65536).decode(errors="replace").split("\r\n")[0]
        print(line, flush=True)
        body = json.dumps({"error": {"message": "the TLS server answered", "type": "invalid_request_error"}})
        t.sendall(("HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)).encode())
        t.close()
    except Exception as e:
        print("refused:", e, flush=True)
"#;
    let mut tls = support::Reaped(
        Command::new("python3")
            .args(["-c", server])
            .arg(&cert)
            .arg(&key)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut out = std::io::BufReader::new(tls.0.stdout.take().unwrap());
    let mut port = String::new();
    std::io::BufRead::read_line(&mut out, &mut port).unwrap();
    let url = format!("https://localhost:{}/v1", port.trim());
    std::fs::create_dir_all(tmp.path().join("harrow")).unwrap();
    std::fs::write(tmp.path().join("harrow/config.toml"), "[models]\nretry_base_ms = 50\n")
        .unwrap();
    let prep = |roots: &Path| {
        let mut cmd = harrow_cmd(tmp.path(), &url);
        cmd.args(["prep", "--repo", repo.to_str().unwrap(), "--feature", "f", "--brief", "b"])
            .env("SSL_CERT_FILE", roots)
            .env_remove("SSL_CERT_DIR")
            .env("XDG_CACHE_HOME", tmp.path().join("cache"));
        let out = cmd.output().unwrap();
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let trusted = prep(&cert);
    assert!(trusted.contains("rejected the request (400): the TLS server answered"), "{trusted}");
    let mut asked = String::new();
    std::io::BufRead::read_line(&mut out, &mut asked).unwrap();
    assert!(asked.starts_with("POST /v1/chat/completions"), "{asked}");
    // Roots that do not hold the server's certificate: the handshake fails, nothing is asked.
    let untrusted = prep(&other);
    assert!(!untrusted.contains("the TLS server answered"), "{untrusted}");
    asked.clear();
    std::io::BufRead::read_line(&mut out, &mut asked).unwrap();
    assert!(asked.starts_with("refused:"), "{asked}");
}

/// A start asks whether bubblewrap can make a sandbox here by starting it once; the next start
/// in the same boot, user and namespaces, with the same binary, takes that answer, and the
/// worker's commands still run under bubblewrap. A remembered answer gone stale (bubblewrap
/// stopped working with nothing the question names changing) only makes the command fail: it
/// never runs unconfined.
#[test]
fn the_sandbox_probe_is_remembered_for_the_next_start_and_commands_stay_sandboxed() {
    tools::require_bwrap();
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = tmp.path().join("bwrap.log");
    let real = String::from_utf8(
        Command::new("sh").args(["-c", "command -v bwrap"]).output().unwrap().stdout,
    )
    .unwrap();
    let wrapper = bin.join("bwrap");
    // The wrapper stops working when `broken` exists: its own stamps stay as they were.
    let broken = tmp.path().join("broken");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\n[ -e '{}' ] && exit 1\nexec '{}' \"$@\"\n",
            log.display(),
            broken.display(),
            real.trim()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let bash = json!({"tool_calls": [{"name": "bash", "arguments": {"command": "echo sandboxed > f1.txt && echo ran"}}]});
    let submit =
        json!({"tool_calls": [{"name": "submit_case", "arguments": loop_fixture::case(1)}]});
    let script = json!({"worker": {"*": {"*": [bash, submit]}}, "evaluator": {"*": {"*": [loop_fixture::accept_quoting("f1.txt", "sandboxed")]}}});
    let (_rt, server) = serve(&script, true);
    let probes = || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let probe = text.lines().filter(|l| l.ends_with("--die-with-parent true")).count();
        let commands = text.lines().filter(|l| l.contains("echo sandboxed")).count();
        (probe, commands)
    };
    // A run's first bash result and its sessions folder; `settled` says whether it must end
    // well (a run whose command cannot run leaves nothing to accept, and fails).
    let run_in = |run: usize, settled: bool| {
        let root = tmp.path().join(format!("run{run}"));
        let (repo, plan) = repo_and_plan(&root, 1);
        let mut cmd = harrow_cmd(&root, &server.base_url());
        cmd.env("PATH", &path).env("XDG_CACHE_HOME", tmp.path().join("cache"));
        let out = headless_run(cmd, &plan, &repo).output().unwrap();
        assert_eq!(
            out.status.success(),
            settled,
            "run {run}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let dir = std::fs::read_dir(root.join("sessions")).unwrap().next().unwrap().unwrap();
        let events = support::strict_events(&dir.path());
        let result = events
            .iter()
            .find(|e| e["type"] == "tool_result" && e["payload"]["tool"] == "bash")
            .unwrap()["payload"]["output"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        (result, dir.path())
    };
    for (run, expected) in [(1, (1, 1)), (2, (1, 2))] {
        let (output, session) = run_in(run, true);
        assert!(output.contains("ran"), "run {run}: {output}");
        assert!(session.join("workspace/f1.txt").exists(), "run {run}: the command wrote");
        assert_eq!(probes(), expected, "run {run}: (probes, commands run under bubblewrap)");
    }
    std::fs::write(&broken, "").unwrap();
    let (output, session) = run_in(3, false);
    let (probed, commands) = probes();
    assert_eq!(probed, 1, "the stale answer is taken: no probe");
    assert!(commands > 2, "the commands still went to bubblewrap");
    assert!(!output.contains("ran"), "a command bubblewrap could not start did not run: {output}");
    assert!(!session.join("workspace/f1.txt").exists(), "nothing it would have written is there");
    let remembered = std::fs::read_to_string(tmp.path().join("cache/harrow/bwrap-probe")).unwrap();
    assert!(
        remembered.starts_with("harrow bwrap probe v1 boot=") && remembered.ends_with(" = works\n"),
        "{remembered}"
    );
}

/// Ordinary debugging — a print added, a command run, the print taken out, three times, each
/// time another command — brings the files back to the same state three times with something
/// new done each time: no loop, the task lands. The same worker flipping a file between two
/// contents with the same calls is still held as stuck.
#[test]
fn a_debugging_routine_is_no_loop_while_a_flip_with_the_same_calls_is_held() {
    let edit = |old: &str, new: &str| json!({"tool_calls": [{"name": "edit_file", "arguments": {"path": "f1.txt", "old_string": old, "new_string": new}}]});
    let bash = |command: &str| json!({"tool_calls": [{"name": "bash", "arguments": {"command": command}}]});
    let mut turns = vec![
        json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "f1.txt", "content": "1\n"}}]}),
    ];
    for command in ["cat f1.txt", "wc -l f1.txt", "grep -n 1 f1.txt"] {
        turns.extend([edit("1\n", "1\nDEBUG\n"), bash(command), edit("1\nDEBUG\n", "1\n")]);
    }
    turns.push(json!({"tool_calls": [{"name": "submit_case", "arguments": case(1)}]}));
    let tmp = tempfile::tempdir().unwrap();
    let (out, _server) = loop_fixture::one_task_run(tmp.path(), &turns);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the debugging routine lands: {stdout}");
    let dir =
        std::fs::read_dir(tmp.path().join("sessions")).unwrap().next().unwrap().unwrap().path();
    let log = support::strict_events(&dir);
    assert!(!log.iter().any(|e| e["type"] == "loop_detected"), "no loop was seen: {stdout}");
    let trees = log.iter().filter(|e| e["type"] == "turn_tree").count();
    assert!(trees >= 7, "the premise: the files went back and forth ({trees} trees)");

    let mut flips = vec![
        json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "f1.txt", "content": "1\n"}}]}),
    ];
    for _ in 0..4 {
        flips.extend([edit("1\n", "1\nDEBUG\n"), bash("cat f1.txt"), edit("1\nDEBUG\n", "1\n")]);
    }
    let tmp = tempfile::tempdir().unwrap();
    let (out, _server) = loop_fixture::one_task_run(tmp.path(), &flips);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("stuck: the worker's changes brought the files back"), "{stdout}");
}
