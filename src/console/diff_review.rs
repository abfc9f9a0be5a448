//! Reviewing a diff in the console: `c` puts a comment on the line under the cursor (typed in
//! a box over the diff), the comments collect beside it, and `R` opens the editor that sends
//! them as the operator's review — Tab turns its verdict through the rejection categories and
//! accept; Esc there goes back to the diff with the comments kept. What each key decides is
//! here; the overlays that carry it are the modal's.

use super::diff::DiffView;
use super::outcome::ReviewDraft;
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
pub fn keep_comment(view: &mut DiffView, text: &TextArea<'static>, at: &str) -> String {
    let typed = text.lines().join(" ");
    view.comment(&typed);
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
    let first = (crate::session::state::CATEGORIES.iter())
        .find(|(c, _)| *c == "acceptance_gap")
        .map(|(c, _)| *c);
    let draft = ReviewDraft { comments: view.comments.clone(), category: first };
    let title = review_title(&task, &draft);
    Ok((task, title, draft))
}

/// The review editor's title: the task, the verdict Tab turns, how many comments.
pub fn review_title(task: &str, draft: &ReviewDraft) -> String {
    format!(
        "Review {}: {} · {} comment(s) · Tab: another verdict",
        crate::printable::line(task),
        draft.verdict(),
        draft.comments.len()
    )
}

/// The comment box, over the diff drawn first.
pub fn draw_comment(
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
