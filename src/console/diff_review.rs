//! Reviewing a diff in the console: `c` puts a comment on the line under the cursor (typed in
//! a box over the diff), the comments collect beside it, and `R` opens the editor that sends
//! them as the operator's review — Tab turns its verdict through the rejection categories and
//! accept; Esc there goes back to the diff with the comments kept. The diff as a view (its
//! keys, the boxes it opens) and the comment box are here.

use super::diff::DiffView;
use super::keymap::{Action, Mode};
use super::modal::Editor;
use super::outcome::{Detail, Outcome, ReviewDraft};
use super::views::{Handed, Paint, Step, View};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::widgets::{Block, Borders};
use tui_textarea::TextArea;

/// The box for a comment on the line under the cursor, with the comment already there, and
/// the line's `path:line`; or why there is no line to comment on.
pub fn comment_box(view: &DiffView) -> Result<(TextArea<'static>, String), String> {
    let Some((path, line, _)) = view.line_under_cursor() else {
        return Err("c comments on an added or unchanged line: move the cursor to one (a removed line is not in the work)".into());
    };
    let mut text = TextArea::default();
    text.set_placeholder_text("your comment on this line");
    if let Some(before) = view.comment_here() {
        text.insert_str(before);
    }
    Ok((text, crate::printable::line(&format!("{path}:{line}"))))
}

/// Keeps what was typed as the comment on the line under the cursor; what the console says.
pub fn keep_comment(view: &mut DiffView, typed: &str, at: &str) -> String {
    view.comment(typed);
    if typed.trim().is_empty() {
        format!("no comment on {at} now")
    } else {
        format!("comment kept on {at} ({} in all; R sends your review)", view.comments.len())
    }
}

/// The review the diff's comments make — its task, the editor's title and the draft, its
/// verdict at first `acceptance_gap` — or why there is none to send.
pub fn review_of(view: &DiffView) -> Result<(String, String, ReviewDraft), String> {
    if view.comments.is_empty() {
        return Err("no comment yet: c puts one on the line under the cursor".into());
    }
    let Some(task) = view.task.clone() else {
        return Err(
            "this diff is not one harrow kept (a Tilth session's): there is no run to review"
                .into(),
        );
    };
    // A criterion not met is what a person's line comments most often say.
    let first = Some(crate::session::state::Category::AcceptanceGap);
    let draft = ReviewDraft { comments: view.comments.clone(), category: first };
    let title = draft.title(&task);
    Ok((task, title, draft))
}

/// The comment box, over the diff drawn first.
fn draw_comment(
    frame: &mut ratatui::Frame,
    area: ratatui::layout::Rect,
    text: &TextArea<'static>,
    at: &str,
) {
    let rect = super::chrome::popup(frame, area, 80, 5, area.height / 3);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(format!(" Comment on {at} "))
        .title_bottom(super::chrome::footer(super::keymap::Mode::Comment, rect.width));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    frame.render_widget(text, inner);
}

/// A comment being typed on one line of the diff under it.
#[derive(Debug)]
pub struct CommentBox {
    pub text: TextArea<'static>,
    /// `path:line`, for the box's title.
    pub at: String,
}

impl View for CommentBox {
    fn mode(&self) -> Mode {
        Mode::Comment
    }

    /// Enter keeps the comment on the diff's line; Esc just goes back to the diff.
    fn act(&mut self, action: Action) -> Step {
        match action {
            Action::Submit => Step::Hand(Handed::Comment {
                at: self.at.clone(),
                text: self.text.lines().join(" "),
            }),
            Action::Cancel => Step::Close(Outcome::Stay),
            _ => Step::Stay(Outcome::Unbound),
        }
    }

    fn typed(&mut self, key: crossterm::event::KeyEvent) {
        self.text.input(key);
    }

    fn shows_below(&self) -> bool {
        true
    }

    fn draw(&self, frame: &mut Frame, area: Rect, _paint: &Paint<'_>) {
        draw_comment(frame, area, &self.text, &self.at);
    }
}

/// The diff of a judged attempt: its cursor and scrolling (the view's own), and the review
/// keys that open the comment box or the review editor over it.
impl View for DiffView {
    fn mode(&self) -> Mode {
        Mode::Diff
    }

    fn act(&mut self, action: Action) -> Step {
        match action {
            Action::Close => Step::Close(Outcome::Stay),
            Action::Comment => match comment_box(self) {
                Ok((text, at)) => Step::Open(Box::new(CommentBox { text, at })),
                Err(why) => Step::Stay(Outcome::Notice(why)),
            },
            Action::SendReview => match review_of(self) {
                Ok((task, title, draft)) => Step::Open(Box::new(Editor {
                    op: crate::session::control::Op::Review,
                    task: Some(task),
                    title,
                    text: super::modal::text_box("what you say with it (optional)", ""),
                    detail: Detail::Review(draft),
                })),
                Err(why) => Step::Stay(Outcome::Notice(why)),
            },
            a => Step::Stay(DiffView::act(self, a)),
        }
    }

    /// A comment typed in the box over it, for the line under the cursor.
    fn take(&mut self, handed: Handed) -> Outcome {
        match handed {
            Handed::Comment { at, text } => Outcome::Notice(keep_comment(self, &text, &at)),
            Handed::Query(_) => Outcome::Stay,
        }
    }

    fn draw(&self, frame: &mut Frame, area: Rect, paint: &Paint<'_>) {
        DiffView::draw(self, frame, area, paint.theme);
    }
}
