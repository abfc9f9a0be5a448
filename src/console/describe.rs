//! One readable line per event, derived from the log alone: the headless output of `run` and
//! `resume`, and the rows of the console's event stream.

use crate::session::event::{
    Event, ModelCall, Payload, PullRequest, Push, SessionStart, ValidatorRun,
};
use crate::session::outcome::LastOutcome;
use crate::session::state::Ruling;
use crate::session::state::TaskState as State;
use serde_json::Value;

fn short(text: &str, max: usize) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        format!("{}…", one_line.chars().take(max).collect::<String>())
    }
}

/// The argument that says most about a tool call (an ACP agent's calls have a title).
fn args_gist(args: &Value) -> String {
    match args {
        Value::Object(m) => ["command", "path", "pattern", "title"]
            .iter()
            .find_map(|k| m.get(*k).and_then(Value::as_str))
            .map(|s| short(s, 70))
            .unwrap_or_default(),
        Value::String(s) => s.clone(),
        _ => String::new(),
    }
}

/// The line for an event, or `None` for events too fine-grained to print. In a run with lanes
/// each line of a lane's work starts with its lane (`L2 `), as the console's rows do, so lines
/// that interleave can be told apart.
pub fn describe(e: &Event) -> Option<String> {
    let line = describe_event(e)?;
    Some(match e.lane {
        // Lane 0, which earlier logs wrote for work between lanes, is no lane.
        Some(lane) if lane > 0 => format!("L{lane} {}", line.trim_start()),
        _ => line,
    })
}

