//! The stack of views over the panes ([`Views`]), and the small views that are only a box: the
//! decision editor, the search line, the quit prompt and the offer to resume. The larger views
//! (help, inspector, evidence, row, diff, comment box, ship offer) implement
//! [`super::views::View`] beside their own code.

use super::chrome::{footer, popup};
use super::help::HelpView;
use super::keymap::{Action, Mode, action_for};
use super::views::{Handed, Paint, Step, View};
use crate::session::control::Op;
use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph};
use std::any::Any;
use tui_textarea::TextArea;

pub use super::outcome::Outcome;

/// The views open over the panes, the top one taking the keys.
#[derive(Debug, Default)]
pub struct Views {
    stack: Vec<Box<dyn View>>,
}

impl Views {
    pub fn is_open(&self) -> bool {
        !self.stack.is_empty()
    }

    /// The key table in force: the top view's, else the panes'.
    pub fn mode(&self) -> Mode {
        self.stack.last().map_or(Mode::Main, |v| v.mode())
    }

    /// Opens a view over what is open.
    pub fn open(&mut self, view: impl View) {
        self.stack.push(Box::new(view));
    }

    /// Opens a view in place of everything open.
    pub fn only(&mut self, view: impl View) {
        self.stack.clear();
        self.open(view);
    }

    pub fn clear(&mut self) {
        self.stack.clear();
    }

    /// The top view, when it is a `T`.
    pub fn top<T: View>(&self) -> Option<&T> {
        self.stack.last().and_then(|v| (v.as_ref() as &dyn Any).downcast_ref::<T>())
    }

    /// How many views are open.
    pub fn depth(&self) -> usize {
        self.stack.len()
    }

    /// Takes a key: its action by the top view's table, or, in a text box, the key typed.
    pub fn key(&mut self, key: KeyEvent) -> Outcome {
        if let Some(action) = action_for(self.mode(), &key) {
            return self.act(action);
        }
        if let Some(top) = self.stack.last_mut() {
            top.typed(key);
        }
        Outcome::Stay
    }

    /// Does what an action of the top view's table asks. Help opens the help of that table
    /// over it, whichever view it is.
    pub fn act(&mut self, action: Action) -> Outcome {
        let Some(top) = self.stack.last_mut() else { return Outcome::Stay };
        let mode = top.mode();
        if action == Action::Help && mode != Mode::Help {
            self.open(HelpView::new(mode));
            return Outcome::Stay;
        }
        match top.act(action) {
            Step::Stay(outcome) => outcome,
            Step::Close(outcome) => {
                self.stack.pop();
                outcome
            }
            Step::Open(view) => {
                self.stack.push(view);
                Outcome::Stay
            }
            Step::Hand(handed) => {
                self.stack.pop();
                match self.stack.last_mut() {
                    Some(below) => below.take(handed),
                    None => handed.to_panes(),
                }
            }
            Step::CloseAll(outcome) => {
                self.stack.clear();
                outcome
            }
        }
    }

    /// Draws the views that show: the top one, and under it each one a view over it lets
    /// show.
    pub fn draw(&self, frame: &mut Frame, area: Rect, paint: &Paint<'_>) {
        let hidden = self.stack.iter().rposition(|v| !v.shows_below()).unwrap_or(0);
        for view in &self.stack[hidden..] {
            view.draw(frame, area, paint);
        }
    }
}

/// A text box with a placeholder, and text already in it.
pub fn text_box(placeholder: &str, text: &str) -> TextArea<'static> {
    let mut area = TextArea::default();
    area.set_placeholder_text(placeholder);
    if !text.is_empty() {
        area.insert_str(text);
    }
    area
}

/// An operator command being written: its reason, guidance or note in a text editor.
#[derive(Debug)]
pub struct Editor {
    pub op: Op,
    pub task: Option<String>,
    pub title: String,
    pub text: TextArea<'static>,
    /// Where a rewind goes, or a review's comments and verdict.
    pub detail: super::outcome::Detail,
}

/// The editor's title for words to a task: a steer (now) or a queue (its next attempt).
pub fn words_title(op: Op, task: &str) -> String {
    let task = crate::printable::line(task);
    if op == Op::Queue {
        format!("Queue for {task}: words kept for its next attempt (or its first turn)")
    } else {
        format!("Steer {task}: words its worker reads before its next model request")
    }
}

