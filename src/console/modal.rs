//! The overlays that cover the panes — help, verdict inspector, evidence view, decision
//! editor, search box, quit prompt — each taking its own keys from its own table and answering
//! with an [`Outcome`] the app acts on. At most one is open at a time (the help can sit over
//! the inspector and goes back to it).

use super::diff::DiffView;
use super::evidence::Source;
use super::help::HelpView;
use super::inspector::Inspector;
use super::keymap::{Action, Mode, action_for};
use super::row::RowView;
use crate::session::control::Op;
use crossterm::event::KeyEvent;
use tui_textarea::TextArea;

/// What covers the panes.
#[derive(Debug, Default)]
pub enum Overlay {
    #[default]
    None,
    /// The key table of a mode; Esc goes back to `back`.
    Help {
        view: HelpView,
        back: Box<Overlay>,
    },
    Inspector(Inspector),
    /// Quitting while the run goes on: what to do with the run.
    QuitPrompt,
    /// Typing the reason or note that goes with an operator command.
    Editor(Box<Editor>),
    /// An evidence pointer opened at its file; Esc goes back to the inspector.
    Source(Box<(Source, Inspector)>),
    /// Typing what to search for: the worker stream, or the row open behind it.
    Search(Box<TextArea<'static>>, Box<Overlay>),
    /// A worker stream row in full.
    Row(Box<RowView>),
    /// A decision was written but no run is there to act on it: resume the session?
    ResumeOffer(Op),
    /// The diff of a judged attempt; Esc goes back to what was open before.
    Diff(Box<DiffView>, Box<Overlay>),
    /// Typing a comment on a line of the diff.
    Comment(Box<CommentBox>),
    /// What shipping the ended run would send; `y` sends it.
    Ship(Box<super::ship_offer::ShipOffer>),
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
    /// What Esc goes back to, when not the panes (a review: its diff, comments and all).
    pub back: Option<Box<Overlay>>,
}

pub use super::outcome::Outcome;

/// A comment being typed on one line of a diff, with the diff to go back to.
#[derive(Debug)]
pub struct CommentBox {
    pub text: TextArea<'static>,
    pub view: Box<DiffView>,
    pub back: Box<Overlay>,
    /// `path:line`, for the box's title.
    pub at: String,
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

impl Overlay {
    /// The key table in force while this overlay is open.
    pub fn mode(&self) -> Mode {
        match self {
            Overlay::None => Mode::Main,
            Overlay::Help { .. } => Mode::Help,
            Overlay::Inspector(_) => Mode::Inspector,
            Overlay::QuitPrompt => Mode::QuitPrompt,
            Overlay::Editor(_) => Mode::Editor,
            Overlay::Source(_) => Mode::FileView,
            Overlay::Search(..) => Mode::Search,
            Overlay::Row(_) => Mode::Row,
            Overlay::ResumeOffer(_) => Mode::ResumePrompt,
            Overlay::Diff(..) => Mode::Diff,
            Overlay::Comment(_) => Mode::Comment,
            Overlay::Ship(_) => Mode::ShipPrompt,
        }
    }

    pub fn is_open(&self) -> bool {
        !matches!(self, Overlay::None)
    }

    /// The help of an overlay, over it.
    pub fn help(of: Mode, back: Overlay) -> Overlay {
        Overlay::Help { view: HelpView::new(of), back: Box::new(back) }
    }

