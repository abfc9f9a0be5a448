//! Opening an evidence pointer (`src/lib.rs:42`, `src/lib.rs:word_count`, `tests/x.rs`) at the
//! place it points: from the commit the verdict judged when there is one, else from the
//! session's worktree as it is now — and saying which, or why it cannot be opened.

use super::chrome::{footer, marked_lines, popup};
use super::keymap::Mode;
use crate::hands::confine::Jail;
use ratatui::widgets::{Block, Borders, Paragraph};
use std::path::Path;

/// Lines shown above the line a pointer names.
const CONTEXT_ABOVE: usize = 6;

/// A file opened at a pointer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub title: String,
    /// Where the text came from, in words.
    pub origin: String,
    /// The file's lines, numbered.
    pub lines: Vec<String>,
    /// The 0-based line the pointer names, if it names one that exists.
    pub target: Option<usize>,
    /// First line shown.
    pub scroll: super::scroll::Scroll,
}

impl Source {
    /// Scrolls the file.
    pub fn act(&mut self, action: super::keymap::Action) -> super::outcome::Outcome {
        if self.scroll.act(action, self.lines.len()) {
            super::outcome::Outcome::Stay
        } else {
            super::outcome::Outcome::Unbound
        }
    }

    /// Draws the file over `area`.
    pub fn draw(
        &self,
        frame: &mut ratatui::Frame,
        area: ratatui::layout::Rect,
        theme: &super::theme::Theme,
    ) {
        let rect =
            popup(frame, area, area.width.saturating_sub(4), area.height.saturating_sub(2), 1);
        let lines = marked_lines(&self.lines, self.target, theme);
        let top = self.scroll.top.min(self.lines.len().saturating_sub(1) as u16);
        let block = Block::default()
            .borders(Borders::ALL)
            .title(format!("{}— {} ", self.title, self.origin))
            .title_bottom(footer(Mode::FileView, rect.width));
        frame.render_widget(Paragraph::new(lines).scroll((top, 0)).block(block), rect);
    }
}

/// A pointer split into its path and what follows the last `:`: a line, a range, a symbol.
fn split(pointer: &str) -> (&str, Option<&str>) {
    let pointer = pointer.trim().trim_start_matches("./");
    match pointer.rsplit_once(':') {
        Some((path, rest)) if !path.is_empty() && !rest.is_empty() => (path, Some(rest.trim())),
        _ => (pointer, None),
    }
}

/// The 0-based line a pointer's tail names in `lines`: `42`, `42-50`, or the first line that
/// mentions the symbol (a definition preferred).
fn locate(lines: &[&str], tail: &str) -> Option<usize> {
    let first = tail.split(['-', '–']).next().unwrap_or(tail);
    if let Ok(n) = first.trim().parse::<usize>() {
        return (n >= 1 && n <= lines.len()).then(|| n - 1);
    }
    let symbol = tail.rsplit("::").next().unwrap_or(tail);
    let defines = |l: &str| {
        ["fn ", "struct ", "enum ", "trait ", "def ", "class ", "const ", "type "]
            .iter()
            .any(|k| l.contains(&format!("{k}{symbol}")))
    };
    lines.iter().position(|l| defines(l)).or_else(|| lines.iter().position(|l| l.contains(symbol)))
}

/// Reads `path` from `commit` in the repository at `worktree`.
fn from_commit(worktree: &Path, commit: &str, path: &str) -> Result<String, String> {
    let repo = git2::Repository::open(worktree).map_err(|e| e.message().to_owned())?;
    let oid = git2::Oid::from_str(commit).map_err(|e| e.message().to_owned())?;
    let tree = repo.find_commit(oid).and_then(|c| c.tree()).map_err(|e| e.message().to_owned())?;
    let entry = tree
        .get_path(Path::new(path))
        .map_err(|_| format!("{path} is not in commit {}", super::describe::short_sha(commit)))?;
    let blob = repo.find_blob(entry.id()).map_err(|e| e.message().to_owned())?;
    Ok(String::from_utf8_lossy(blob.content()).into_owned())
}

/// Reads `path` from the worktree, refusing anything outside it.
fn from_worktree(worktree: &Path, path: &str) -> Result<String, String> {
    let jail = Jail::new(worktree).map_err(|e| format!("{}: {e}", worktree.display()))?;
    let checked = jail.check(path).map_err(|e| e.to_string())?;
    let mut file = jail.open_read(&checked).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut file, &mut bytes).map_err(|e| format!("{path}: {e}"))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Opens `pointer` from the session whose worktree was `worktree`; `commit` is the commit
