//! Realistic generated sessions, for benchmarks and large-log tests.
//!
//! The mix of event types and sizes follows the Tilth fixtures: about 850 bytes per event on
//! average, with worker `prompt_assembled` lines of 4–8 KB and evaluator prompts of 8–16 KB,
//! tool results with 500-character previews, verdicts that reject about one case in three. The
//! same seed always gives the same bytes.

use serde_json::{Value, json};
use std::fmt::Write as _;
use std::io::{self, Write};

/// Which writer's dialect to imitate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// No `seq`, one-second timestamps, Tilth v0.2 event set.
    Tilth,
    /// `seq`, millisecond timestamps, plus harrow's assistant messages and validator runs.
    Harrow,
}

/// A small deterministic generator (xorshift64*), so benches and tests need no extra crate.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn hex(&mut self, len: usize) -> String {
        let mut s = String::with_capacity(len);
        while s.len() < len {
            let _ = write!(s, "{:016x}", self.next());
        }
        s.truncate(len);
        s
    }

    fn prose(&mut self, len: usize) -> String {
        const WORDS: &[&str] = &[
            "the",
            "task",
            "acceptance",
            "criteria",
            "todo_cli",
            "parser",
            "returns",
            "items",
            "markdown",
            "file",
            "tests",
            "pass",
            "edge",
            "case",
            "empty",
            "list",
            "function",
            "argument",
            "\"quoted\"",
            "line\nbreak",
            "unicode \u{2014} dash",
            "path/to/mod.py:42",
        ];
        let mut s = String::with_capacity(len + 16);
        while s.len() < len {
            s.push_str(WORDS[self.below(WORDS.len() as u64) as usize]);
            s.push(' ');
        }
        s.truncate(
            s.char_indices()
                .take_while(|(i, _)| *i < len)
                .last()
                .map_or(0, |(i, c)| i + c.len_utf8()),
        );
        s
    }
}

const TOOLS: &[&str] =
    &["read_file", "bash", "write_file", "edit_file", "grep", "glob", "list_dir"];

struct Out<'w, W: Write> {
    w: &'w mut W,
    dialect: Dialect,
    seq: u64,
    clock_ms: u64,
    written: u64,
    limit: u64,
}

impl<W: Write> Out<'_, W> {
    fn emit(&mut self, kind: &str, payload: &Value) -> io::Result<bool> {
        if self.written >= self.limit {
            return Ok(false);
        }
        self.seq += 1;
        self.clock_ms += 137;
        let secs = 1_795_321_723 + self.clock_ms / 1000;
        let ts = jiff::Timestamp::from_second(secs as i64).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        let line = match self.dialect {
            Dialect::Tilth => {
                let ts = ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
                json!({"ts": ts, "type": kind, "payload": payload})
            }
            Dialect::Harrow => {
                let ts =
                    format!("{}.{:03}Z", ts.strftime("%Y-%m-%dT%H:%M:%S"), self.clock_ms % 1000);
                json!({"ts": ts, "seq": self.seq, "type": kind, "payload": payload})
            }
        };
        serde_json::to_writer(&mut *self.w, &line)?;
        self.w.write_all(b"\n")?;
        self.written += 1;
        Ok(true)
    }
}

/// Makes `dir` a session folder whose `events.jsonl` is [`generate`]'s session. Returns the
/// log's path.
pub fn write_session(
    dir: &std::path::Path,
    events: u64,
    dialect: Dialect,
    seed: u64,
) -> io::Result<std::path::PathBuf> {
    std::fs::create_dir_all(dir)?;
    let log = dir.join("events.jsonl");
    let mut out = io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&log)?);
    generate(&mut out, events, dialect, seed)?;
    out.flush()?;
    Ok(log)
}

