//! Cutting a rebuilt conversation's kept turns down to its room: the largest parts — a tool's
//! output, the text a call wrote — are cut to one common length, so that no part is cut more
//! than another needs to be, and each says how much went and how to get it back.

use super::{Compacted, chars, quoted, tool_name, what_it_named};
use crate::hands::tools::shorten::shortened;
use crate::session::vocabulary::ToolName;
use serde_json::Value;

/// The characters a cut part's marker takes, reckoned before the cut.
const MARK_ROOM: usize = 260;
/// The argument fields a call carries text of its own in, the one cut when the call is bulky.
const TEXT_FIELDS: [&str; 3] = ["content", "new_string", "old_string"];

/// One part of the kept turns that can be cut.
#[derive(Debug)]
enum Part {
    /// The output of a tool, as the message `at` holds it.
    Output { at: usize, read: bool },
    /// The text field `field` of call `call` of the assistant message `at`.
    Argument { at: usize, call: usize, field: &'static str },
}

/// A cuttable part, its length in bytes, and how the event names it.
#[derive(Debug)]
struct Bulky {
    part: Part,
    len: usize,
    label: String,
}

/// Cuts the parts of `c.messages[from..]` (never the head or the summary before it) until
/// the messages come to `budget` characters, no part below `floor`. Best effort: when every
/// part is at the floor, the messages stay over.
pub(super) fn to_fit(c: &mut Compacted, from: usize, budget: usize, floor: usize) {
    let total = chars(&c.messages);
    if total <= budget {
        return;
    }
    let parts = bulky(&c.messages, from);
    let lens: Vec<usize> = parts.iter().map(|p| p.len).collect();
    let cap = common_cap(&lens, total - budget, floor);
    for part in parts.into_iter().filter(|p| p.len > cap + MARK_ROOM) {
        if cut_part(&mut c.messages, &part.part, cap) {
            c.cut.push(format!("{}: {} → {} characters", part.label, part.len, cap));
        }
    }
}

/// The largest length every part can be cut to and still save `need` characters, never
/// below `floor`.
fn common_cap(lens: &[usize], need: usize, floor: usize) -> usize {
    let saved = |cap: usize| lens.iter().map(|l| l.saturating_sub(cap + MARK_ROOM)).sum::<usize>();
    let (mut low, mut high) = (floor, lens.iter().copied().max().unwrap_or(floor).max(floor));
    if saved(low) < need {
        return low;
    }
    while low < high {
        let mid = (low + high).div_ceil(2);
        if saved(mid) >= need { low = mid } else { high = mid - 1 }
    }
    low
}

/// Every part of the messages from `from` on that a cut could shorten.
fn bulky(messages: &[Value], from: usize) -> Vec<Bulky> {
    let mut parts = Vec::new();
    for (at, m) in messages.iter().enumerate().skip(from) {
        if m["role"] == "tool" {
            let (tool, what) = call_of(messages, m["tool_call_id"].as_str().unwrap_or(""));
            let len = m["content"].as_str().map_or(0, str::len);
            let read = ToolName::ReadFile.is(Some(&tool));
            parts.push(Bulky {
                part: Part::Output { at, read },
                len,
                label: format!("the output of {} {what}", tool_name(&tool)).trim_end().to_owned(),
            });
            continue;
        }
        for (call, c) in m["tool_calls"].as_array().into_iter().flatten().enumerate() {
            let name = c["function"]["name"].as_str().unwrap_or("?");
            let Ok(args) =
                serde_json::from_str::<Value>(c["function"]["arguments"].as_str().unwrap_or(""))
            else {
                continue;
            };
            let longest = (TEXT_FIELDS.iter())
                .filter_map(|f| args[*f].as_str().map(|t| (*f, t.len())))
                .max_by_key(|(_, len)| *len);
            if let Some((field, len)) = longest {
                let what = args["path"].as_str().map(quoted).unwrap_or_default();
                parts.push(Bulky {
                    part: Part::Argument { at, call, field },
                    len,
                    label: format!("the {field} {} sent {what}", tool_name(name))
                        .trim_end()
                        .to_owned(),
                });
            }
        }
    }
    parts
}

/// The tool and what it was called on (quoted) for the call `id` in `messages`.
fn call_of(messages: &[Value], id: &str) -> (String, String) {
    let mut calls = messages.iter().flat_map(|m| m["tool_calls"].as_array().into_iter().flatten());
    let Some(c) = calls.find(|c| c["id"] == id) else {
        return ("a tool".to_owned(), String::new());
    };
    let name = c["function"]["name"].as_str().unwrap_or("?").to_owned();
    (name, what_it_named(c, 80))
}

/// Cuts one part to `cap` bytes with its marker; whether anything was cut.
fn cut_part(messages: &mut [Value], part: &Part, cap: usize) -> bool {
    match *part {
        Part::Output { at, read } => {
            let Some(text) = messages[at]["content"].as_str() else { return false };
            let how = if read {
                "read the part you need again with read_file and start_line/end_line"
            } else {
                "run a narrower command (grep, head, tail, sed -n) to see it"
            };
            // A command's output says most at its end (a failure, a summary); a file at its top.
            let head = if read { cap } else { cap / 3 };
            let cut = shortened(text, head, cap - head, |gone| marker(gone, "of this output", how));
            messages[at]["content"] = Value::String(cut);
            true
        }
        Part::Argument { at, call, field } => {
            let slot = &mut messages[at]["tool_calls"][call]["function"]["arguments"];
            let Ok(mut args) = serde_json::from_str::<Value>(slot.as_str().unwrap_or("")) else {
                return false;
            };
            let Some(text) = args[field].as_str() else { return false };
            let how = "what the call did is done: read_file shows the file as it is now";
            let cut = shortened(text, cap, 0, |gone| marker(gone, "of what you sent", how));
            args[field] = Value::String(cut);
            *slot = Value::String(args.to_string());
            true
        }
    }
}

/// The line a part cut by a rebuild carries.
fn marker(gone: usize, what: &str, how: &str) -> String {
    format!(
        "[… {gone} characters {what} were cut when the conversation was compacted to fit the model's context window: {how}]"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_common_cap_saves_what_is_needed_and_cuts_no_part_more_than_it_must() {
        let lens = [10_000, 6_000, 500];
        let cap = common_cap(&lens, 8_000, 200);
        let saved: usize = lens.iter().map(|l| l.saturating_sub(cap + MARK_ROOM)).sum();
        assert!(saved >= 8_000 && cap > 200, "cap {cap} saves {saved}");
        let one_more: usize = lens.iter().map(|l| l.saturating_sub(cap + 1 + MARK_ROOM)).sum();
        assert!(one_more < 8_000, "the largest cap that saves enough");
        assert_eq!(common_cap(&lens, 1_000_000, 200), 200, "never below the floor");
    }
}
