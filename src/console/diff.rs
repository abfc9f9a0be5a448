//! The diff of a judged attempt: what the evaluator saw (the attempt against the task's
//! starting commit), or what a rework changed since the attempt before it. Read with git from
//! the commits harrow kept, so it shows the work as judged even after the worktree moved on.

use super::chrome::{footer, popup, tone_style};
use super::describe::Tone;
use super::keymap::Mode;
use git2::{DiffFormat, DiffOptions, Repository};
use ratatui::style::Modifier;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph};
use std::path::PathBuf;

/// One file of the diff: where its header line is and how much changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStat {
    pub path: String,
    pub added: usize,
    pub removed: usize,
    /// The index of the file's header among the view's lines.
    pub line: usize,
}

/// A diff ready to read and comment on: its lines with their tone, its files, the line under
/// the cursor and the operator's comments on lines of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffView {
    pub title: String,
    pub lines: Vec<(DiffLine, String)>,
    pub files: Vec<FileStat>,
    /// Where each line sits in the file as the attempt left it (`path`, line): added and
    /// unchanged lines, which a comment can be about.
    pub at: Vec<Option<(String, u64)>>,
    /// First line and first column shown.
    pub scroll: super::scroll::Scroll,
    pub column: u16,
    /// The line under the cursor, an index of `lines`.
    pub cursor: usize,
    /// How many lines the last frame showed: what a page is, and how far the view follows the
    /// cursor.
    pub page: std::cell::Cell<usize>,
    /// The task whose attempt this is, when the diff is one harrow kept.
    pub task: Option<String>,
    /// The operator's comments, in the order made.
    pub comments: Vec<crate::session::event::ReviewedLine>,
}

impl DiffView {
    /// Moves the cursor (the view follows it), between files and sideways.
    pub fn act(&mut self, action: super::keymap::Action) -> super::outcome::Outcome {
        use super::keymap::Action;
        use super::outcome::Outcome;
        let last = self.lines.len().saturating_sub(1);
        let page = self.page.get().max(1);
        match action {
            Action::Down => self.cursor = (self.cursor + 1).min(last),
            Action::Up => self.cursor = self.cursor.saturating_sub(1),
            Action::PageDown => self.cursor = (self.cursor + page).min(last),
            Action::PageUp => self.cursor = self.cursor.saturating_sub(page),
            Action::Top => self.cursor = 0,
            Action::Bottom => self.cursor = last,
            Action::NextFile => self.to_file(true),
            Action::PrevFile => self.to_file(false),
            Action::Right => self.column = self.column.saturating_add(8),
            Action::Left => self.column = self.column.saturating_sub(8),
            _ => return Outcome::Unbound,
        }
        self.follow();
        Outcome::Stay
    }

    /// Scrolls so the cursor is on screen.
    fn follow(&mut self) {
        let page = self.page.get().max(1);
        let top = usize::from(self.scroll.top);
        let top = if self.cursor < top {
            self.cursor
        } else if self.cursor >= top + page {
            self.cursor + 1 - page
        } else {
            top
        };
        self.scroll.top = u16::try_from(top).unwrap_or(u16::MAX);
    }

    /// The line under the cursor as a comment is about it: its file, its number there and
    /// its text; `None` on a header, a hunk or a removed line.
    pub fn line_under_cursor(&self) -> Option<(String, u64, String)> {
        let (path, line) = self.at.get(self.cursor)?.clone()?;
        let text = self.lines.get(self.cursor)?.1.chars().skip(1).collect();
        Some((path, line, text))
    }

    /// Keeps `comment` on the line under the cursor, in place of one made there before; an
    /// empty comment takes that one away. `false` when the cursor is on no commentable line.
    pub fn comment(&mut self, comment: &str) -> bool {
        let Some((path, line, text)) = self.line_under_cursor() else { return false };
        self.comments.retain(|c| !(c.path == path && c.line == line));
        let comment = comment.trim();
        if !comment.is_empty() {
            let kept = crate::session::event::ReviewedLine {
                path,
                line,
                text,
                comment: comment.to_owned(),
            };
            self.comments.push(kept);
        }
        true
    }

    /// The comment already on the line under the cursor, to edit it.
    pub fn comment_here(&self) -> Option<&str> {
        let (path, line, _) = self.line_under_cursor()?;
        let c = self.comments.iter().find(|c| c.path == path && c.line == line)?;
        Some(c.comment.as_str())
    }