/// that holds the work as the verdict judged it (the attempt harrow kept, or for an older
/// session's accept, the commit it became), read from the worktree's repository or, when the
/// worktree is gone, from `source`'s. The error says why, in one line.
pub fn open(
    pointer: &str,
    worktree: Option<&Path>,
    source: Option<&Path>,
    commit: Option<&str>,
) -> Result<Source, String> {
    let (path, tail) = split(pointer);
    let Some(worktree) = worktree else {
        return Err("the session does not say where its worktree was".into());
    };
    let judged = commit.and_then(|c| {
        [Some(worktree), source].into_iter().flatten().find_map(|r| from_commit(r, c, path).ok())
    });
    let (text, origin) = match (judged, commit) {
        (Some(text), Some(c)) => {
            let now = worktree.is_dir().then(|| from_worktree(worktree, path).ok()).flatten();
            let changed = match now {
                Some(now) if now == text => "; the file is the same in the worktree now",
                Some(_) => "; the file has CHANGED in the worktree since",
                None => "",
            };
            (text, format!("as judged (commit {}){changed}", super::describe::short_sha(c)))
        }
        _ if !worktree.is_dir() => {
            return Err(format!(
                "the worktree {} is gone (archived or cleansed), so {path} cannot be opened; \
                 the session branch keeps the accepted commits",
                worktree.display()
            ));
        }
        _ => (
            from_worktree(worktree, path)?,
            "from the worktree as it is now (the judged work was not kept)".to_owned(),
        ),
    };
    let raw: Vec<&str> = text.lines().collect();
    let target = tail.and_then(|t| locate(&raw, t));
    let width = raw.len().to_string().len();
    let lines = raw
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let mark = if Some(i) == target { '▶' } else { ' ' };
            format!("{mark}{:>width$} │ {l}", i + 1)
        })
        .collect();
    let scroll =
        super::scroll::Scroll::at(target.map_or(0, |t| t.saturating_sub(CONTEXT_ABOVE)) as u16);
    Ok(Source { title: format!(" {pointer} "), origin, lines, target, scroll })
}

/// The evidence view, over the inspector it was opened from: Esc goes back to it.
impl super::views::View for Source {
    fn mode(&self) -> super::keymap::Mode {
        super::keymap::Mode::FileView
    }

    fn act(&mut self, action: super::keymap::Action) -> super::views::Step {
        match action {
            super::keymap::Action::Close => {
                super::views::Step::Close(super::outcome::Outcome::Stay)
            }
            a => super::views::Step::Stay(Source::act(self, a)),
        }
    }

    fn draw(
        &self,
        frame: &mut ratatui::Frame,
        area: ratatui::layout::Rect,
        paint: &super::views::Paint<'_>,
    ) {
        Source::draw(self, frame, area, paint.theme);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_name_lines_ranges_and_symbols() {
        let lines = ["use x;", "", "/// doc", "pub fn word_count() {}", "word_count();"];
        assert_eq!(split("./src/lib.rs:4"), ("src/lib.rs", Some("4")));
        assert_eq!(split("tests/a.rs"), ("tests/a.rs", None));
        assert_eq!(locate(&lines, "4"), Some(3));
        assert_eq!(locate(&lines, "2-3"), Some(1));
        assert_eq!(locate(&lines, "99"), None);
        assert_eq!(locate(&lines, "word_count"), Some(3));
        assert_eq!(locate(&lines, "crate::word_count"), Some(3));
    }

    #[test]
    fn a_worktree_that_is_gone_or_a_path_outside_it_is_one_clear_line() {
        let gone =
            open("src/lib.rs:3", Some(Path::new("/nonexistent/harrow/workspace")), None, None);
        let e = gone.unwrap_err();
        assert!(e.contains("is gone") && e.contains("src/lib.rs") && !e.contains('\n'), "{e}");
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("a.rs"), "one\ntwo\nthree\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let e = open("../../etc/passwd:1", Some(dir.path()), None, None).unwrap_err();
        assert!(e.contains("escapes the workspace"), "{e}");
        let s = open("a.rs:2", Some(dir.path()), None, None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.target, Some(1));
        assert_eq!(s.lines[1], "▶2 │ two");
        assert!(s.origin.contains("worktree as it is now"));
    }

    #[test]
    fn an_accepted_verdict_opens_the_file_as_committed_not_as_edited_since() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let repo = git2::Repository::init(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("a.rs"), "fn judged() {}\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let mut index = repo.index().unwrap_or_else(|e| panic!("{e}"));
        index.add_path(Path::new("a.rs")).unwrap_or_else(|e| panic!("{e}"));
        let tree = repo.find_tree(index.write_tree().unwrap_or_else(|e| panic!("{e}")));
        let sig = git2::Signature::now("t", "t@localhost").unwrap_or_else(|e| panic!("{e}"));
        let oid = repo
            .commit(Some("HEAD"), &sig, &sig, "task", &tree.unwrap_or_else(|e| panic!("{e}")), &[])
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("a.rs"), "fn edited_later() {}\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let sha = oid.to_string();
        let s = open("a.rs:judged", Some(dir.path()), None, Some(&sha))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.lines, ["▶1 │ fn judged() {}"]);
        assert!(s.origin.starts_with("as judged"), "{}", s.origin);
        assert!(s.origin.contains("CHANGED"), "it says the file moved on: {}", s.origin);
        let gone = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let s = open("a.rs:1", Some(&gone.path().join("x")), Some(dir.path()), Some(&sha))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.lines, ["▶1 │ fn judged() {}"], "a gone worktree reads from the source");
    }
}
