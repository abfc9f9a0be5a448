//! The text of the Exchange, Validators and Ledger panes (and of the inspector, which shows the
//! same things at length), made from whole events fetched for the task on screen.

use super::describe::Tone;
use crate::session::event::{Event, Payload, ValidatorRun, Verdict};
use crate::session::state::Ruling;
use crate::session::state::category_meaning;
use serde_json::Value;

/// How many lines of a validator's output the Validators pane keeps: its tail, where the
/// failures are.
const OUTPUT_TAIL: usize = 40;

/// A verdict: outcome and category with its meaning, score, concern, evidence, next step.
pub fn verdict_lines(v: &Verdict) -> Vec<String> {
    let mut lines = Vec::new();
    let outcome = v.verdict.as_deref().unwrap_or("?").to_uppercase();
    match v.rejection_category.as_deref() {
        Some(c) => {
            lines.push(format!("{outcome} — {c}"));
            lines.push(format!(
                "  {c}: {}",
                category_meaning(c).unwrap_or("(not a known category)")
            ));
        }
        None if v.parse_failed == Some(true) => lines
            .push(format!("{outcome} — fail-closed: the evaluator's answer could not be parsed")),
        None => lines.push(outcome),
    }
    if let Some(score) = v.score {
        lines.push(format!("Score: {score:.0}"));
    }
    lines.push(String::new());
    lines.push(format!("Concern: {}", v.concern.as_deref().unwrap_or("")));
    let evidence = v.evidence.clone().unwrap_or_default();
    if !evidence.is_empty() {
        lines.push("Evidence:".into());
        lines.extend(evidence.iter().enumerate().map(|(i, e)| format!("  [{}] {e}", i + 1)));
    }
    if let Some(n) = &v.next_step {
        lines.push(format!("Next step: {n}"));
    }
    lines.extend(witness_lines(v));
    lines
}

/// The verdict's witnesses as harrow checked them, and what the gate made of an accept that
/// lacked evidence.
fn witness_lines(v: &Verdict) -> Vec<String> {
    use crate::printable::line;
    use crate::session::event::EvidenceGate;
    let mut lines = Vec::new();
    let witnesses = v.witnesses.as_deref().unwrap_or_default();
    if !witnesses.is_empty() {
        lines.push("Witnesses (checked by harrow):".into());
        for w in witnesses {
            lines.push(format!(
                "  {} criterion {} · {} {} — {}",
                if w.seen { "✓" } else { "✗" },
                w.criterion,
                line(&w.kind),
                line(&w.cited),
                line(w.why.as_deref().unwrap_or(if w.seen { "seen" } else { "not seen" }))
            ));
        }
    }
    let missing: Vec<String> = v.unwitnessed.iter().flatten().map(u64::to_string).collect();
    let without = format!("criteria without a witness harrow saw: {}", missing.join(", "));
    match v.evidence_gate {
        Some(EvidenceGate::SentBack) => {
            lines.push(format!("⚠ Sent back to the evaluator: {without}"));
        }
        Some(EvidenceGate::Held) => lines.push(format!("⚠ Held for you: {without}")),
        Some(EvidenceGate::Warned) => {
            lines.push(format!("⚠ Landed without evidence (evidence = warn): {without}"));
        }
        Some(EvidenceGate::Seen) | None => {}
    }
    lines
}

/// A case: summary, criterion → pointer table, work-arounds, uncertainties.
pub fn case_lines(case: &Value) -> Vec<String> {
    let mut out = vec![format!("Case: {}", case["summary"].as_str().unwrap_or(""))];
    for c in case["ac_coverage"].as_array().into_iter().flatten() {
        out.push(format!(
            "  {} → {}",
            c["criterion"].as_str().unwrap_or("?"),
            c["addressed_by"].as_str().unwrap_or("?")
        ));
    }
    for (title, key) in [("Work-arounds", "work_arounds"), ("Uncertainties", "uncertainties")] {
        let items: Vec<&str> =
            case[key].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        if !items.is_empty() {
            out.push(format!("{title}:"));
            out.extend(items.iter().map(|i| format!("  • {i}")));
        }
    }
    out
}

/// A validator run in brief: pass or fail per command.
pub fn validator_lines(run: &ValidatorRun) -> Vec<String> {
    let mut out =
        vec![format!("Validators: {}", if run.passed == Some(true) { "passed" } else { "failed" })];
    for r in run.results.iter().flatten() {
        let detail = r.exit_code.map(|c| format!(" exit {c}")).unwrap_or_default();
        out.push(format!(
            "  {} {}{detail}",
            if r.passed { "✓" } else { "✗" },
            r.command.as_deref().unwrap_or(&r.name)
        ));
    }
    out
}