fn describe_event(e: &Event) -> Option<String> {
    let task = e.task_id().unwrap_or("-");
    let iter = e.payload.scope().and_then(|s| s.iter).map(|i| format!(" #{i}")).unwrap_or_default();
    if let Some(line) = operator_row(e, task, &iter) {
        return Some(line);
    }
    Some(match &e.payload {
        Payload::SessionStart(p) => session_started(p),
        Payload::TaskState(p) if p.to == Some(State::Running) => match p.from {
            Some(State::Rework) => {
                format!("↻ {task} rework (attempt {})", p.scope.attempt.unwrap_or(2))
            }
            Some(State::Validating) => {
                format!("↩ {task} back to the worker: {}", p.reason.as_deref().unwrap_or(""))
            }
            _ => format!("▶ {task} started (attempt {})", p.scope.attempt.unwrap_or(1)),
        },
        Payload::TaskState(p) if p.to == Some(State::NeedsOperator) => {
            format!("⏸ {task} waits for the operator: {}", p.reason.as_deref().unwrap_or(""))
        }
        Payload::ToolCall(p) => {
            let tool = p.tool.as_deref().unwrap_or("?");
            if crate::session::vocabulary::ToolName::SubmitCase.is(Some(tool)) {
                format!("  {task}{iter} submit_case")
            } else {
                format!(
                    "  {task}{iter} {tool} {}",
                    args_gist(p.args.as_ref().unwrap_or(&Value::Null))
                )
            }
        }
        Payload::PreToolBlock(p) => {
            let why = p.output.as_deref().or(p.result_preview.as_deref()).unwrap_or("");
            let why = why.strip_prefix("BLOCKED ").unwrap_or(why);
            format!("  {task}{iter} BLOCKED {}", short(why, 90))
        }
        Payload::ModelCall(p)
            if crate::session::vocabulary::Health::failed(p.health.as_deref()) =>
        {
            unhealthy_call(p)
        }
        Payload::LoopDetected(p)
            if p.tool.as_deref() == Some(crate::session::vocabulary::WORKTREE_LOOP) =>
        {
            format!(
                "⚠ {task}{iter} its edits undo each other: the files came back to an earlier state {} times ({}), {}",
                p.times.unwrap_or(0),
                short(p.arguments.as_deref().unwrap_or(""), 60),
                if crate::session::vocabulary::LoopAction::Held.is(p.action.as_deref()) {
                    "held for you"
                } else {
                    "nudged"
                }
            )
        }
        Payload::LoopDetected(p) => format!(
            "⚠ {task}{iter} repeats itself: {} {} {} times in a row, {}",
            p.tool.as_deref().unwrap_or("a tool"),
            short(p.arguments.as_deref().unwrap_or(""), 60),
            p.times.unwrap_or(0),
            if crate::session::vocabulary::LoopAction::Held.is(p.action.as_deref()) {
                "held for you"
            } else {
                "nudged"
            }
        ),
        Payload::Nudge(_) => format!("  {task}{iter} quiet turn: nudged to submit its case"),
        Payload::FeedbackSent(p)
            if crate::session::vocabulary::FeedbackKind::Merge.is(p.kind.as_deref()) =>
        {
            format!(
                "⚠ {task} accepted, but {}: back to its worker",
                crate::session::outcome::not_landed_because(
                    p.conflicts.as_deref().unwrap_or_default()
                )
            )
        }
        Payload::CaseParseError(p) => format!(
            "  {task}{iter} case sent back: {}",
            short(p.error.as_deref().unwrap_or(""), 90)
        ),
        Payload::EvaluatorParseError(p) => format!(
            "  {task}{iter} evaluator answer unparseable: {}",
            short(p.error.as_deref().unwrap_or(""), 80)
        ),
        Payload::ValidatorRun(p) => validators_line(&format!("{task}{iter}"), p),
        Payload::Verdict(p) => {
            let v = p.verdict.as_deref().unwrap_or("?");
            let cat =
                p.rejection_category.as_deref().map(|c| format!(" ({c})")).unwrap_or_default();
            let failed =
                if p.parse_failed == Some(true) { " [fail-closed: unparseable]" } else { "" };
            format!(
                "  {task}{iter} verdict: {v}{cat}{failed} — {}",
                short(p.concern.as_deref().unwrap_or(""), 90)
            )
        }
        Payload::TaskDone(p) if p.below_bar == Some(true) => {
            let last = LastOutcome::parse(p.last_outcome.as_deref(), p.last_category.as_deref());
            format!("⚠ {task} accepted BELOW THE BAR: {}", last.describe())
        }
        Payload::TaskDone(p) if p.reviewed == Some(false) => {
            format!("⚠ {task} accepted UNREVIEWED (--no-eval): validators only")
        }
        Payload::Commit(p) => match p.sha.as_deref() {
            Some(sha) => format!("✔ {task} done, committed {}", short_sha(sha)),
            None => format!("✔ {task} done (nothing to commit)"),
        },
        Payload::TaskFailed(p) => {
            format!("✘ {task} failed: {}", p.reason.as_deref().unwrap_or("?"))
        }
        Payload::Stop(p) => {
            let detail = p.error.as_deref().map(|d| format!(" — {d}")).unwrap_or_default();
            format!("■ stopped: {}{detail}", p.reason.as_deref().unwrap_or("?"))
        }
        Payload::OperatorAction(p) => format!(
            "  operator: {} {}",
            p.action.as_deref().unwrap_or("?"),
            p.reason.as_deref().or(p.note.as_deref()).map(|t| short(t, 100)).unwrap_or_default()
        ),
        Payload::LogRepaired(p) => {
            format!("  log repaired: cut {} torn bytes", p.cut_bytes.unwrap_or(0))
        }
        Payload::SessionResume(p) => {
            format!("session resumed: {}", p.plan.as_deref().unwrap_or(""))
        }
        Payload::Archived(p) => {
            format!(
                "archived: the worktree was removed, branch {} kept",
                p.branch.as_deref().unwrap_or("?")
            )
        }
        Payload::Push(p) => pushed(p),
        Payload::PullRequest(p) => pull_request(p),
        _ => return None,
    })
}