impl Editor {
    /// Tab: a review's verdict turns; a steer becomes a queue and back.
    fn switch(&mut self) -> Outcome {
        let task = self.task.clone().unwrap_or_default();
        if let super::outcome::Detail::Review(draft) = &mut self.detail {
            draft.next_verdict();
            self.title = draft.title(&task);
            return Outcome::Stay;
        }
        let to = match self.op {
            Op::Steer => Op::Queue,
            Op::Queue => Op::Steer,
            _ => {
                return Outcome::Notice(
                    "Tab turns a steer into a queue; this is a decision".into(),
                );
            }
        };
        self.op = to;
        self.title = words_title(to, &task);
        Outcome::Stay
    }
}

impl View for Editor {
    fn mode(&self) -> Mode {
        Mode::Editor
    }

    fn act(&mut self, action: Action) -> Step {
        match action {
            Action::Cancel => Step::Close(Outcome::Closed),
            Action::SwitchWords => Step::Stay(self.switch()),
            Action::Submit => {
                let text = self.text.lines().join(" ").trim().to_owned();
                // Words are the whole of a note, a steer or a queue, and a decision must say
                // why; a review's words go with its comments, and may be left out.
                let needs_words =
                    self.op.needs_reason() || matches!(self.op, Op::Note | Op::Steer | Op::Queue);
                if text.is_empty() && needs_words {
                    return Step::Stay(Outcome::Notice(
                        "type the reason (or note) first; Esc cancels".into(),
                    ));
                }
                let detail = std::mem::take(&mut self.detail);
                Step::CloseAll(Outcome::Decide {
                    op: self.op,
                    task: self.task.take(),
                    text,
                    detail,
                })
            }
            _ => Step::Stay(Outcome::Unbound),
        }
    }

    fn typed(&mut self, key: KeyEvent) {
        self.text.input(key);
    }

    fn draw(&self, frame: &mut Frame, area: Rect, _paint: &Paint<'_>) {
        let rect = popup(frame, area, 80, 5, area.height / 3);
        // Words for a task say what Tab does with them; a decision's editor has no Tab.
        let footer = match self.op {
            Op::Steer => {
                " Enter sends · Tab: queue for the next attempt instead · Esc cancels ".into()
            }
            Op::Queue => " Enter queues · Tab: steer it now instead · Esc cancels ".into(),
            _ => footer(Mode::Editor, rect.width),
        };
        let block = Block::default()
            .borders(Borders::ALL)
            .title(format!(" {} ", self.title))
            .title_bottom(footer);
        let inner = block.inner(rect);
        frame.render_widget(block, rect);
        frame.render_widget(&self.text, inner);
    }
}

/// Typing what to search for: the worker stream, or the row open under it.
#[derive(Debug)]
pub struct SearchBox {
    pub text: TextArea<'static>,
}

impl SearchBox {
    pub fn new(placeholder: &str, query: &str) -> SearchBox {
        SearchBox { text: text_box(placeholder, query) }
    }
}

impl View for SearchBox {
    fn mode(&self) -> Mode {
        Mode::Search
    }

    fn act(&mut self, action: Action) -> Step {
        match action {
            Action::Cancel => Step::Close(Outcome::Stay),
            Action::Submit => {
                Step::Hand(Handed::Query(self.text.lines().join(" ").trim().to_owned()))
            }
            _ => Step::Stay(Outcome::Unbound),
        }
    }

    fn typed(&mut self, key: KeyEvent) {
        self.text.input(key);
    }

    fn shows_below(&self) -> bool {
        true
    }

    fn draw(&self, frame: &mut Frame, area: Rect, _paint: &Paint<'_>) {
        let rect = popup(frame, area, 70, 3, area.height.saturating_sub(5));
        let block = Block::default()
            .borders(Borders::ALL)
            .title(" Search the worker stream ")
            .title_bottom(footer(Mode::Search, rect.width));
        let inner = block.inner(rect);
        frame.render_widget(block, rect);
        frame.render_widget(&self.text, inner);
    }
}

/// Quitting while the run goes on here: what to do with the run.
#[derive(Debug)]
pub struct QuitPrompt;

impl View for QuitPrompt {
    fn mode(&self) -> Mode {
        Mode::QuitPrompt
    }

