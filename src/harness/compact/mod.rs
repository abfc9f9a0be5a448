//! A worker conversation made to fit its model's window: the system prompt and the task's
//! prompt stay, the last turns stay, and what came between is replaced by one message built
//! from what harrow records — the tools called and the files they touched, the task's diff as
//! it stands, the verdicts so far — rather than by a model's summary of itself.
//!
//! A small window asks for more: when the rebuilt conversation is still larger than the room
//! given, the bulky parts of the kept turns (a long read, a build's output, a whole file
//! written) are cut, each with a marker saying how much went and how to get it back; then the
//! diff shrinks to the names of its files and one turn is kept instead of two. The task's own
//! prompt is never cut: a task whose prompt cannot fit is for a person to split.

mod cut;
#[cfg(test)]
mod tests;

use crate::hands::workspace::DiffInfo;
use serde_json::{Value, json};

/// The estimate of a conversation's tokens, shared with the brain's estimate of a call whose
/// server counts none.
pub use crate::brain::estimate::{CHARS_PER_TOKEN, chars, tokens};
/// Turns kept at the end, when they fit.
pub const KEEP_TURNS: usize = 2;
/// Below this many characters a diff excerpt says too little: the files are named instead.
const MIN_DIFF_CHARS: usize = 400;

/// What the compacted conversation is built from beside the messages themselves.
#[derive(Debug, Clone, Default)]
pub struct Record {
    /// The task's change as it stands.
    pub diff: DiffInfo,
    /// The most characters of the diff shown.
    pub diff_max: usize,
    /// One line per verdict that still stands.
    pub verdicts: Vec<String>,
}

/// A compacted conversation and what it kept, for the `context_compacted` event.
#[derive(Debug, Clone, PartialEq)]
pub struct Compacted {
    pub messages: Vec<Value>,
    pub kept: Vec<String>,
    /// Messages the summary replaced.
    pub dropped: usize,
    /// The message that replaced them, as the worker reads it.
    pub summary: String,
    /// What was cut from the kept turns to fit, one line each.
    pub cut: Vec<String>,
}

/// How hard a rebuild presses to fit: the turns kept, the share of the diff shown, the lines
/// of what was done, and the least a cut part of a kept turn keeps.
struct Level {
    keep: usize,
    diff_share: f64,
    done_lines: usize,
    floor: usize,
}

/// From the gentlest rebuild to the hardest; the first that fits is taken.
const LEVELS: [Level; 4] = [
    Level { keep: KEEP_TURNS, diff_share: 1.0, done_lines: 60, floor: 1_500 },
    Level { keep: KEEP_TURNS, diff_share: 0.5, done_lines: 30, floor: 800 },
    Level { keep: 1, diff_share: 0.25, done_lines: 15, floor: 400 },
    Level { keep: 1, diff_share: 0.0, done_lines: 6, floor: 200 },
];

/// The conversation with everything between its first two messages (system, task prompt)
/// and its last turns replaced by one summary, made to fit `budget` characters when one is
/// given (see the module's note). `None` when there is nothing to replace and nothing to cut.
/// The result can still be over the budget when the task's prompt leaves no room.
pub fn compact(messages: &[Value], record: &Record, budget: Option<usize>) -> Option<Compacted> {
    let head = 2.min(messages.len());
    let turns: Vec<usize> =
        (head..messages.len()).filter(|i| messages[*i]["role"] == "assistant").collect();
    let pressed = budget.is_some_and(|b| chars(messages) > b);
    if turns.is_empty() || (turns.len() <= KEEP_TURNS && !pressed) {
        return None;
    }
    let mut last = None;
    for level in &LEVELS {
        let keep = level.keep.min(turns.len());
        let mut built = build(messages, head, turns[turns.len() - keep], record, level);
        if let Some(budget) = budget {
            cut::to_fit(&mut built, head + 1, budget, level.floor);
        }
        let fits = budget.is_none_or(|b| chars(&built.messages) <= b);
        last = Some(built);
        if fits {
            break;
        }
    }
    last
}

/// One rebuild: the head, the summary of `messages[head..tail_from]`, the turns from
/// `tail_from` on.
fn build(
    messages: &[Value],
    head: usize,
    tail_from: usize,
    record: &Record,
    level: &Level,
) -> Compacted {
    let middle = &messages[head..tail_from];
    let tail = &messages[tail_from..];
    let mut summary = if middle.is_empty() {
        "[Your conversation was compacted to fit the model's context window: the task and its criteria are above, harrow's record of your work is here, and your last turns follow.]".to_owned()
    } else {
        format!(
            "[Your conversation so far was compacted to fit the model's context window: {} earlier messages were replaced by this summary, built from what harrow recorded. The task and its criteria are above; your last turns follow.]",
            middle.len()
        )
    };
    let mut kept = vec!["system prompt".to_owned(), "task prompt".to_owned()];
    kept.push(format!("summary of {} messages", middle.len()));
    let done = what_was_done(middle, level.done_lines);
    if !done.is_empty() {
        summary.push_str("\n\nWhat you did before:\n");
        summary.push_str(&done.join("\n"));
    }
    if !record.verdicts.is_empty() {
        summary.push_str("\n\nVerdicts on this task so far:\n");
        let lines: Vec<String> = record.verdicts.iter().map(|v| flat(v)).collect();
        summary.push_str(&lines.join("\n"));
        kept.push(format!("{} verdict(s)", record.verdicts.len()));
    }
    if let Some((text, what)) = diff_section(record, tail, level) {
        summary.push_str(&text);
        kept.push(what.to_owned());
    }
    let mut out: Vec<Value> = messages[..head].to_vec();
    out.push(json!({"role": "user", "content": summary}));
    out.extend(tail.iter().cloned());
    let keep = tail.iter().filter(|m| m["role"] == "assistant").count();
    kept.push(format!("last {keep} turn(s)"));
    Compacted { messages: out, kept, dropped: middle.len(), summary, cut: Vec::new() }
}