fn session_started(p: &SessionStart) -> String {
    format!(
        "session started: {} ({} tasks{}), worker {}, evaluator {}",
        p.feature.as_deref().unwrap_or("plan"),
        p.task_count.unwrap_or(0),
        p.limits
            .as_ref()
            .and_then(|l| l["lanes"].as_u64())
            .filter(|n| *n > 1)
            .map(|n| format!(", up to {n} at once"))
            .unwrap_or_default(),
        p.worker_model.as_deref().unwrap_or("?"),
        if p.no_eval == Some(true) {
            "off (unreviewed)"
        } else {
            p.evaluator_model.as_deref().unwrap_or("?")
        }
    )
}

/// A model call that failed or came back unusable, and whether it is tried again.
fn unhealthy_call(p: &ModelCall) -> String {
    let what = match (p.http_status, p.error_class.as_deref()) {
        (Some(status), _) => format!("call failed ({status})"),
        (None, Some("unreachable" | "timeout" | "cancelled")) => "call failed".to_owned(),
        _ => format!("reply {}", p.health.as_deref().unwrap_or("?")),
    };
    let next = match p.retry_backoff_seconds {
        Some(wait) => format!("retrying in {wait:.1} s"),
        None => "not retried".to_owned(),
    };
    format!(
        "  {} {what} ({}); {next}",
        p.role.as_deref().unwrap_or("model"),
        p.health_detail.as_deref().unwrap_or(""),
    )
}

/// A validator run: each validator's result and time.
fn validators_line(at: &str, p: &ValidatorRun) -> String {
    let results = p.results.as_deref().unwrap_or_default();
    let parts: Vec<String> = results
        .iter()
        .map(|r| {
            let secs = r.duration_ms.unwrap_or(0) as f64 / 1000.0;
            let mark = if r.passed {
                "ok"
            } else if r.timed_out == Some(true) {
                "TIMED OUT"
            } else {
                "FAILED"
            };
            format!("{} {mark} {secs:.1}s", r.name)
        })
        .collect();
    let verdict = if p.passed == Some(true) { "passed" } else { "failed" };
    let on = if p.combined == Some(true) { " merged with the session branch" } else { "" };
    format!("  {at} validators {verdict}{on}: {}", parts.join(", "))
}

fn pushed(p: &Push) -> String {
    match (&p.error, &p.sha) {
        (Some(error), _) => format!("⇡ push failed: {}", short(error, 120)),
        (None, sha) if p.already_there == Some(true) => format!(
            "⇡ {} on {} was already at {}: nothing to push",
            p.branch.as_deref().unwrap_or("?"),
            p.remote.as_deref().unwrap_or("?"),
            short_sha(sha.as_deref().unwrap_or(""))
        ),
        (None, sha) => format!(
            "⇡ pushed {} to {} on {}{}",
            short_sha(sha.as_deref().unwrap_or("")),
            p.branch.as_deref().unwrap_or("?"),
            p.remote.as_deref().unwrap_or("?"),
            if p.forced == Some(true) { ", over what was there" } else { "" }
        ),
    }
}

fn pull_request(p: &PullRequest) -> String {
    match (&p.error, &p.url, &p.compare_url) {
        (Some(error), ..) => format!("⇡ pull request not opened: {}", short(error, 120)),
        (None, Some(url), _) => format!(
            "⇡ pull request #{} opened on {}: {url}",
            p.number.unwrap_or(0),
            p.forge.as_deref().unwrap_or("?")
        ),
        (None, None, compare) => format!(
            "⇡ pull request to open by hand (no token): {} — its body is in {}",
            compare.as_deref().unwrap_or("?"),
            p.body_file.as_deref().unwrap_or("?")
        ),
    }
}

/// How a row reads at a glance, decided from the event itself rather than its words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Tone {
    #[default]
    Plain,
    /// Accepted, passed, committed.
    Good,
    /// Rejected, failed.
    Bad,
    /// Refused or sent back: worth a look, not a failure.
    Warn,
    /// A decision or a wait: neither good nor bad.
    Waiting,
}