/// Writes a session of exactly `events` events (the last task may be cut short, as in a log
/// that is still growing).
pub fn generate(w: &mut impl Write, events: u64, dialect: Dialect, seed: u64) -> io::Result<()> {
    let mut rng = Rng(seed | 1);
    let mut out = Out { w, dialect, seq: 0, clock_ms: 0, written: 0, limit: events };
    let tasks = (events / 40).max(1);
    let start = json!({
        "source": "/home/dev/todo-cli", "feature_dir": "/home/dev/todo-cli/.tilth/todo-cli",
        "feature": "todo-cli", "phase": "run", "worktree": "/home/dev/sessions/x/workspace",
        "branch": "session/x", "worker_model": "fake/worker", "evaluator_model": "fake/evaluator",
        "base_url": "http://127.0.0.1:18080/v1",
        "limits": {"max_token_dollar_spend": 10.0, "max_wall_clock_minutes": 120,
                   "max_iterations_per_task": 32, "max_evaluator_calls_per_task": 0},
        "task_count": tasks,
    });
    if !out.emit("session_start", &start)? {
        return Ok(());
    }
    let mut total_tokens = 0u64;
    for t in 1..=tasks {
        if !task(&mut out, &mut rng, t, &mut total_tokens)? {
            return Ok(());
        }
    }
    out.emit("stop", &json!({"reason": "all_done"}))?;
    Ok(())
}

