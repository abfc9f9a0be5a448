//! The operator's review of a task's diff: comments on its lines (`path:line: text`), each
//! checked against the diff and quoted with the line it is about, then a verdict — reject with
//! a category, or accept with the comments — whose brief goes back to the worker the way an
//! evaluator's reject does.

use crate::session::control::LineComment;
use crate::session::event::ReviewedLine;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The most comments one review carries: a review, not a file.
pub const MAX_COMMENTS: usize = 200;
/// The most of one comment that is kept.
const COMMENT_MAX_CHARS: usize = 2_000;

/// Reads a comments file: one `path:line: text` a line; blank lines and lines starting with
/// `#` are skipped. A line that is not a comment is named as `FILE:N` with what was expected.
pub fn parse_comments(text: &str, file: &str) -> Result<Vec<LineComment>, String> {
    let mut comments = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = format!("{file}:{}", n + 1);
        let bad = |why: &str| format!("{at}: {why}; write one `path:line: comment` a line");
        let mut parts = line.splitn(3, ':');
        let (Some(path), Some(number), Some(comment)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(bad("not a comment"));
        };
        let path = path.trim();
        let Ok(number) = number.trim().parse::<u64>() else {
            return Err(bad(&format!("`{}` is not a line number", crate::printable::line(number))));
        };
        let comment = comment.trim();
        if path.is_empty() || number == 0 || comment.is_empty() {
            return Err(bad("a path, a line from 1 and words are all needed"));
        }
        comments.push(LineComment {
            path: path.to_owned(),
            line: number,
            comment: comment.chars().take(COMMENT_MAX_CHARS).collect(),
        });
        if comments.len() > MAX_COMMENTS {
            return Err(format!("{at}: more than {MAX_COMMENTS} comments; a review, not a file"));
        }
    }
    if comments.is_empty() {
        return Err(format!("{file} has no comment; write one `path:line: comment` a line"));
    }
    Ok(comments)
}

/// The lines a diff shows on its new side — added and unchanged context — by file, with
/// their text: what a comment can be about.
pub fn lines_in(patch: &str) -> BTreeMap<String, BTreeMap<u64, String>> {
    let mut files: BTreeMap<String, BTreeMap<u64, String>> = BTreeMap::new();
    let mut path: Option<String> = None;
    // Between a file's `diff --git` and its first hunk: `+++`/`---` are headers there, and
    // only there (an added line reading `++ x` is `+++ x` in a hunk).
    let mut in_header = false;
    let mut next = 0u64;
    for line in patch.lines() {
        if line.starts_with("diff --git ") {
            in_header = true;
            path = None;
        } else if let Some(header) = line.strip_prefix("@@ ") {
            in_header = false;
            // `@@ -a,b +c,d @@`: the new side starts at c.
            next = (header.split_whitespace())
                .find_map(|w| w.strip_prefix('+'))
                .and_then(|c| c.split(',').next()?.parse().ok())
                .unwrap_or(0);
        } else if in_header {
            if let Some(new) = line.strip_prefix("+++ ") {
                path = new.strip_prefix("b/").map(str::to_owned);
            }
        } else if let (Some(p), Some(first @ ('+' | ' '))) = (&path, line.chars().next()) {
            files.entry(p.clone()).or_default().insert(next, line[first.len_utf8()..].to_owned());
            next += 1;
        }
    }
    files
}

/// Each comment with the line it is about, or why one cannot be: its file is not in the diff,
/// or its line is not (the nearest lines that are, named).
pub fn check(
    comments: &[LineComment],
    lines: &BTreeMap<String, BTreeMap<u64, String>>,
) -> Result<Vec<ReviewedLine>, String> {
    let mut reviewed = Vec::new();
    for c in comments {
        let shown = crate::printable::line(&c.path);
        let Some(file) = lines.get(&c.path) else {
            let files: Vec<&str> = lines.keys().map(String::as_str).collect();
            return Err(format!(
                "{shown} is not in the task's diff; the files in it are {}",
                if files.is_empty() { "none".to_owned() } else { files.join(", ") }
            ));
        };
        let Some(text) = file.get(&c.line) else {
            return Err(format!(
                "{shown}:{} is not a line of the task's diff; the nearest that are: {}",
                c.line,
                nearest(file, c.line)
            ));
        };
        reviewed.push(ReviewedLine {
            path: c.path.clone(),
            line: c.line,
            text: text.clone(),
            comment: c.comment.clone(),
        });
    }
    Ok(reviewed)
}