    fn act(&mut self, action: Action) -> Step {
        match action {
            Action::Close | Action::Cancel => Step::Close(Outcome::Closed),
            Action::StopAndQuit => Step::Close(Outcome::Quit { stop: true }),
            Action::LeaveRunning => Step::Close(Outcome::Quit { stop: false }),
            _ => Step::Stay(Outcome::Unbound),
        }
    }

    /// A run that holds a task for a decision is told as such (it is not going on: stopping
    /// it is at once, and the decision waits for a resume).
    fn draw(&self, frame: &mut Frame, area: Rect, paint: &Paint<'_>) {
        let lines = match paint.held {
            Some(task) => vec![
                Line::raw(format!(
                    "The run waits for your decision on {}.",
                    crate::printable::line(task)
                )),
                Line::raw(""),
                Line::raw("  y    stop it now (resumable: decide later, then harrow resume)"),
                Line::raw("  n    leave it waiting here, printing its events"),
                Line::raw("  Esc  stay in the console"),
            ],
            None => vec![
                Line::raw("The run is still going."),
                Line::raw(""),
                Line::raw("  y    stop it at the next task boundary (resumable)"),
                Line::raw("  n    leave it running here, printing its events"),
                Line::raw("  Esc  stay in the console"),
            ],
        };
        let rect = popup(frame, area, 70, 7, area.height / 3);
        frame.render_widget(
            Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(" Quit ")),
            rect,
        );
    }
}

/// A decision was written but no run is there to act on it: resume the session?
#[derive(Debug)]
pub struct ResumeOffer(pub Op);

impl View for ResumeOffer {
    fn mode(&self) -> Mode {
        Mode::ResumePrompt
    }

    fn act(&mut self, action: Action) -> Step {
        match action {
            Action::Submit => Step::Close(Outcome::Resume),
            Action::Cancel => Step::Close(Outcome::Notice(format!(
                "{} waits in the control file; `harrow resume` applies it",
                self.0.as_str()
            ))),
            _ => Step::Stay(Outcome::Unbound),
        }
    }