fn task<W: Write>(
    out: &mut Out<'_, W>,
    rng: &mut Rng,
    t: u64,
    total: &mut u64,
) -> io::Result<bool> {
    let task_id = format!("T-{t:03}");
    let trace = rng.hex(32);
    let setup = rng.hex(16);
    let scope = |span: &str, iter: u64| json!({"task_id": task_id, "trace_id": trace, "span_id": span, "iter": iter});
    let with = |mut base: Value, extra: Value| {
        if let (Some(b), Value::Object(e)) = (base.as_object_mut(), extra) {
            b.extend(e);
        }
        base
    };
    let mut ok = out
        .emit("context_reset", &json!({"task_id": task_id, "trace_id": trace, "span_id": setup}))?;
    ok &= out.emit("memory_load", &with(scope(&setup, 0), json!({"trigger": "task_start", "channels": {"agents_md": {"present": true, "chars": 676, "truncated": false}, "progress_tail": {"present": t > 1, "chars": 40 * t, "lines": t - 1, "truncated": false}}, "user_prompt_chars": 7417})))?;
    let len = 4000 + rng.below(4000) as usize;
    let prompt = rng.prose(len);
    ok &= out.emit(
        "prompt_assembled",
        &with(
            scope(&setup, 0),
            json!({"role": "worker", "content": prompt, "chars": prompt.len(), "truncated": false}),
        ),
    )?;
    let mut iter = 0u64;
    let mut attempt = 1u64;
    while ok {
        iter += 1;
        let span = rng.hex(16);
        let (pt, et) = (3000 + rng.below(3000), 40 + rng.below(300));
        *total += pt + et;
        let mut call = json!({"call_attempt": 1, "prompt_tokens": pt, "eval_tokens": et, "cached_tokens": pt / 2, "reasoning_tokens": rng.below(30), "cost": (pt + et) as f64 * 3e-7, "tokens_used_total": *total, "health": "ok", "finish_reason": "tool_calls", "model": "fake/worker", "response_id": format!("gen-{}", rng.hex(20))});
        if out.dialect == Dialect::Harrow {
            call["role"] = json!("worker");
            call["attempt"] = json!(attempt);
        }
        ok &= out.emit("model_call", &with(scope(&span, iter), call))?;
        let submits = iter.is_multiple_of(6);
        let tool =
            if submits { "submit_case" } else { TOOLS[rng.below(TOOLS.len() as u64) as usize] };
        if out.dialect == Dialect::Harrow {
            let reasoning = rng.prose(80);
            let content = rng.prose(120);
            ok &= out.emit("assistant_message", &with(scope(&span, iter), json!({"role": "worker", "content": content, "reasoning": reasoning, "tool_calls": [{"id": rng.hex(12), "name": tool, "arguments": "{\"path\": \"todo_cli/main.py\"}"}]})))?;
        }
        if !submits {
            ok &= out.emit("tool_call", &with(scope(&span, iter), json!({"tool": tool, "args": {"path": "todo_cli/main.py", "command": "python -m pytest -q"}})))?;
            let blocked = rng.below(40) == 0;
            ok &= out.emit("hook_run", &with(scope(&span, iter), json!({"tool": tool, "hook": "pre_tool", "outcome": if blocked { "block" } else { "allow" }})))?;
            let len = 150 + rng.below(350) as usize;
            let preview = rng.prose(len);
            let kind = if blocked { "pre_tool_block" } else { "tool_result" };
            ok &= out.emit(kind, &with(scope(&span, iter), json!({"tool": tool, "result_preview": preview, "result_chars": preview.len() * 3})))?;
            continue;
        }
        ok &= out.emit("tool_call", &with(scope(&span, iter), json!({"tool": "submit_case", "args": {"summary": rng.prose(90), "ac_coverage": [{"criterion": rng.prose(60), "addressed_by": "todo_cli/main.py:main"}], "work_arounds": [], "uncertainties": []}})))?;
        if out.dialect == Dialect::Harrow {
            ok &= out.emit("validator_run", &with(scope(&span, iter), json!({"passed": true, "results": [{"name": "tests", "passed": true, "command": "cargo test", "exit_code": 0, "duration_ms": 2100, "output": rng.prose(200)}]})))?;
        }
        let len = 8000 + rng.below(8000) as usize;
        let eval_prompt = rng.prose(len);
        ok &= out.emit("prompt_assembled", &with(scope(&span, iter), json!({"role": "evaluator", "content": eval_prompt, "chars": eval_prompt.len(), "truncated": false})))?;
        let (ept, eet) = (3000 + rng.below(2000), 30 + rng.below(80));
        *total += ept + eet;
        ok &= out.emit("model_call", &with(scope(&span, iter), json!({"attempt": 1, "phase": "evaluator", "call_attempt": 1, "prompt_tokens": ept, "eval_tokens": eet, "cached_tokens": 0, "reasoning_tokens": 0, "cost": (ept + eet) as f64 * 3e-7, "tokens_used_total": *total, "health": "ok", "finish_reason": "stop"})))?;
        let accept = rng.below(3) != 0 || attempt >= 3;
        let categories = super::state::Category::names();
        let category = categories[rng.below(categories.len() as u64) as usize];
        let verdict = if accept {
            json!({"schema_version": 1, "verdict": "accept", "rejection_category": null, "concern": rng.prose(120), "evidence": ["todo_cli/main.py:12"], "next_step": null})
        } else {
            json!({"schema_version": 1, "verdict": "reject", "rejection_category": category, "concern": rng.prose(160), "evidence": ["todo_cli/main.py:12", "tests/test_t001.py:4"], "next_step": rng.prose(140)})
        };
        ok &= out.emit("evaluator_verdict", &with(scope(&span, iter), verdict))?;
        let summary = if accept { "accept".to_owned() } else { format!("reject:{category}") };
        ok &= out.emit(
            "ledger_appended",
            &with(scope(&span, iter), json!({"verdict_summary": summary})),
        )?;
        if accept {
            ok &= out.emit("task_done", &json!({"task_id": task_id, "trace_id": trace, "span_id": span, "summary": rng.prose(90)}))?;
            ok &= out.emit(
                "commit",
                &json!({"task_id": task_id, "trace_id": trace, "sha": rng.hex(7)}),
            )?;
            return Ok(ok);
        }
        attempt += 1;
    }
    Ok(ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::event::Event;

    #[test]
    fn generates_exactly_n_decodable_events_of_realistic_size() {
        for dialect in [Dialect::Tilth, Dialect::Harrow] {
            let mut buf = Vec::new();
            generate(&mut buf, 5_000, dialect, 7).unwrap();
            let lines: Vec<&[u8]> = buf.split(|b| *b == b'\n').filter(|l| !l.is_empty()).collect();
            assert_eq!(lines.len(), 5_000);
            for l in &lines {
                Event::decode(l).unwrap();
            }
            let avg = buf.len() / lines.len();
            assert!((600..1100).contains(&avg), "{dialect:?}: {avg} bytes per event");
            let mut again = Vec::new();
            generate(&mut again, 5_000, dialect, 7).unwrap();
            assert_eq!(buf, again);
        }
    }
}