    /// The help of the panes, over them: the keys of a console that is `live`, or a replay's.
    pub fn main_help(live: bool) -> Overlay {
        Overlay::Help { view: HelpView::main(live), back: Box::new(Overlay::None) }
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

    /// Takes a key: its action by the mode's table, or, in a text box, the key typed.
    pub fn key(&mut self, key: KeyEvent) -> Outcome {
        if let Some(action) = action_for(self.mode(), &key) {
            self.act(action)
        } else {
            match self {
                Overlay::Editor(editor) => {
                    editor.text.input(key);
                }
                Overlay::Search(text, _) => {
                    text.input(key);
                }
                Overlay::Comment(c) => {
                    c.text.input(key);
                }
                _ => {}
            }
            Outcome::Stay
        }
    }

    /// Does what an action of its mode asks. The overlay may replace itself (close, go back).
    pub fn act(&mut self, action: Action) -> Outcome {
        match (std::mem::take(self), Some(action)) {
            (Overlay::None, _) => Outcome::Stay,
            (Overlay::Help { back, .. } | Overlay::Diff(_, back), Some(Action::Close))
            | (Overlay::Search(_, back), Some(Action::Cancel)) => {
                *self = *back;
                Outcome::Stay
            }
            (Overlay::Help { mut view, back }, Some(a)) => {
                let outcome = view.act(a);
                *self = Overlay::Help { view, back };
                outcome
            }

            (Overlay::Diff(view, back), Some(a)) => self.act_on_diff(view, back, a),
            (Overlay::Comment(c), Some(a)) => self.act_on_comment(c, a),
            (Overlay::Inspector(i), Some(Action::Help)) => {
                *self = Overlay::help(Mode::Inspector, Overlay::Inspector(i));
                Outcome::Stay
            }
            (Overlay::Inspector(mut i), Some(a))
                if !matches!(a, Action::Close | Action::Cancel) =>
            {
                let outcome = i.act(a);
                *self = Overlay::Inspector(i);
                outcome
            }
            (Overlay::Source(mut s), Some(a)) if a != Action::Close => {
                let outcome = s.0.act(a);
                *self = Overlay::Source(s);
                outcome
            }
            (Overlay::Source(s), Some(Action::Close)) => {
                *self = Overlay::Inspector(s.1);
                Outcome::Stay
            }
            (Overlay::Row(row), Some(Action::Search)) => {
                let text = Overlay::text_box("a word · Enter finds · Esc cancels", &row.query);
                *self = Overlay::Search(Box::new(text), Box::new(Overlay::Row(row)));
                Outcome::Stay
            }
            (Overlay::Row(row), Some(Action::Help)) => {
                *self = Overlay::help(Mode::Row, Overlay::Row(row));
                Outcome::Stay
            }
            (Overlay::Row(mut row), Some(a)) if a != Action::Close => {
                let outcome = row.act(a);
                *self = Overlay::Row(row);
                outcome
            }
            (
                Overlay::Inspector(_) | Overlay::Row(_) | Overlay::QuitPrompt,
                Some(Action::Close | Action::Cancel),
            ) => Outcome::Closed,
            (Overlay::Editor(editor), Some(Action::Cancel)) => match editor.back {
                Some(back) => {
                    *self = *back;
                    Outcome::Stay
                }
                None => Outcome::Closed,
            },
            (Overlay::ResumeOffer(_), Some(Action::Submit)) => Outcome::Resume,
            (Overlay::Ship(mut offer), Some(a)) => {
                let outcome = offer.act(a);
                if matches!(outcome, Outcome::Stay | Outcome::Notice(_) | Outcome::Unbound) {
                    *self = Overlay::Ship(offer);
                }
                outcome
            }
            (Overlay::ResumeOffer(op), Some(Action::Cancel)) => Outcome::Notice(format!(
                "{} waits in the control file; `harrow resume` applies it",
                op.as_str()
            )),
            (Overlay::QuitPrompt, Some(Action::StopAndQuit)) => Outcome::Quit { stop: true },
            (Overlay::QuitPrompt, Some(Action::LeaveRunning)) => Outcome::Quit { stop: false },
            (Overlay::Editor(mut editor), Some(Action::SwitchWords)) if editor.op == Op::Review => {
                if let super::outcome::Detail::Review(draft) = &mut editor.detail {
                    draft.next_verdict();
                    let task = editor.task.clone().unwrap_or_default();
                    editor.title = super::diff_review::review_title(&task, draft);
                }
                *self = Overlay::Editor(editor);
                Outcome::Stay
            }
            (Overlay::Editor(mut editor), Some(Action::SwitchWords)) => {
                let to = match editor.op {
                    Op::Steer => Some(Op::Queue),
                    Op::Queue => Some(Op::Steer),
                    _ => None,
                };
                let said = to.map(|op| {
                    let task = editor.task.clone().unwrap_or_default();
                    editor.op = op;
                    editor.title = words_title(op, &task);
                });
                *self = Overlay::Editor(editor);
                match said {
                    Some(()) => Outcome::Stay,
                    None => {
                        Outcome::Notice("Tab turns a steer into a queue; this is a decision".into())
                    }
                }
            }
            (Overlay::Editor(editor), Some(Action::Submit)) => {
                let text = editor.text.lines().join(" ").trim().to_owned();
                if text.is_empty() {
                    *self = Overlay::Editor(editor);
                    return Outcome::Notice("type the reason (or note) first; Esc cancels".into());
                }
                Outcome::Decide { op: editor.op, task: editor.task, text, detail: editor.detail }
            }
            (Overlay::Search(text, back), Some(Action::Submit)) => {
                let query = text.lines().join(" ").trim().to_owned();
                match *back {
                    Overlay::Row(mut row) => {
                        let found = query.is_empty() || row.find(&query, true);
                        let said = row.found_sentence();
                        *self = Overlay::Row(row);
                        if let (true, Some(said)) = (found, said) {
                            Outcome::Notice(format!("found {said}"))
                        } else if found {
                            Outcome::Stay
                        } else {
                            Outcome::Notice(format!("no line of this row contains “{query}”"))
                        }
                    }
                    back => {
                        *self = back;
                        if query.is_empty() { Outcome::Stay } else { Outcome::Search(query) }
                    }
                }
            }
            (other, _) => {
                *self = other;
                Outcome::Unbound
            }
        }
    }

    /// The diff view's keys: the cursor and scrolling (the view's own), its help, and the
    /// review keys that open the comment box or the review editor.
    fn act_on_diff(
        &mut self,
        mut view: Box<DiffView>,
        back: Box<Overlay>,
        action: Action,
    ) -> Outcome {
        match action {
            Action::Help => {
                *self = Overlay::help(Mode::Diff, Overlay::Diff(view, back));
                Outcome::Stay
            }
            Action::Comment => match super::diff_review::comment_box(&view) {
                Ok((text, at)) => {
                    *self = Overlay::Comment(Box::new(CommentBox { text, view, back, at }));
                    Outcome::Stay
                }
                Err(why) => {
                    *self = Overlay::Diff(view, back);
                    Outcome::Notice(why)
                }
            },
            Action::SendReview => match super::diff_review::review_of(&view) {
                Ok((task, title, draft)) => {
                    *self = Overlay::Editor(Box::new(Editor {
                        op: Op::Review,
                        task: Some(task),
                        title,
                        text: Overlay::text_box("what you say with it (optional)", ""),
                        detail: super::outcome::Detail::Review(draft),
                        back: Some(Box::new(Overlay::Diff(view, back))),
                    }));
                    Outcome::Stay
                }
                Err(why) => {
                    *self = Overlay::Diff(view, back);
                    Outcome::Notice(why)
                }
            },
            a => {
                let outcome = view.act(a);
                *self = Overlay::Diff(view, back);
                outcome
            }
        }
    }

    /// The comment box's keys: keep the comment and go back to the diff, or just go back.
    fn act_on_comment(&mut self, mut c: Box<CommentBox>, action: Action) -> Outcome {
        match action {
            Action::Submit => {
                let said = super::diff_review::keep_comment(&mut c.view, &c.text, &c.at);
                *self = Overlay::Diff(c.view, c.back);
                Outcome::Notice(said)
            }
            Action::Cancel => {
                *self = Overlay::Diff(c.view, c.back);
                Outcome::Stay
            }
            _ => {
                *self = Overlay::Comment(c);
                Outcome::Unbound
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::diff::from_patch;
    use crate::console::evidence::Source;
    use crate::console::inspector::Inspector;
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

    /// One overlay of each kind, in the mode whose table it takes.
    fn one_of_each() -> Vec<Overlay> {
        let source = Source {
            title: "file".into(),
            origin: "the worktree".into(),
            lines: vec!["1 fn main() {}".into()],
            target: Some(0),
            scroll: Scroll::default(),
        };
        let diff = from_patch("", "diff");
        vec![
            Overlay::main_help(true),
            Overlay::Inspector(inspector()),
            Overlay::QuitPrompt,
            Overlay::Editor(Box::new(Editor {
                op: Op::Approve,
                task: Some("T-001".into()),
                title: "approve".into(),
                text: Overlay::text_box("why", "because"),
                detail: crate::console::outcome::Detail::None,
                back: None,
            })),
            Overlay::Source(Box::new((source, inspector()))),
            Overlay::Search(Box::new(Overlay::text_box("find", "word")), Box::new(Overlay::None)),
            Overlay::Row(Box::new(RowView {
                lines: vec!["a word".into()],
                query: "word".into(),
                ..RowView::default()
            })),
            Overlay::ResumeOffer(Op::Approve),
            Overlay::Diff(Box::new(diff.clone()), Box::new(Overlay::None)),
            Overlay::Comment(Box::new(CommentBox {
                text: Overlay::text_box("comment", ""),
                view: Box::new(diff),
                back: Box::new(Overlay::None),
                at: "a.rs:1".into(),
            })),
            Overlay::Ship(Box::new(crate::console::ship_offer::ShipOffer::new(
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
                },
            ))),
        ]
    }

    #[test]
    fn every_action_an_overlays_table_binds_is_handled_by_the_overlay() {
        let overlays = one_of_each();
        let modes: Vec<Mode> = overlays.iter().map(Overlay::mode).collect();
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
            assert!(covered || modes.contains(&mode), "{mode:?} has no overlay in this test");
        }
        let mut row = one_of_each().swap_remove(6);
        assert_eq!(row.act(Action::Pause), Outcome::Unbound, "the check can see a miss");
        for (i, mode) in modes.iter().enumerate() {
            for b in mode.bindings() {
                let mut overlay = one_of_each().swap_remove(i);
                let outcome = overlay.act(b.action);
                assert_ne!(
                    outcome,
                    Outcome::Unbound,
                    "{mode:?} binds {} to {:?}, which its overlay does not handle",
                    b.label(),
                    b.action
                );
            }
        }
    }
}
