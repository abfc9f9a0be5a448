//! A role's fallback endpoints, through the real binary against two scripted servers that
//! record every request: when the worker's own endpoint has spent its tries on server errors,
//! the next `[models.worker] fallback` takes the call and the role's calls from then on, with
//! its own key (read from the variable named, sent to it alone), logged as `model_switch`.

use crate::{loop_fixture, support};

use loop_fixture::{accept, harrow_cmd, headless_run, repo_and_plan, serve, write_and_submit};
use serde_json::json;

const FALLBACK_KEY: &str = "sk-fallback-key-cccccccccccc";

#[test]
fn a_worker_whose_endpoint_keeps_failing_goes_on_with_its_fallback_and_its_own_key() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 2);
    // The first endpoint works T-001, then answers 503 for ever: mid-run.
    let failing = json!({
        "worker": {"T-001": {"1": write_and_submit(1)}, "T-002": {"*": [{"http_status": 503}, {"http_status": 503}]}},
        "evaluator": {"*": {"*": [accept()]}}
    });
    let (_rp, primary) = serve(&failing, true);
    let (_rf, fallback) = serve(&json!({"worker": {"T-002": {"1": write_and_submit(2)}}}), true);
    std::fs::create_dir_all(tmp.path().join("harrow")).unwrap();
    let config = format!(
        "[models]\nmax_tries = 1\nretry_base_ms = 10\n\n[models.worker]\nfallback = [{{ base_url = \"{}\", model = \"scripted/fallback\", api_key_env = \"HARROW_TEST_FALLBACK_API_KEY\" }}]\n",
        fallback.base_url()
    );
    std::fs::write(tmp.path().join("harrow/config.toml"), &config).unwrap();

    // An entry without a model is named by its line.
    let no_model = "[models.worker]\nfallback = [{ base_url = \"http://127.0.0.1:9/v1\" }]\n";
    std::fs::write(tmp.path().join("harrow/config.toml"), no_model).unwrap();
    let refused =
        headless_run(harrow_cmd(tmp.path(), &primary.base_url()), &plan, &repo).output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("config.toml: line 2: missing field `model`"), "{said}");
    // A key variable outside the form harrow seals away is refused, not read.
    let loose = config.replace("HARROW_TEST_FALLBACK_API_KEY", "MY_FALLBACK_KEY");
    std::fs::write(tmp.path().join("harrow/config.toml"), &loose).unwrap();
    let refused = headless_run(harrow_cmd(tmp.path(), &primary.base_url()), &plan, &repo)
        .env("MY_FALLBACK_KEY", FALLBACK_KEY)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("name it HARROW_<NAME>_API_KEY"));
    std::fs::write(tmp.path().join("harrow/config.toml"), &config).unwrap();

    let unset =
        headless_run(harrow_cmd(tmp.path(), &primary.base_url()), &plan, &repo).output().unwrap();
    assert_eq!(unset.status.code(), Some(2));
    let said = String::from_utf8_lossy(&unset.stderr);
    assert!(
        said.contains("[models.worker] fallback 1")
            && said.contains("HARROW_TEST_FALLBACK_API_KEY"),
        "{said}"
    );

    let out = headless_run(harrow_cmd(tmp.path(), &primary.base_url()), &plan, &repo)
        .env("HARROW_TEST_FALLBACK_API_KEY", FALLBACK_KEY)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let dir =
        std::fs::read_dir(tmp.path().join("sessions")).unwrap().last().unwrap().unwrap().path();
    let events = support::strict_events(&dir);
    let switch = events.iter().find(|e| e["type"] == "model_switch").expect("a switch is logged");
    assert_eq!(switch["payload"]["role"], "worker");
    assert_eq!(switch["payload"]["task_id"], "T-002", "mid-run, when T-002's calls failed");
    assert_eq!(switch["payload"]["to_model"], "scripted/fallback");
    assert_eq!(switch["payload"]["from_model"], "scripted/worker");
    assert!(switch["payload"]["why"].as_str().unwrap().contains("503"), "{switch}");
    assert_eq!(events.iter().filter(|e| e["type"] == "task_done").count(), 2, "the run finished");

    let taken = fallback.received();
    assert!(
        taken.iter().filter(|r| r.role == "worker").count() >= 2,
        "the fallback took the calls"
    );
    assert!(
        taken.iter().all(|r| r.authorization == format!("Bearer {FALLBACK_KEY}")),
        "its own key"
    );
    assert!(
        primary.received().iter().all(|r| !r.authorization.contains(FALLBACK_KEY)),
        "the fallback's key never went to the first endpoint"
    );
    assert!(!loop_fixture::all_text(&dir).contains(FALLBACK_KEY), "nor into the session folder");
    // The 503 was not retried (one try, then the fallback): show says so, as the console does.
    let show = harrow_cmd(tmp.path(), &primary.base_url())
        .args(["show", dir.to_str().unwrap()])
        .output()
        .unwrap();
    let show = String::from_utf8_lossy(&show.stdout);
    assert!(show.contains(" 1 unhealthy (0 of them retried)"), "{show}");

    // A log someone else wrote: the switch's model, address and kind carry escapes and
    // Markdown. show and the export print them inert.
    let hostile = tmp.path().join("hostile").join(dir.file_name().unwrap());
    std::fs::create_dir_all(&hostile).unwrap();
    let log = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    let mut rewritten = String::new();
    for line in log.lines() {
        let mut e: serde_json::Value = serde_json::from_str(line).unwrap();
        if e["type"] == "model_switch" {
            e["payload"]["to_model"] = json!("m\u{1b}]0;PWN\u{7}");
            e["payload"]["to_base_url"] = json!("http://x/\u{1b}[2J[click](javascript:alert(1))");
            e["payload"]["kind"] = json!("fallback\u{1b}[31m");
        }
        rewritten.push_str(&e.to_string());
        rewritten.push('\n');
    }
    std::fs::write(hostile.join("events.jsonl"), rewritten).unwrap();
    for args in [&["show"][..], &["export", "--format", "md"][..]] {
        let out =
            harrow_cmd(tmp.path(), &primary.base_url()).args(args).arg(&hostile).output().unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(!said.contains('\u{1b}') && !said.contains('\u{7}'), "{args:?}: {said:?}");
        if args[0] == "export" {
            // Markdown, where a link would be live: its brackets are escaped, so it is text.
            assert!(said.contains("\\[click\\](javascript:"), "{said}");
            assert!(!said.contains(" [click](javascript:"), "a live link: {said}");
        }
    }
}

