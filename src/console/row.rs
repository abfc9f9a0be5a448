//! A worker stream row in full: the assistant's whole text and reasoning, a tool call's
//! arguments pretty-printed with its complete result, a validator's whole output, a note's
//! text, a prompt's content — read from the log, scrollable and searchable.

use super::chrome::{footer, marked_lines, popup};
use super::keymap::Mode;
use super::player::Player;
use crate::session::event::{Event, EventKind, Payload};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use serde_json::Value;

/// How far ahead of a tool call its result is looked for.
const RESULT_LOOKAHEAD: usize = 400;

/// One event's text at length.
#[derive(Debug, Clone, Default)]
pub struct RowView {
    pub title: String,
    pub lines: Vec<String>,
    pub scroll: super::scroll::Scroll,
    /// The line the last search landed on.
    pub found: Option<usize>,
    /// Where in the log the event shown is.
    pub pos: Option<usize>,
    pub query: String,
}

fn push_text(lines: &mut Vec<String>, heading: &str, text: &str) {
    if text.trim().is_empty() {
        return;
    }
    if !lines.is_empty() {
        lines.push(String::new());
    }
    lines.push(heading.to_owned());
    lines.extend(text.lines().map(|l| format!("  {l}")));
}

fn pretty(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        v => serde_json::to_string_pretty(v).unwrap_or_default(),
    }
}

/// The result of the tool call `call_id` made at `pos`, looked for in the events after it.
fn result_of(player: &mut Player, pos: usize, call_id: Option<&str>, tool: &str) -> Option<Event> {
    let end = (pos + RESULT_LOOKAHEAD).min(player.total());
    for p in pos + 1..end {
        if !matches!(player.kind_at(p), Some(EventKind::ToolResult | EventKind::PreToolBlock)) {
            continue;
        }
        let event = player.fetch(p).ok()?;
        let (id, name) = match &event.payload {
            Payload::ToolResult(r) => (r.call_id.as_deref(), r.tool.as_deref()),
            Payload::PreToolBlock(r) => (r.0.call_id.as_deref(), r.0.tool.as_deref()),
            _ => continue,
        };
        let same = match (call_id, id) {
            (Some(a), Some(b)) => a == b,
            _ => name == Some(tool),
        };
        if same {
            return Some(event);
        }
    }
    None
}

/// The text of a tool's result, as the model saw it (or Tilth's preview).
fn result_text(event: &Event) -> (String, String) {
    match &event.payload {
        Payload::ToolResult(r) => (
            "Result".into(),
            r.output.clone().or_else(|| r.result_preview.clone()).unwrap_or_default(),
        ),
        Payload::PreToolBlock(r) => (
            "Refused by a hook".into(),
            r.0.output.clone().or_else(|| r.0.result_preview.clone()).unwrap_or_default(),
        ),
        _ => (String::new(), String::new()),
    }
}