/// The task's change for the summary, without the files the kept turns wrote whole: an
/// excerpt in a fence, or only the files' names when the level leaves too little room.
fn diff_section(record: &Record, tail: &[Value], level: &Level) -> Option<(String, &'static str)> {
    let written = written_whole(tail);
    let diff = record.diff.without(&written);
    let repeated: Vec<String> = (record.diff.files.iter())
        .filter(|f| written.contains(&f.stat.path))
        .map(|f| f.stat.path.clone())
        .collect();
    let also = if repeated.is_empty() {
        String::new()
    } else {
        format!(
            "\n(Also changed, and written whole in your last turns: {})",
            flat(&repeated.join(", "))
        )
    };
    if diff.is_empty() {
        return (!also.is_empty()).then(|| (format!("\n{also}"), "the task's diff"));
    }
    let max = (record.diff_max as f64 * level.diff_share) as usize;
    if max < MIN_DIFF_CHARS {
        let names = flat(&diff.summary());
        let text =
            format!("\n\nThe files the task's change touches (read them to see it): {names}{also}");
        return Some((text, "the names of the files changed"));
    }
    let excerpt = diff.excerpt(max);
    // A fence longer than any run of backticks in the diff: the worker's files cannot close it
    // and go on in the summary's own voice.
    let fence = "`".repeat(longest_run(&excerpt, '`').max(2) + 1);
    let mut text = String::from("\n\nThe task's change as it stands:\n");
    for part in [fence.as_str(), "diff\n", excerpt.trim_end(), "\n", fence.as_str(), &also] {
        text.push_str(part);
    }
    Some((text, "the task's diff"))
}

/// The paths the `write_file` calls of `tail` wrote, whole, in their arguments.
fn written_whole(tail: &[Value]) -> Vec<String> {
    let mut paths = Vec::new();
    for call in tail.iter().flat_map(|m| m["tool_calls"].as_array().into_iter().flatten()) {
        if !crate::session::vocabulary::ToolName::WriteFile.is(call["function"]["name"].as_str()) {
            continue;
        }
        let args = call["function"]["arguments"].as_str().unwrap_or("{}");
        if let Ok(args) = serde_json::from_str::<Value>(args)
            && let Some(path) = args["path"].as_str()
        {
            let path = path.trim_start_matches("./").to_owned();
            if !paths.contains(&path) {
                paths.push(path);
            }
        }
    }
    paths
}

/// The tools the dropped messages called, each with what it touched, in order and once, at
/// most `max` lines.
fn what_was_done(middle: &[Value], max: usize) -> Vec<String> {
    let mut done: Vec<String> = Vec::new();
    for m in middle {
        for call in m["tool_calls"].as_array().into_iter().flatten() {
            let name = call["function"]["name"].as_str().unwrap_or("?");
            let what = what_it_named(call, 120);
            let line = format!("- {} {what}", tool_name(name)).trim_end().to_owned();
            if !done.contains(&line) {
                done.push(line);
            }
        }
    }
    if done.len() > max {
        let more = done.len() - max;
        done.truncate(max);
        done.push(format!("- … and {more} more"));
    }
    done
}

/// What a tool call named — its path, command or pattern, the first `max` characters — as
/// data: quoted on one line whatever it holds (a command's newlines would otherwise let it
/// write headings of the summary's own); empty when it named none.
fn what_it_named(call: &Value, max: usize) -> String {
    let args: Value = serde_json::from_str(call["function"]["arguments"].as_str().unwrap_or("{}"))
        .unwrap_or(Value::Null);
    ["path", "command", "pattern"]
        .iter()
        .find_map(|k| args[*k].as_str())
        .map(|w| quoted(&w.chars().take(max).collect::<String>()))
        .unwrap_or_default()
}

/// A tool's name as the summary writes it: bare when it is a plain name, quoted otherwise.
fn tool_name(name: &str) -> String {
    if name.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c)) {
        name.to_owned()
    } else {
        quoted(name)
    }
}

/// Text quoted as a JSON string: on one line, every control character escaped.
fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

/// Text on one line: every control character (line breaks included) made a space.
fn flat(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}

/// The longest run of `c` in `text`.
fn longest_run(text: &str, c: char) -> usize {
    let (mut best, mut run) = (0, 0);
    for ch in text.chars() {
        run = if ch == c { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}