/// The runs of diff lines closest to `line`, as `12–18, 40–44`.
fn nearest(file: &BTreeMap<u64, String>, line: u64) -> String {
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for n in file.keys() {
        match runs.last_mut() {
            Some((_, end)) if *end + 1 == *n => *end = *n,
            _ => runs.push((*n, *n)),
        }
    }
    runs.sort_by_key(|(a, b)| if line < *a { a - line } else { line.saturating_sub(*b) });
    let named: Vec<String> = (runs.iter().take(2))
        .map(|(a, b)| if a == b { a.to_string() } else { format!("{a}–{b}") })
        .collect();
    named.join(", ")
}

/// What the worker reads as its next attempt's brief after the operator's review: the
/// verdict, then each comment at its `FILE:LINE` under the line it is about.
pub fn brief(category: Option<&str>, reason: &str, reviewed: &[ReviewedLine]) -> String {
    let head = match category {
        Some(c) => format!(
            "The operator reviewed your diff and rejected it.\nCategory: {c} — {}",
            crate::session::state::category_meaning(c).unwrap_or("")
        ),
        None => "The operator reviewed your diff and accepted it, with comments.".to_owned(),
    };
    let mut out = head;
    if !reason.trim().is_empty() {
        let _ = write!(out, "\nThe operator says: {}", reason.trim());
    }
    out.push_str("\n\nComments on your diff:");
    for r in reviewed {
        let text = crate::printable::line(&r.text);
        let _ = write!(out, "\n\n{}:{}\n> {text}\n{}", r.path, r.line, r.comment);
    }
    out.push_str("\n\nAddress every comment, then submit your case again.");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATCH: &str = "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,4 @@\n fn a() {}\n-fn b() {}\n+fn b() -> u8 { 1 }\n+fn c() {}\n fn d() {}\n@@ -20,2 +21,3 @@\n fn x() {}\n+fn y() {}\n+++ z\n";

    #[test]
    fn a_diffs_new_side_lines_are_numbered_as_the_file_has_them() {
        let lines = lines_in(PATCH);
        let lib = &lines["src/lib.rs"];
        assert_eq!(lib[&1], "fn a() {}");
        assert_eq!(lib[&2], "fn b() -> u8 { 1 }");
        assert_eq!(lib[&4], "fn d() {}");
        assert_eq!(lib[&22], "fn y() {}");
        assert_eq!(lib[&23], "++ z", "an added line that reads like a header is a line");
        assert!(!lib.contains_key(&5), "a line outside every hunk is not in the diff");
    }

    #[test]
    fn a_comment_is_quoted_with_its_line_or_refused_with_the_nearest_lines() {
        let lines = lines_in(PATCH);
        let c = |path: &str, line| LineComment { path: path.into(), line, comment: "why?".into() };
        let ok = check(&[c("src/lib.rs", 2)], &lines).unwrap();
        assert_eq!(ok[0].text, "fn b() -> u8 { 1 }");
        let far = check(&[c("src/lib.rs", 15)], &lines).unwrap_err();
        assert!(far.contains("src/lib.rs:15 is not a line") && far.contains("21–23, 1–4"), "{far}");
        let other = check(&[c("README.md", 1)], &lines).unwrap_err();
        assert!(
            other.contains("README.md is not in the task's diff") && other.contains("src/lib.rs")
        );
        let brief = brief(Some("weak_test"), "tighten it", &ok);
        assert!(brief.contains("src/lib.rs:2\n> fn b() -> u8 { 1 }\nwhy?"), "{brief}");
        assert!(brief.contains("Category: weak_test"));
    }

    #[test]
    fn a_bad_comment_line_is_named_by_its_file_and_line() {
        let text = "# my review\nsrc/lib.rs:2: return a Result\n\nsrc/lib.rs: no line\n";
        let err = parse_comments(text, "review.txt").unwrap_err();
        assert!(err.starts_with("review.txt:4:"), "{err}");
        let err = parse_comments("src/a.rs:x: words\n", "r").unwrap_err();
        assert!(err.contains("r:1") && err.contains("`x` is not a line number"), "{err}");
        let ok = parse_comments("src/lib.rs:2: return a Result: not a panic\n", "r").unwrap();
        assert_eq!(ok[0].comment, "return a Result: not a panic");
        assert!(parse_comments("\n# nothing\n", "r").unwrap_err().contains("has no comment"));
    }
}