/// The event at `pos` in full.
pub fn open(player: &mut Player, pos: usize) -> Result<RowView, String> {
    let event = player.fetch(pos).map_err(|e| format!("event {pos} cannot be read: {e}"))?;
    let task = event.task_id().unwrap_or("-").to_owned();
    let mut lines = Vec::new();
    let title = match &event.payload {
        Payload::AssistantMessage(m) => {
            push_text(&mut lines, "Said", m.content.as_deref().unwrap_or(""));
            push_text(&mut lines, "Reasoning", m.reasoning.as_deref().unwrap_or(""));
            for call in m.tool_calls.iter().flatten() {
                let args = serde_json::from_str::<Value>(&call.arguments)
                    .map_or_else(|_| call.arguments.clone(), |v| pretty(&v));
                push_text(&mut lines, &format!("Calls {}", call.name), &args);
            }
            format!("{task}: the {} says", m.role.as_deref().unwrap_or("model"))
        }
        Payload::ToolCall(c) => {
            let tool = c.tool.as_deref().unwrap_or("?");
            push_text(&mut lines, "Arguments", &pretty(c.args.as_ref().unwrap_or(&Value::Null)));
            if let Some(result) = result_of(player, pos, c.call_id.as_deref(), tool) {
                let (heading, text) = result_text(&result);
                push_text(&mut lines, &heading, &text);
            }
            format!("{task}: {tool}")
        }
        Payload::ToolResult(_) | Payload::PreToolBlock(_) => {
            let (heading, text) = result_text(&event);
            push_text(&mut lines, &heading, &text);
            format!("{task}: a tool's result")
        }
        Payload::ValidatorRun(run) => {
            for r in run.results.iter().flatten() {
                let head = format!(
                    "{} {} — {}",
                    if r.passed { "✓" } else { "✗" },
                    r.name,
                    r.command.as_deref().unwrap_or("")
                );
                push_text(&mut lines, &head, r.output.as_deref().unwrap_or("(no output recorded)"));
            }
            format!("{task}: validators")
        }
        Payload::OperatorAction(a) => {
            push_text(&mut lines, "Reason", a.reason.as_deref().unwrap_or(""));
            push_text(&mut lines, "Note", a.note.as_deref().unwrap_or(""));
            format!("{task}: the operator's {}", a.action.as_deref().unwrap_or("?"))
        }
        Payload::OperatorSteer(o) => {
            push_text(&mut lines, "Said", o.text.as_deref().unwrap_or(""));
            push_text(&mut lines, "Not sent because", o.reason.as_deref().unwrap_or(""));
            format!("{task}: the operator's steer")
        }
        Payload::OperatorReview(r) => {
            push_text(&mut lines, "Said", r.reason.as_deref().unwrap_or(""));
            for c in r.comments.iter().flatten() {
                let text = format!("> {}\n{}", c.text, c.comment);
                push_text(&mut lines, &format!("{}:{}", c.path, c.line), &text);
            }
            let verdict = super::describe::review_verdict(r);
            format!("{task}: the operator's review — {verdict}")
        }
        Payload::TaskRewound(r) => {
            push_text(&mut lines, "Why", r.reason.as_deref().unwrap_or(""));
            let set_aside: Vec<String> = r.rewound.iter().flatten().map(u64::to_string).collect();
            push_text(&mut lines, "Attempts set aside", &set_aside.join(", "));
            push_text(
                &mut lines,
                "The work it held, kept as",
                r.set_aside.as_deref().unwrap_or(""),
            );
            let to = crate::session::outcome::rewound_to(r.to_attempt.unwrap_or(0), r.to_turn);
            format!("{task}: rewound to {to}")
        }
        Payload::OperatorQueue(o) => {
            push_text(&mut lines, "Said", o.text.as_deref().unwrap_or(""));
            format!("{task}: queued for its {}", o.until.as_deref().unwrap_or("next attempt"))
        }
        Payload::PromptAssembled(p) => {
            push_text(&mut lines, "Content", p.content.as_deref().unwrap_or(""));
            format!("{task}: the prompt to the {}", p.role.as_deref().unwrap_or("model"))
        }
        Payload::FeedbackSent(f) => {
            push_text(&mut lines, "Sent to the worker", f.content.as_deref().unwrap_or(""));
            format!("{task}: feedback")
        }
        Payload::LoopDetected(l) => {
            push_text(&mut lines, "The call", l.arguments.as_deref().unwrap_or(""));
            push_text(&mut lines, "Sent to the worker", l.content.as_deref().unwrap_or(""));
            format!("{task}: a loop ({})", l.tool.as_deref().unwrap_or("a tool"))
        }
        Payload::Nudge(n) => {
            push_text(&mut lines, "Sent to the worker", n.content.as_deref().unwrap_or(""));
            format!("{task}: a nudge")
        }
        Payload::ContextCompacted(c) => {
            let figures = format!(
                "~{} → ~{} tokens of a {}-token window; {} message(s) replaced",
                c.tokens_before.unwrap_or(0),
                c.tokens_after.unwrap_or(0),
                c.window.unwrap_or(0),
                c.dropped.unwrap_or(0)
            );
            push_text(&mut lines, "Rebuilt", &figures);
            push_text(&mut lines, "Kept", &c.kept.as_deref().unwrap_or_default().join("\n"));
            push_text(&mut lines, "Cut to fit", &c.cut.as_deref().unwrap_or_default().join("\n"));
            let summary = (c.summary.as_deref()).unwrap_or(
                "(not in this log: it was written before harrow logged the rebuilt message)",
            );
            push_text(&mut lines, "What the worker read in place of the dropped messages", summary);
            format!("{task}: its conversation compacted")
        }
        _ => {
            push_text(&mut lines, "Payload", &pretty(&event.payload_value()));
            format!("{task}: {}", event.kind)
        }
    };
    if lines.is_empty() {
        lines.push("(nothing more was logged)".into());
    }
    Ok(RowView { title: format!(" {title} "), lines, pos: Some(pos), ..RowView::default() })
}

impl RowView {
    /// Scrolls, finds the next or previous line holding the search, copies the text.
    pub fn act(&mut self, action: super::keymap::Action) -> super::outcome::Outcome {
        use super::keymap::Action;
        use super::outcome::Outcome;
        match action {
            Action::Copy => Outcome::Copy(self.text()),
            Action::SearchNext | Action::SearchPrev => {
                let query = self.query.clone();
                if !query.is_empty() && self.find(&query, action == Action::SearchNext) {
                    Outcome::Stay
                } else {
                    Outcome::Notice("nothing to find: / searches this row first".into())
                }
            }
            _ if self.scroll.act(action, self.lines.len()) => Outcome::Stay,
            _ => Outcome::Unbound,
        }
    }