    /// Draws the diff over `area`: the cursor's line marked, a commented line with `✎` and
    /// its comment, and the comments listed beside it once there are any.
    pub fn draw(
        &self,
        frame: &mut ratatui::Frame,
        area: ratatui::layout::Rect,
        theme: &super::theme::Theme,
    ) {
        let rect =
            popup(frame, area, area.width.saturating_sub(2), area.height.saturating_sub(2), 1);
        let (body, side) = if self.comments.is_empty() || rect.width < 60 {
            (rect, None)
        } else {
            let side = (rect.width / 3).max(24);
            let body = ratatui::layout::Rect { width: rect.width - side, ..rect };
            let list = ratatui::layout::Rect { x: rect.x + body.width, width: side, ..rect };
            (body, Some(list))
        };
        let height = usize::from(body.height.saturating_sub(2));
        self.page.set(height);
        let top = usize::from(self.scroll.top).min(self.lines.len().saturating_sub(1));
        let end = self.lines.len().min(top + height);
        let lines: Vec<Line> = (top..end)
            .map(|i| {
                let (kind, text) = &self.lines[i];
                let mut style = tone_style(kind.tone(), theme);
                if *kind == DiffLine::File {
                    style = style.add_modifier(Modifier::BOLD);
                }
                if i == self.cursor {
                    style = style.add_modifier(Modifier::REVERSED);
                }
                match self.comment_at(i) {
                    Some(c) => {
                        Line::styled(format!("{text}  ✎ {}", crate::printable::line(c)), style)
                    }
                    None => Line::styled(text.clone(), style),
                }
            })
            .collect();
        let block = Block::default()
            .borders(Borders::ALL)
            .title(self.title.clone())
            .title_bottom(footer(Mode::Diff, body.width));
        frame.render_widget(Paragraph::new(lines).scroll((0, self.column)).block(block), body);
        if let Some(list) = side {
            self.draw_comments(frame, list, theme);
        }
    }

    /// The comment on line `i` of the view, if one was made there.
    fn comment_at(&self, i: usize) -> Option<&str> {
        let (path, line) = self.at.get(i)?.as_ref()?;
        let c = self.comments.iter().find(|c| &c.path == path && c.line == *line)?;
        Some(c.comment.as_str())
    }

    /// The comments so far, each at its `FILE:LINE`.
    fn draw_comments(
        &self,
        frame: &mut ratatui::Frame,
        area: ratatui::layout::Rect,
        theme: &super::theme::Theme,
    ) {
        let mut lines: Vec<Line> = Vec::new();
        for c in &self.comments {
            let at = crate::printable::line(&format!("{}:{}", c.path, c.line));
            lines.push(Line::styled(at, tone_style(Tone::Waiting, theme)));
            lines.push(Line::raw(format!("  {}", crate::printable::line(&c.comment))));
        }
        let title = format!(" {} comment(s) · R sends your review ", self.comments.len());
        let block = Block::default().borders(Borders::ALL).title(title);
        let text = Paragraph::new(lines).wrap(ratatui::widgets::Wrap { trim: false });
        frame.render_widget(text.block(block), area);
    }
}

/// What a line of a diff is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffLine {
    /// A file's header: its path and counts.
    File,
    Hunk,
    Added,
    Removed,
    Context,
    /// A note of the view's own (no change, binary file).
    Note,
}

impl DiffLine {
    pub fn tone(self) -> Tone {
        match self {
            DiffLine::Added => Tone::Good,
            DiffLine::Removed => Tone::Bad,
            DiffLine::Hunk => Tone::Waiting,
            DiffLine::File => Tone::Warn,
            DiffLine::Context | DiffLine::Note => Tone::Plain,
        }
    }
}

/// The first of `repos` that opens: the worktree while it exists, else the repository the
/// session came from (the kept commits live in the object store they share).
fn open(repos: &[PathBuf]) -> Result<Repository, String> {
    repos.iter().find_map(|p| Repository::open(p).ok()).ok_or_else(|| {
        "the session's repository is gone (its worktree and source folder cannot be opened)".into()
    })
}