/// The tone of an event's stream row.
pub fn tone(e: &Event) -> Tone {
    match &e.payload {
        Payload::Verdict(v) if v.ruling() != Some(Ruling::Accept) => Tone::Bad,
        Payload::JudgeVerdict(v) if v.accept != Some(true) => Tone::Bad,
        Payload::TaskFailed(_) => Tone::Bad,
        Payload::OperatorReview(r) if r.ruling() == Some(Ruling::Reject) => Tone::Bad,
        Payload::TaskRewound(_) | Payload::OperatorWait(_) => Tone::Waiting,
        Payload::Push(p) if p.error.is_some() => Tone::Bad,
        Payload::PullRequest(p) if p.error.is_some() => Tone::Bad,
        Payload::Commit(_)
        | Payload::Push(_)
        | Payload::PullRequest(_)
        | Payload::OperatorReview(_) => Tone::Good,
        Payload::PreToolBlock(_) => Tone::Warn,
        Payload::FeedbackSent(f)
            if crate::session::vocabulary::FeedbackKind::Merge.is(f.kind.as_deref()) =>
        {
            Tone::Warn
        }
        Payload::ValidatorRun(v) if v.passed != Some(true) => Tone::Warn,
        _ => Tone::Plain,
    }
}

/// The rows of the operator's acts and of what harrow did to the conversation: words, a
/// review, a rewind, a compaction.
fn operator_row(e: &Event, task: &str, iter: &str) -> Option<String> {
    Some(match &e.payload {
        Payload::OperatorSteer(p) if p.delivered == Some(true) => format!(
            "✎ {task}{iter} the operator says: {}",
            crate::printable::line(&short(p.text.as_deref().unwrap_or(""), 100))
        ),
        Payload::OperatorSteer(p) => format!(
            "  {task} steer not sent: {}",
            crate::printable::line(&short(
                p.reason.as_deref().unwrap_or("its task was not at work"),
                110
            ))
        ),
        Payload::OperatorWait(p) if p.tool.is_some() => {
            format!("? {}", crate::printable::line(&short(p.reason.as_deref().unwrap_or(""), 160)))
        }
        Payload::OperatorReview(p) => format!(
            "✎ {task} the operator's review: {}, {} comment(s){}",
            review_verdict(p),
            p.comments.as_ref().map_or(0, Vec::len),
            p.reason
                .as_deref()
                .filter(|r| !r.is_empty())
                .map(|r| format!(": {}", crate::printable::line(&short(r, 90))))
                .unwrap_or_default()
        ),
        Payload::ContextCompacted(p) => format!(
            "⇣ {task}{iter} context compacted: ~{} → ~{} tokens of {} ({}){}",
            p.tokens_before.unwrap_or(0),
            p.tokens_after.unwrap_or(0),
            match p.window {
                Some(w) if w > 0 => w.to_string(),
                _ => "an unknown window".into(),
            },
            match p.trigger.as_deref() {
                Some("server") => "the server said the request was too long",
                _ => "before the request passed the threshold",
            },
            match p.cut.as_ref().map_or(0, Vec::len) {
                0 => String::new(),
                n => format!("; {n} long part(s) of the kept turns cut"),
            }
        ),
        Payload::ModelSwitch(p) => format!(
            "⇄ {task}{iter} the {} now talks to {} at {} (was {}: {})",
            p.role.as_deref().unwrap_or("model"),
            crate::printable::line(p.to_model.as_deref().unwrap_or("?")),
            crate::printable::line(p.to_base_url.as_deref().unwrap_or("?")),
            crate::printable::line(p.from_model.as_deref().unwrap_or("?")),
            crate::printable::line(&short(p.why.as_deref().unwrap_or(""), 80))
        ),
        Payload::BestOf(p) => {
            let n = p.candidates.as_ref().map_or(0, Vec::len);
            let what = match (p.winner, p.reworked) {
                (Some(k), _) if k > 0 => format!("attempt {k} lands"),
                (_, Some(k)) if k > 0 => format!("none was accepted; attempt {k} is reworked"),
                _ => "none could land".to_owned(),
            };
            format!(
                "⚖ {task} best of {n}: {what} — {}",
                crate::printable::line(&short(p.why.as_deref().unwrap_or(""), 120))
            )
        }
        Payload::TaskRewound(p) => format!(
            "↶ {task} rewound to {}: {}",
            crate::session::outcome::rewound_to(p.to_attempt.unwrap_or(0), p.to_turn),
            crate::printable::line(&short(p.reason.as_deref().unwrap_or(""), 100))
        ),
        Payload::OperatorQueue(p) => format!(
            "  {task} queued for its {}: {}",
            crate::printable::line(p.until.as_deref().unwrap_or("next attempt")),
            crate::printable::line(&short(p.text.as_deref().unwrap_or(""), 90))
        ),
        _ => return None,
    })
}