    /// Draws the row over `area`.
    pub fn draw(
        &self,
        frame: &mut ratatui::Frame,
        area: ratatui::layout::Rect,
        theme: &super::theme::Theme,
    ) {
        let rect =
            popup(frame, area, area.width.saturating_sub(4), area.height.saturating_sub(2), 1);
        let lines = marked_lines(&self.lines, self.found, theme);
        let mut block = Block::default()
            .borders(Borders::ALL)
            .title(self.title.clone())
            .title_bottom(footer(Mode::Row, rect.width));
        if let Some(said) = self.found_sentence() {
            block = block.title_top(ratatui::text::Line::from(format!(" {said} ")).right_aligned());
        }
        frame.render_widget(
            Paragraph::new(lines)
                .wrap(Wrap { trim: false })
                .scroll((self.scroll.top, 0))
                .block(block),
            rect,
        );
    }

    /// Moves to the next line (or the previous one) holding `query`, ignoring case, going
    /// round at either end. Returns whether any line holds it.
    pub fn find(&mut self, query: &str, forward: bool) -> bool {
        query.clone_into(&mut self.query);
        let needle = query.to_lowercase();
        let n = self.lines.len();
        let start =
            self.found.map_or(if forward { 0 } else { n }, |f| if forward { f + 1 } else { f });
        let hit = |i: &usize| self.lines[*i % n.max(1)].to_lowercase().contains(&needle);
        let found = if forward {
            (start..start + n).map(|i| i % n.max(1)).find(|i| hit(i))
        } else {
            (0..n).map(|k| (start + n - 1 - k) % n.max(1)).find(|i| hit(i))
        };
        self.found = found;
        if let Some(line) = found {
            self.scroll.top = u16::try_from(line.saturating_sub(3)).unwrap_or(u16::MAX);
        }
        found.is_some()
    }

    /// What the last search found, for the row's frame: `“net” 2/5 · line 14`.
    pub fn found_sentence(&self) -> Option<String> {
        let line = self.found?;
        let needle = self.query.to_lowercase();
        let hits: Vec<usize> = (0..self.lines.len())
            .filter(|i| self.lines[*i].to_lowercase().contains(&needle))
            .collect();
        let k = hits.iter().position(|i| *i == line)? + 1;
        let query = crate::printable::line(&self.query);
        Some(format!("“{query}” {k}/{} · line {}", hits.len(), line + 1))
    }

    /// The whole text, to copy.
    pub fn text(&self) -> String {
        let mut out = self.lines.join("\n");
        out.push('\n');
        out
    }
}

impl super::views::View for RowView {
    fn mode(&self) -> super::keymap::Mode {
        super::keymap::Mode::Row
    }

    fn act(&mut self, action: super::keymap::Action) -> super::views::Step {
        use super::keymap::Action;
        use super::views::Step;
        match action {
            Action::Search => Step::Open(Box::new(super::modal::SearchBox::new(
                "a word · Enter finds · Esc cancels",
                &self.query,
            ))),
            Action::Close | Action::Cancel => Step::Close(super::outcome::Outcome::Closed),
            a => Step::Stay(RowView::act(self, a)),
        }
    }

    /// A search typed over the row: its first match from the top, and what was found.
    fn take(&mut self, handed: super::views::Handed) -> super::outcome::Outcome {
        use super::outcome::Outcome;
        let super::views::Handed::Query(query) = handed else { return Outcome::Stay };
        let found = query.is_empty() || self.find(&query, true);
        match (found, self.found_sentence()) {
            (true, Some(said)) => Outcome::Notice(format!("found {said}")),
            (true, None) => Outcome::Stay,
            (false, _) => Outcome::Notice(format!("no line of this row contains “{query}”")),
        }
    }

    fn draw(
        &self,
        frame: &mut ratatui::Frame,
        area: ratatui::layout::Rect,
        paint: &super::views::Paint<'_>,
    ) {
        RowView::draw(self, frame, area, paint.theme);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_goes_round_both_ways() {
        let mut v = RowView {
            lines: ["alpha", "beta", "Gamma", "beta again"].map(String::from).to_vec(),
            ..RowView::default()
        };
        assert!(v.find("BETA", true));
        assert_eq!(v.found, Some(1));
        assert_eq!(v.found_sentence().as_deref(), Some("“BETA” 1/2 · line 2"));
        assert!(v.find("beta", true));
        assert_eq!(v.found, Some(3));
        assert_eq!(v.found_sentence().as_deref(), Some("“beta” 2/2 · line 4"));
        assert!(v.find("beta", true));
        assert_eq!(v.found, Some(1), "round at the end");
        assert!(v.find("beta", false));
        assert_eq!(v.found, Some(3), "back round at the start");
        assert!(!v.find("delta", true));
        assert_eq!(v.found_sentence(), None, "nothing found, nothing said");
    }
}