/// A task rejected `escalate_after_rejects` times goes to the stronger model for the rest of
/// it; the next task starts on the first model again.
#[test]
fn a_task_rejected_enough_times_goes_to_the_stronger_model_and_the_next_task_does_not() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 2);
    let first = json!({
        "worker": {"T-001": {"1": write_and_submit(1), "2": write_and_submit(1)}, "T-002": {"1": write_and_submit(2)}},
        "evaluator": {
            "T-001": {"1": [loop_fixture::reject("weak_test")], "2": [loop_fixture::reject("weak_test")], "3": [accept()]},
            "T-002": {"1": [accept()]}
        }
    });
    let (_rp, primary) = serve(&first, true);
    let strong = json!({"worker": {"T-001": {"3": [{"tool_calls": [{"name": "submit_case", "arguments": loop_fixture::case(1)}]}]}}});
    let (_rs, stronger) = serve(&strong, true);
    std::fs::create_dir_all(tmp.path().join("harrow")).unwrap();
    let config = format!(
        "[models.worker]\nescalate_after_rejects = 2\nescalate_to = {{ base_url = \"{}\", model = \"scripted/strong\", api_key_env = \"HARROW_TEST_STRONG_API_KEY\" }}\n",
        stronger.base_url()
    );
    std::fs::write(tmp.path().join("harrow/config.toml"), &config).unwrap();
    let out = headless_run(harrow_cmd(tmp.path(), &primary.base_url()), &plan, &repo)
        .env("HARROW_TEST_STRONG_API_KEY", "sk-strong-dddddddddddd")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let dir =
        std::fs::read_dir(tmp.path().join("sessions")).unwrap().last().unwrap().unwrap().path();
    let events = support::strict_events(&dir);
    let switches: Vec<_> = events.iter().filter(|e| e["type"] == "model_switch").collect();
    assert_eq!(switches.len(), 1, "{switches:?}");
    assert_eq!(switches[0]["payload"]["task_id"], "T-001");
    assert!(switches[0]["payload"]["why"].as_str().unwrap().contains("rejected 2 time"));
    let strong_asked: Vec<_> =
        stronger.received().into_iter().filter(|r| r.role == "worker").collect();
    assert!(
        !strong_asked.is_empty()
            && strong_asked.iter().all(|r| r.task == "T-001" && r.attempt == "3")
    );
    assert!(strong_asked.iter().all(|r| r.authorization == "Bearer sk-strong-dddddddddddd"));
    assert!(
        primary.received().iter().any(|r| r.role == "worker" && r.task == "T-002"),
        "the next task is back on the first model"
    );
    let id = dir.file_name().unwrap().to_string_lossy().into_owned();
    let show = harrow_cmd(tmp.path(), &primary.base_url()).args(["show", &id]).output().unwrap();
    let shown = String::from_utf8_lossy(&show.stdout);
    assert!(
        shown.contains("from attempt 3: scripted/strong at http://127.0.0.1:")
            && shown.contains("/v1 (escalation)"),
        "which model made which attempt, where, and why: {shown}"
    );
    let by_model = shown.split("By model").nth(1).unwrap_or_else(|| panic!("{shown}"));
    assert!(
        by_model.contains("scripted/strong") && by_model.contains("scripted/worker"),
        "{shown}"
    );
    let md = tmp.path().join("export.md");
    let export = harrow_cmd(tmp.path(), &primary.base_url())
        .args(["export", &id, "--format", "md", "-o"])
        .arg(&md)
        .output()
        .unwrap();
    assert!(export.status.success(), "{}", String::from_utf8_lossy(&export.stderr));
    let text = std::fs::read_to_string(&md).unwrap();
    let third = text.split("Attempt 3").nth(1).unwrap_or_else(|| panic!("{text}"));
    assert!(third.contains("Worker model: `scripted/strong` at http://127.0.0.1:"), "{text}");
    assert!(third.contains("/v1 (escalation)"), "where it answered and why: {text}");
    let first = text.split("Attempt 1").nth(1).unwrap().split("Attempt 3").next().unwrap();
    assert!(!first.contains("Worker model"), "the run's own model is not named: {text}");
}