/// An operator review's verdict in words: `reject (weak_test)` or `accept`.
pub fn review_verdict(p: &crate::session::event::OperatorReview) -> String {
    match (p.ruling(), p.rejection_category.as_deref()) {
        (Some(Ruling::Reject), Some(c)) => format!("reject ({})", crate::printable::line(c)),
        (Some(ruling), _) => ruling.as_str().to_owned(),
        (None, _) => "?".into(),
    }
}

/// The stream row for an event: its headless line (without the lane mark: the console marks
/// each row's lane itself), or for the finer events the console also shows, a line of its own.
pub fn row(e: &Event) -> String {
    if let Some(line) = describe_event(e) {
        return line;
    }
    let task = e.task_id().unwrap_or("-");
    let iter = e.payload.scope().and_then(|s| s.iter).map(|i| format!(" #{i}")).unwrap_or_default();
    match &e.payload {
        Payload::AssistantMessage(p) => {
            // Whose words these are: the worker's are the stream's default; any other role
            // (the evaluator above all) is named, so its reasoning is never read as the worker's.
            let who = match p.role.as_deref().map(crate::session::vocabulary::CallRole::parse) {
                None | Some(crate::session::vocabulary::CallRole::Worker) => String::new(),
                Some(role) => format!("{} ", role.as_str()),
            };
            if let Some(said) = p.content.as_deref() {
                format!("  {task}{iter} {who}says: {}", short(said, 100))
            } else if let Some(thought) = p.reasoning.as_deref() {
                format!("  {task}{iter} {who}thinks: {}", short(thought, 100))
            } else {
                let names: Vec<&str> =
                    p.tool_calls.iter().flatten().map(|c| c.name.as_str()).collect();
                let who = p.role.as_deref().unwrap_or("model");
                format!("  {task}{iter} {who} calls {}", names.join(", "))
            }
        }
        Payload::ToolResult(p) => {
            let text = p.output.as_deref().or(p.result_preview.as_deref()).unwrap_or("");
            format!("  {task}{iter}   → {}", short(text, 100))
        }
        Payload::Raw(v) => format!("  {} {}", e.kind, short(&v.to_string(), 90)),
        _ => format!("  {task}{iter} {}", e.kind),
    }
}