    fn draw(&self, frame: &mut Frame, area: Rect, _paint: &Paint<'_>) {
        let op = self.0.as_str();
        let lines = vec![
            Line::raw(format!("No run holds this session: your {op} is written but nobody")),
            Line::raw("is there to act on it."),
            Line::raw(""),
            Line::raw("  Enter  resume the session now (in the background; watch it here)"),
            Line::raw("  Esc    not now: the next `harrow resume` applies it"),
        ];
        let rect = popup(frame, area, 72, 7, area.height / 3);
        frame.render_widget(
            Paragraph::new(lines)
                .block(Block::default().borders(Borders::ALL).title(" The run has stopped ")),
            rect,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::diff::from_patch;
    use crate::console::diff_review::CommentBox;
    use crate::console::evidence::Source;
    use crate::console::inspector::Inspector;
    use crate::console::row::RowView;
    use crate::console::scroll::Scroll;

    fn inspector() -> Inspector {
        Inspector {
            title: "verdict".into(),
            lines: vec!["a line".into()],
            evidence: vec!["src/lib.rs:1".into()],
            scroll: Scroll::default(),
            worktree: None,
            source: None,
            commit: None,
            pos: 3,
        }
    }

    /// One stack for each kind of view: the view on top of what it opens over.
    fn one_of_each() -> Vec<Views> {
        let source = Source {
            title: "file".into(),
            origin: "the worktree".into(),
            lines: vec!["1 fn main() {}".into()],
            target: Some(0),
            scroll: Scroll::default(),
        };
        let diff = || from_patch("", "diff");
        let on = |views: Vec<Box<dyn View>>| Views { stack: views };
        vec![
            on(vec![Box::new(HelpView::main(true))]),
            on(vec![Box::new(inspector())]),
            on(vec![Box::new(QuitPrompt)]),
            on(vec![Box::new(Editor {
                op: Op::Approve,
                task: Some("T-001".into()),
                title: "approve".into(),
                text: text_box("why", "because"),
                detail: crate::console::outcome::Detail::None,
            })]),
            on(vec![Box::new(inspector()), Box::new(source)]),
            on(vec![Box::new(SearchBox::new("find", "word"))]),
            on(vec![Box::new(RowView {
                lines: vec!["a word".into()],
                query: "word".into(),
                ..RowView::default()
            })]),
            on(vec![Box::new(ResumeOffer(Op::Approve))]),
            on(vec![Box::new(diff())]),
            on(vec![
                Box::new(diff()),
                Box::new(CommentBox { text: text_box("comment", ""), at: "a.rs:1".into() }),
            ]),
            on(vec![Box::new(crate::console::ship_offer::ShipOffer::new(
                crate::ship::preview::Preview {
                    id: "s".into(),
                    branch: "session/s".into(),
                    remote: "origin".into(),
                    url: "https://example.com/a/b".into(),
                    forge: Ok(("github".into(), "GITHUB_TOKEN", false)),
                    title: "T".into(),
                    body: vec!["# harrow session s".into()],
                    unfinished: Vec::new(),
                    git_token: false,
                    open_pr: None,
                },
            ))]),
        ]
    }

    #[test]
    fn every_action_an_overlays_table_binds_is_handled_by_the_overlay() {
        let modes: Vec<Mode> = one_of_each().iter().map(Views::mode).collect();
        for mode in Mode::ALL {
            let covered = matches!(
                mode,
                Mode::Main
                    | Mode::Browser
                    | Mode::Answer
                    | Mode::Thinking
                    | Mode::Review
                    | Mode::PlanEditor
                    | Mode::StopPrompt
            );
            assert!(covered || modes.contains(&mode), "{mode:?} has no view in this test");
        }
        let mut row = one_of_each().swap_remove(6);
        assert_eq!(row.act(Action::Pause), Outcome::Unbound, "the check can see a miss");
        for (i, mode) in modes.iter().enumerate() {
            for b in mode.bindings() {
                let mut views = one_of_each().swap_remove(i);
                let outcome = views.act(b.action);
                assert_ne!(
                    outcome,
                    Outcome::Unbound,
                    "{mode:?} binds {} to {:?}, which its view does not handle",
                    b.label(),
                    b.action
                );
            }
        }
    }

    #[test]
    fn a_view_closing_shows_the_one_under_it_and_hands_it_what_it_holds() {
        // Help over the inspector, closed: the inspector again.
        let mut views = one_of_each().swap_remove(1);
        assert_eq!(views.act(Action::Help), Outcome::Stay);
        assert_eq!((views.mode(), views.depth()), (Mode::Help, 2));
        views.act(Action::Close);
        assert!(views.top::<Inspector>().is_some());
        // A search typed over a row is the row's: it finds the word there.
        let mut views = one_of_each().swap_remove(6);
        views.act(Action::Search);
        assert_eq!(views.mode(), Mode::Search);
        let found = views.act(Action::Submit);
        assert!(matches!(found, Outcome::Notice(ref n) if n.starts_with("found")), "{found:?}");
        assert_eq!(views.mode(), Mode::Row);
        // Over the panes, the words go to the panes' search.
        let mut views = one_of_each().swap_remove(5);
        assert_eq!(views.act(Action::Submit), Outcome::Search("word".into()));
        assert!(!views.is_open());
        // A decision sent from an editor over a diff closes both.
        let mut views = one_of_each().swap_remove(8);
        views.open(Editor {
            op: Op::Approve,
            task: Some("T-001".into()),
            title: "approve".into(),
            text: text_box("why", "because"),
            detail: crate::console::outcome::Detail::None,
        });
        assert!(matches!(views.act(Action::Submit), Outcome::Decide { .. }));
        assert!(!views.is_open());
    }

    /// The review editor says its words are optional, and sends without them; a decision that
    /// needs a reason does not.
    #[test]
    fn a_review_sends_without_words_and_a_reject_waits_for_its_reason() {
        for (op, sent) in [(Op::Review, true), (Op::Reject, false), (Op::Steer, false)] {
            let mut views = one_of_each().swap_remove(8);
            views.open(Editor {
                op,
                task: Some("T-001".into()),
                title: op.as_str().into(),
                text: text_box("what you say with it (optional)", ""),
                detail: crate::console::outcome::Detail::None,
            });
            let out = views.act(Action::Submit);
            assert_eq!(matches!(out, Outcome::Decide { .. }), sent, "{op:?}: {out:?}");
        }
    }
}