/// An evaluator fallback of the worker's own model family is said at the start, on the
/// terminal and in the session's start: the evaluator's independence is never given up
/// silently.
#[test]
fn an_evaluator_fallback_of_the_workers_family_is_said_at_the_start() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 1);
    let script = json!({"worker": {"T-001": {"1": write_and_submit(1)}}, "evaluator": {"*": {"*": [accept()]}}});
    let (_rt, server) = serve(&script, true);
    std::fs::create_dir_all(tmp.path().join("harrow")).unwrap();
    let config = format!(
        "[models.evaluator]\nfallback = [{{ base_url = \"{}\", model = \"scripted/worker-big\" }}]\n",
        server.base_url()
    );
    std::fs::write(tmp.path().join("harrow/config.toml"), &config).unwrap();
    let out =
        headless_run(harrow_cmd(tmp.path(), &server.base_url()), &plan, &repo).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains(
            "the evaluator's fallback scripted/worker-big is of the worker's model family (worker)"
        ),
        "{said}"
    );
    let dir =
        std::fs::read_dir(tmp.path().join("sessions")).unwrap().last().unwrap().unwrap().path();
    let start =
        support::strict_events(&dir).into_iter().find(|e| e["type"] == "session_start").unwrap();
    assert!(start["payload"]["notices"].to_string().contains("worker's model family"), "{start}");
}