/// The diff from commit `from` to commit `to`, titled `title`.
pub fn between(repos: &[PathBuf], from: &str, to: &str, title: &str) -> Result<DiffView, String> {
    let repo = open(repos)?;
    let tree = |sha: &str| {
        repo.revparse_single(sha)
            .and_then(|o| o.peel_to_tree())
            .map_err(|e| format!("commit {} cannot be read: {}", short(sha), e.message()))
    };
    let (a, b) = (tree(from)?, tree(to)?);
    let mut opts = DiffOptions::new();
    opts.context_lines(3);
    let diff = repo
        .diff_tree_to_tree(Some(&a), Some(&b), Some(&mut opts))
        .map_err(|e| format!("the diff cannot be made: {}", e.message()))?;
    let mut lines: Vec<(DiffLine, String)> = Vec::new();
    let mut files: Vec<FileStat> = Vec::new();
    let mut at: Vec<Option<(String, u64)>> = Vec::new();
    let printed = diff.print(DiffFormat::Patch, |delta, _hunk, line| {
        let before = lines.len();
        let text =
            String::from_utf8_lossy(line.content()).trim_end_matches(['\n', '\r']).to_owned();
        match line.origin() {
            'F' => {
                let path = delta
                    .new_file()
                    .path()
                    .or_else(|| delta.old_file().path())
                    .map_or_else(|| "?".to_owned(), |p| p.display().to_string());
                files.push(FileStat { path, added: 0, removed: 0, line: lines.len() });
                lines.push((DiffLine::File, String::new()));
            }
            'H' => lines.push((DiffLine::Hunk, text)),
            '+' => {
                if let Some(f) = files.last_mut() {
                    f.added += 1;
                }
                lines.push((DiffLine::Added, format!("+{text}")));
            }
            '-' => {
                if let Some(f) = files.last_mut() {
                    f.removed += 1;
                }
                lines.push((DiffLine::Removed, format!("-{text}")));
            }
            ' ' => lines.push((DiffLine::Context, format!(" {text}"))),
            'B' => lines.push((DiffLine::Note, "  (a binary file)".into())),
            _ => {}
        }
        if lines.len() > before {
            let path = files.last().map(|f| f.path.clone());
            let place = match (line.origin(), path, line.new_lineno()) {
                ('+' | ' ', Some(path), Some(n)) => Some((path, u64::from(n))),
                _ => None,
            };
            at.push(place);
        }
        true
    });
    printed.map_err(|e| format!("the diff cannot be read: {}", e.message()))?;
    let mut view = finish(lines, files, title);
    at.resize(view.lines.len(), None);
    view.at = at;
    Ok(view)
}

/// A diff as unified-diff text (the one Tilth put in its evaluator prompt), titled `title`.
pub fn from_patch(text: &str, title: &str) -> DiffView {
    let mut lines: Vec<(DiffLine, String)> = Vec::new();
    let mut files: Vec<FileStat> = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            let path = rest.rsplit(" b/").next().unwrap_or(rest).to_owned();
            files.push(FileStat { path, added: 0, removed: 0, line: lines.len() });
            lines.push((DiffLine::File, String::new()));
        } else if line.starts_with("@@") {
            lines.push((DiffLine::Hunk, line.to_owned()));
        } else if line.starts_with("+++") || line.starts_with("---") || files.is_empty() {
            lines.push((DiffLine::Note, line.to_owned()));
        } else if line.starts_with('+') {
            if let Some(f) = files.last_mut() {
                f.added += 1;
            }
            lines.push((DiffLine::Added, line.to_owned()));
        } else if line.starts_with('-') {
            if let Some(f) = files.last_mut() {
                f.removed += 1;
            }
            lines.push((DiffLine::Removed, line.to_owned()));
        } else {
            lines.push((DiffLine::Context, line.to_owned()));
        }
    }
    finish(lines, files, title)
}

/// Writes each file's header and the title's totals.
fn finish(mut lines: Vec<(DiffLine, String)>, files: Vec<FileStat>, title: &str) -> DiffView {
    for f in &files {
        lines[f.line].1 = format!("━━ {}  +{} −{}", f.path, f.added, f.removed);
    }
    if files.is_empty() {
        lines.push((DiffLine::Note, "no change".into()));
    }
    let added: usize = files.iter().map(|f| f.added).sum();
    let removed: usize = files.iter().map(|f| f.removed).sum();
    let title = format!(" {title} · {} file(s) +{added} −{removed} ", files.len());
    let at = vec![None; lines.len()];
    DiffView {
        title,
        lines,
        files,
        at,
        scroll: super::scroll::Scroll::default(),
        column: 0,
        cursor: 0,
        page: std::cell::Cell::new(20),
        task: None,
        comments: Vec::new(),
    }
}