/// A validator run at length: each command with its exit code and duration, then the tail of
/// its output; each command's first line carries its outcome's tone.
pub fn validator_detail(run: &ValidatorRun) -> Vec<(Tone, String)> {
    let plain = |text: String| (Tone::Plain, text);
    let mut out = Vec::new();
    for r in run.results.iter().flatten() {
        let (tone, mark) = if r.passed {
            (Tone::Good, "✓ passed")
        } else if r.timed_out == Some(true) {
            (Tone::Bad, "✗ TIMED OUT")
        } else {
            (Tone::Bad, "✗ FAILED")
        };
        let exit = r.exit_code.map(|c| format!(", exit {c}")).unwrap_or_default();
        let secs = r.duration_ms.map(|ms| format!(", {:.1} s", ms as f64 / 1000.0));
        out.push((tone, format!("{mark}  {}{exit}{}", r.name, secs.unwrap_or_default())));
        if let Some(cmd) = &r.command {
            out.push(plain(format!("  $ {cmd}")));
        }
        match r.output.as_deref().map(str::trim_end).filter(|o| !o.is_empty()) {
            Some(output) => {
                let lines: Vec<&str> = output.lines().collect();
                let skipped = lines.len().saturating_sub(OUTPUT_TAIL);
                if skipped > 0 {
                    out.push(plain(format!("  … {skipped} earlier lines")));
                }
                out.extend(lines[skipped..].iter().map(|l| plain(format!("  {l}"))));
            }
            None => out.push(plain("  (no output recorded)".into())),
        }
        out.push(plain(String::new()));
    }
    if out.is_empty() {
        out.push(plain("(the run recorded no commands)".into()));
    }
    out
}

/// The rows under an operator's review in a task's ledger: each comment at its line.
pub fn review_comment_rows(e: &Event) -> Vec<(Tone, String)> {
    let Payload::OperatorReview(r) = &e.payload else { return Vec::new() };
    (r.comments.iter().flatten())
        .map(|c| {
            let at = crate::printable::line(&format!("{}:{}", c.path, c.line));
            (Tone::Plain, format!("      {at} {}", crate::printable::line(&c.comment)))
        })
        .collect()
}

/// One row of a task's ledger: a verdict (numbered by attempt; `rewound`: a rewind set the
/// attempt aside since), an operator's decision, or a rewind.
pub fn ledger_row(e: &Event, attempt: u64, rewound: bool) -> (Tone, String) {
    match &e.payload {
        Payload::Verdict(v) => {
            let outcome = v.verdict.as_deref().unwrap_or("?");
            let category =
                v.rejection_category.as_deref().map(|c| format!(" ({c})")).unwrap_or_default();
            let tone = match v.ruling() {
                _ if rewound => Tone::Waiting,
                Some(Ruling::Accept) => Tone::Good,
                _ => Tone::Bad,
            };
            let mark = if rewound { " [rewound]" } else { "" };
            let concern = crate::printable::line(v.concern.as_deref().unwrap_or(""));
            (tone, format!("{attempt}. {outcome}{category}{mark}: {concern}"))
        }
        Payload::OperatorReview(r) => (
            if r.ruling() == Some(Ruling::Reject) { Tone::Bad } else { Tone::Good },
            format!(
                "   operator's review: {}{}",
                super::describe::review_verdict(r),
                r.reason
                    .as_deref()
                    .filter(|s| !s.is_empty())
                    .map(|s| format!(": {}", crate::printable::line(s)))
                    .unwrap_or_default()
            ),
        ),
        Payload::TaskRewound(r) => (
            Tone::Waiting,
            format!(
                "   ↶ rewound to {}: {}",
                crate::session::outcome::rewound_to(r.to_attempt.unwrap_or(0), r.to_turn),
                crate::printable::line(r.reason.as_deref().unwrap_or(""))
            ),
        ),
        Payload::OperatorAction(a) => (
            Tone::Waiting,
            format!(
                "   operator {}: {}",
                a.action.as_deref().unwrap_or("?"),
                a.reason.as_deref().or(a.note.as_deref()).unwrap_or("")
            ),
        ),
        _ => (Tone::Waiting, format!("   {}", e.kind)),
    }
}