/// The first seven characters of a commit id as a log wrote it (a log from elsewhere may hold
/// anything there, so characters, not bytes).
pub fn short_sha(sha: &str) -> String {
    sha.chars().take(7).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_from_a_log_is_cut_by_characters_never_mid_character() {
        let line = r#"{"type":"commit","payload":{"task_id":"T-1","sha":"éééééééé"}}"#;
        let event = Event::decode(line.as_bytes()).unwrap();
        assert_eq!(describe(&event).unwrap(), "✔ T-1 done, committed ééééééé");
    }

    /// Headless lines of a run with lanes name their lane, as the console's rows do.
    /// A loop's rows name the task and turn (the event is scoped like every task event), the
    /// call repeated, how many times, and whether the worker was nudged or the task held.
    #[test]
    fn a_loop_says_the_call_how_often_and_what_was_done() {
        let line = |action: &str, times: u64| {
            format!(
                r#"{{"ts":"2026-11-27T10:00:00Z","seq":9,"type":"loop_detected","payload":{{"task_id":"T-003","iter":2,"attempt":1,"tool":"read_file","arguments":"{{\"path\":\"a.md\"}}","times":{times},"action":"{action}","content":"x"}}}}"#
            )
        };
        let nudged = row(&Event::decode(line("nudged", 3).as_bytes()).unwrap());
        assert_eq!(
            nudged,
            r#"⚠ T-003 #2 repeats itself: read_file {"path":"a.md"} 3 times in a row, nudged"#
        );
        let held = row(&Event::decode(line("held", 4).as_bytes()).unwrap());
        assert!(held.ends_with("4 times in a row, held for you"), "{held}");
        let undone = r#"{"type":"loop_detected","payload":{"task_id":"T-003","iter":5,"tool":"the worktree","arguments":"after turn 3 as after turn 1; after turn 4 as after turn 2","times":2,"action":"nudged"}}"#;
        let undone = row(&Event::decode(undone.as_bytes()).unwrap());
        assert!(
            undone.contains("edits undo each other")
                && undone.contains("2 times")
                && undone.ends_with("nudged"),
            "{undone}"
        );
    }

    /// A steer is the operator's words in the worker's stream, marked as theirs; one that did
    /// not reach its worker says why; the words' escapes are shown, never sent to the terminal.
    #[test]
    fn a_steer_is_marked_as_the_operators_and_an_undelivered_one_says_why() {
        let steer = |delivered: bool| {
            format!(
                r#"{{"type":"operator_steer","payload":{{"task_id":"T-002","iter":4,"text":"use tabs \u001b[31m","delivered":{delivered},"reason":"its attempt was over"}}}}"#
            )
        };
        let sent = row(&Event::decode(steer(true).as_bytes()).unwrap());
        assert!(sent.starts_with("✎ T-002 #4 the operator says: use tabs"), "{sent}");
        assert!(!sent.contains('\u{1b}'), "{sent}");
        let lost = row(&Event::decode(steer(false).as_bytes()).unwrap());
        assert!(lost.contains("steer not sent: its attempt was over"), "{lost}");
        let queued = r#"{"type":"operator_queue","payload":{"task_id":"T-003","text":"keep the API","until":"first turn"}}"#;
        let queued = row(&Event::decode(queued.as_bytes()).unwrap());
        assert!(queued.contains("queued for its first turn: keep the API"), "{queued}");
    }

    #[test]
    fn a_lanes_lines_start_with_their_lane() {
        let line = r#"{"lane":2,"type":"tool_call","payload":{"task_id":"T-2","iter":1,"tool":"write_file","args":{"path":"f.txt"}}}"#;
        let said = describe(&Event::decode(line.as_bytes()).unwrap()).unwrap();
        assert!(said.starts_with("L2 T-2 #1 write_file"), "{said}");
        let one_lane = r#"{"type":"commit","payload":{"task_id":"T-1","sha":"abcdef0"}}"#;
        assert!(!describe(&Event::decode(one_lane.as_bytes()).unwrap()).unwrap().starts_with('L'));
    }

    #[test]
    fn the_evaluators_words_are_labelled_as_the_evaluators() {
        let row_of = |payload: &str| {
            let line = format!(r#"{{"type":"assistant_message","payload":{payload}}}"#);
            row(&Event::decode(line.as_bytes()).unwrap())
        };
        assert_eq!(
            row_of(
                r#"{"task_id":"T-1","iter":5,"role":"evaluator","reasoning":"The test is weak."}"#
            ),
            "  T-1 #5 evaluator thinks: The test is weak."
        );
        assert_eq!(
            row_of(r#"{"task_id":"T-1","iter":5,"role":"evaluator","content":"Rejecting."}"#),
            "  T-1 #5 evaluator says: Rejecting."
        );
        assert_eq!(
            row_of(r#"{"task_id":"T-1","iter":2,"role":"worker","content":"I will add it."}"#),
            "  T-1 #2 says: I will add it."
        );
        assert_eq!(
            row_of(r#"{"task_id":"T-1","iter":2,"role":"worker","reasoning":"Start small."}"#),
            "  T-1 #2 thinks: Start small."
        );
    }
}