impl DiffView {
    /// Scrolls to the next file's header (or the previous one's), going round at either end.
    pub fn to_file(&mut self, forward: bool) {
        let at = usize::from(self.scroll.top);
        let next = if forward {
            self.files.iter().find(|f| f.line > at).or_else(|| self.files.first())
        } else {
            self.files.iter().rev().find(|f| f.line < at).or_else(|| self.files.last())
        };
        if let Some(f) = next {
            self.scroll.top = u16::try_from(f.line).unwrap_or(u16::MAX);
            self.cursor = f.line;
        }
    }
}

fn short(sha: &str) -> String {
    sha.chars().take(7).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(repo: &Repository, files: &[(&str, &str)], parent: Option<git2::Oid>) -> git2::Oid {
        let mut index = repo.index().unwrap();
        index.clear().unwrap();
        for (path, text) in files {
            let blob = repo.blob(text.as_bytes()).unwrap();
            let entry = git2::IndexEntry {
                ctime: git2::IndexTime::new(0, 0),
                mtime: git2::IndexTime::new(0, 0),
                dev: 0,
                ino: 0,
                mode: 0o100_644,
                uid: 0,
                gid: 0,
                file_size: 0,
                id: blob,
                flags: 0,
                flags_extended: 0,
                path: path.as_bytes().to_vec(),
            };
            index.add(&entry).unwrap();
        }
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        let parents: Vec<git2::Commit> =
            parent.into_iter().map(|p| repo.find_commit(p).unwrap()).collect();
        let refs: Vec<&git2::Commit> = parents.iter().collect();
        repo.commit(None, &sig, &sig, "c", &tree, &refs).unwrap()
    }

    #[test]
    fn files_with_counts_hunks_and_moving_between_files() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = Repository::init(tmp.path()).unwrap();
        let base = commit(&repo, &[("a.rs", "one\ntwo\n"), ("b.rs", "x\n")], None);
        let next = commit(
            &repo,
            &[("a.rs", "one\n2\n"), ("b.rs", "x\ny\n"), ("c.rs", "new\n")],
            Some(base),
        );
        let mut view = between(
            &[tmp.path().join("gone"), tmp.path().to_path_buf()],
            &base.to_string(),
            &next.to_string(),
            "T-001 attempt 1",
        )
        .unwrap();
        let paths: Vec<&str> = view.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["a.rs", "b.rs", "c.rs"]);
        assert_eq!((view.files[0].added, view.files[0].removed), (1, 1));
        assert!(view.title.contains("3 file(s) +3 −1"), "{}", view.title);
        assert!(view.lines.iter().any(|(k, t)| *k == DiffLine::Added && t == "+2"));
        assert!(view.lines.iter().any(|(k, t)| *k == DiffLine::Removed && t == "-two"));
        view.to_file(true);
        assert_eq!(usize::from(view.scroll.top), view.files[1].line);
        view.to_file(true);
        view.to_file(true);
        assert_eq!(usize::from(view.scroll.top), view.files[0].line, "round at the end");
        view.to_file(false);
        assert_eq!(usize::from(view.scroll.top), view.files[2].line);
        let tilth = from_patch(
            "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1,2 @@\n a\n+b\n",
            "Tilth",
        );
        assert_eq!(tilth.files[0].path, "x.py");
        assert_eq!((tilth.files[0].added, tilth.files[0].removed), (1, 0));
        let missing = between(&[tmp.path().join("gone")], "a", "b", "");
        assert!(missing.unwrap_err().contains("repository is gone"));
    }
}

#[cfg(test)]
mod hostile {
    use super::*;

    #[test]
    fn a_file_the_worker_wrote_with_escapes_reaches_no_cell_as_a_control_character() {
        let patch = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -0,0 +1 @@\n+evil\u{1b}]0;pwned\u{7}\u{1b}[2J\n";
        let view = from_patch(patch, "t\u{1b}[31m");
        let look = crate::console::theme::Look::built_in(true);
        let theme = look.themes[look.theme].clone();
        let mut terminal =
            ratatui::Terminal::new(ratatui::backend::TestBackend::new(60, 10)).unwrap();
        terminal.draw(|f| view.draw(f, f.area(), &theme)).unwrap();
        let cells = terminal.backend().buffer().content();
        assert!(cells.iter().all(|c| !c.symbol().chars().any(char::is_control)));
    }
}
