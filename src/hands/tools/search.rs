//! `glob` and `grep`: walk the worktree only, honour `.gitignore`, never follow a symlink out.

use super::args::{Args, ToolError};
use super::files::read_text;
use crate::hands::confine::Jail;
use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkBuilder;
use regex::RegexBuilder;
use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

/// Results returned at most, unless the call asks for another cap.
pub const MAX_RESULTS: u64 = 200;
/// Longest matching line shown by `grep`.
const MAX_LINE_CHARS: usize = 300;

/// Compiles a glob the model gave, relative to the worktree. Absolute patterns and patterns
/// that climb with `..` are refused: they could only name files outside.
fn matcher(tool: &str, name: &str, pattern: &str) -> Result<GlobMatcher, ToolError> {
    let p = Path::new(pattern);
    if p.is_absolute() || p.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(ToolError(format!(
            "{tool}: {name} '{pattern}' escapes the workspace; use a pattern relative to it, like **/*.rs"
        )));
    }
    let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| ToolError(format!("{tool}: {name} '{pattern}' is not a valid glob: {e}")))
}

/// Every file under the root that `.gitignore` does not exclude, as paths relative to it,
/// sorted. Symlinks are listed but never followed; `.git` is skipped.
fn files(jail: &Jail) -> Vec<PathBuf> {
    let root = jail.root().to_path_buf();
    let mut out: Vec<PathBuf> = WalkBuilder::new(&root)
        .hidden(false)
        .follow_links(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file() || t.is_symlink()))
        .filter_map(|e| e.path().strip_prefix(&root).ok().map(Path::to_path_buf))
        .collect();
    out.sort();
    out
}

pub fn glob(jail: &Jail, args: &Args<'_>) -> Result<String, ToolError> {
    let pattern = args.string("pattern")?;
    let cap = args.opt_uint("max_results", 1..=2000)?.unwrap_or(MAX_RESULTS) as usize;
    let m = matcher("glob", "pattern", pattern)?;
    let hits: Vec<String> = files(jail)
        .into_iter()
        .filter(|p| m.is_match(p))
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if hits.is_empty() {
        return Ok("(no matches)".into());
    }
    let total = hits.len();
    let mut out = hits.into_iter().take(cap).collect::<Vec<_>>().join("\n");
    if total > cap {
        let _ = write!(out, "\n... [{total} matches; showing the first {cap}]");
    }
    Ok(out)
}

pub fn grep(jail: &Jail, args: &Args<'_>) -> Result<String, ToolError> {
    let pattern = args.string("pattern")?;
    let path_glob = args.opt_string("path_glob")?.unwrap_or("**/*");
    let cap = args.opt_uint("max_matches", 1..=2000)?.unwrap_or(MAX_RESULTS) as usize;
    let ignore_case = args.opt_bool("ignore_case")?;
    let re = RegexBuilder::new(pattern)
        .case_insensitive(ignore_case)
        .build()
        .map_err(|e| ToolError(format!("grep: pattern is not a valid regex: {e}")))?;
    let m = matcher("grep", "path_glob", path_glob)?;
    let mut hits = Vec::new();
    'files: for rel in files(jail).into_iter().filter(|p| m.is_match(p)) {
        let Ok(checked) = jail.check(&rel.to_string_lossy()) else { continue };
        let Ok(text) = read_text(jail, &checked) else { continue };
        for (n, line) in text.lines().enumerate() {
            if re.is_match(line) {
                if hits.len() == cap {
                    hits.push(format!("... [stopped at {cap} matches]"));
                    break 'files;
                }
                let shown: String = line.chars().take(MAX_LINE_CHARS).collect();
                let more = if line.chars().count() > MAX_LINE_CHARS { " …" } else { "" };
                hits.push(format!("{}:{}: {shown}{more}", rel.display(), n + 1));
            }
        }
    }
    if hits.is_empty() {
        return Ok("(no matches)".into());
    }
    Ok(hits.join("\n"))
}