/// A primary endpoint that is down when the run starts does not stop it when its fallback
/// answers: the start check says the primary is down and names the fallback, and the run goes
/// on there to the end.
#[test]
fn a_primary_down_at_the_start_is_covered_by_a_fallback_that_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 1);
    let script = json!({
        "worker": {"T-001": {"1": write_and_submit(1)}},
        "evaluator": {"*": {"*": [accept()]}}
    });
    let (_rf, fallback) = serve(&script, true);
    std::fs::create_dir_all(tmp.path().join("harrow")).unwrap();
    let config = format!(
        "[models]\nmax_tries = 1\nretry_base_ms = 10\n\n[models.worker]\nfallback = [{{ base_url = \"{}\", model = \"scripted/fallback\" }}]\n",
        fallback.base_url()
    );
    std::fs::write(tmp.path().join("harrow/config.toml"), &config).unwrap();
    // Nothing listens on port 9: the worker's own endpoint is down. The evaluator is on the
    // fallback's server.
    let out = headless_run(harrow_cmd(tmp.path(), "http://127.0.0.1:9/v1"), &plan, &repo)
        .env("HARROW_EVALUATOR_BASE_URL", fallback.base_url())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{stderr}", String::from_utf8_lossy(&out.stdout));
    assert!(
        stderr.contains("the worker endpoint http://127.0.0.1:9/v1 cannot be reached")
            && stderr.contains("its fallback scripted/fallback at http://127.0.0.1:")
            && stderr.contains("answers, so the run starts"),
        "{stderr}"
    );
    let dir =
        std::fs::read_dir(tmp.path().join("sessions")).unwrap().last().unwrap().unwrap().path();
    let events = support::strict_events(&dir);
    assert!(events.iter().any(|e| e["type"] == "model_switch"), "the calls went to the fallback");
    assert_eq!(events.iter().filter(|e| e["type"] == "task_done").count(), 1);
}

/// An endpoint that failed a task's call after its tries is passed over by the tasks after it
/// for the cool-down: the next task goes to the fallback at once, saying why, and asks the
/// failed endpoint nothing.
#[test]
fn a_later_task_does_not_retry_the_endpoint_that_just_failed() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = repo_and_plan(tmp.path(), 3);
    let failing = json!({
        "worker": {"T-001": {"1": write_and_submit(1)}, "*": {"*": [{"http_status": 503}, {"http_status": 503}]}},
        "evaluator": {"*": {"*": [accept()]}}
    });
    let (_rp, primary) = serve(&failing, true);
    let rescue = json!({"worker": {"T-002": {"1": write_and_submit(2)}, "T-003": {"1": write_and_submit(3)}}});
    let (_rf, fallback) = serve(&rescue, true);
    std::fs::create_dir_all(tmp.path().join("harrow")).unwrap();
    let config = format!(
        "[models]\nmax_tries = 2\nretry_base_ms = 10\n\n[models.worker]\nfallback = [{{ base_url = \"{}\", model = \"scripted/fallback\" }}]\n",
        fallback.base_url()
    );
    std::fs::write(tmp.path().join("harrow/config.toml"), &config).unwrap();
    let out =
        headless_run(harrow_cmd(tmp.path(), &primary.base_url()), &plan, &repo).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    let asked = |task: &str| {
        primary.received().iter().filter(|r| r.role == "worker" && r.task == task).count()
    };
    assert_eq!(asked("T-002"), 2, "T-002 spent the endpoint's tries");
    assert_eq!(asked("T-003"), 0, "T-003 did not ask the endpoint that had just failed");
    let dir =
        std::fs::read_dir(tmp.path().join("sessions")).unwrap().last().unwrap().unwrap().path();
    let switches: Vec<_> =
        support::strict_events(&dir).into_iter().filter(|e| e["type"] == "model_switch").collect();
    let third = switches.iter().find(|s| s["payload"]["task_id"] == "T-003").unwrap();
    let why = third["payload"]["why"].as_str().unwrap();
    assert!(why.contains("s ago; it is asked again 300 s after that"), "{why}");
    // show names each switch's endpoint and that it was a fallback: the same model name on
    // two servers reads as the switch it is.
    let show = harrow_cmd(tmp.path(), &primary.base_url())
        .args(["show", dir.to_str().unwrap()])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&show.stdout);
    let line = format!("scripted/fallback at {} (fallback)", fallback.base_url());
    assert!(shown.contains(&format!("from attempt 1: {line}")), "{shown}");
}
