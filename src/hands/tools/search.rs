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

/// Searches files on every core; each file's hits come back in file order. A worker stops
/// early once it alone has more than `cap` hits, since only the first `cap` are shown.
fn search_files(jail: &Jail, re: &regex::Regex, files: &[PathBuf], cap: usize) -> Vec<Vec<String>> {
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get).min(8);
    let chunk = files.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let workers: Vec<_> = files
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    let mut found = 0usize;
                    let mut out = Vec::with_capacity(part.len());
                    for rel in part {
                        out.push(if found > cap { Vec::new() } else { search_file(jail, re, rel) });
                        found += out.last().map_or(0, Vec::len);
                    }
                    out
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap_or_default()).collect()
    })
}

fn search_file(jail: &Jail, re: &regex::Regex, rel: &Path) -> Vec<String> {
    let Ok(checked) = jail.check(&rel.to_string_lossy()) else { return Vec::new() };
    let Ok(text) = read_text(jail, &checked) else { return Vec::new() };
    let mut hits = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if re.is_match(line) {
            let shown: String = line.chars().take(MAX_LINE_CHARS).collect();
            let more = if line.chars().count() > MAX_LINE_CHARS { " …" } else { "" };
            hits.push(format!("{}:{}: {shown}{more}", rel.display(), n + 1));
        }
    }
    hits
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
    let candidates: Vec<PathBuf> = files(jail).into_iter().filter(|p| m.is_match(p)).collect();
    let per_file = search_files(jail, &re, &candidates, cap);
    let mut hits = Vec::new();
    for line in per_file.into_iter().flatten() {
        if hits.len() == cap {
            hits.push(format!("... [stopped at {cap} matches]"));
            break;
        }
        hits.push(line);
    }
    if hits.is_empty() {
        return Ok("(no matches)".into());
    }
    Ok(hits.join("\n"))
}
