//! `read_file`, `write_file`, `edit_file` and `list_dir`: every path through the jail.

use super::args::{Args, ToolError};
use crate::hands::confine::{Checked, Jail};
use std::fmt::Write as _;
use std::io::{Read, Write};

/// Largest file `read_file` returns whole (characters); longer files are cut with a note.
pub const MAX_READ_CHARS: usize = 50_000;
/// Largest content `write_file` accepts.
pub const MAX_WRITE_CHARS: usize = 200_000;

fn refused(e: impl std::fmt::Display) -> ToolError {
    ToolError(e.to_string())
}

/// Reads a checked path as text, refusing directories and binary files with a clear reason.
pub fn read_text(jail: &Jail, checked: &Checked) -> Result<String, ToolError> {
    if checked.abs.is_dir() {
        return Err(ToolError(format!(
            "{}: is a directory; use list_dir to see what it holds",
            checked.given
        )));
    }
    let mut file = jail.open_read(checked).map_err(refused)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(|e| ToolError(format!("{}: {e}", checked.given)))?;
    let sniff = &bytes[..bytes.len().min(8192)];
    if sniff.contains(&0) {
        return Err(ToolError(format!(
            "{}: is a binary file ({} bytes); inspect it with bash (for example `file` or `xxd | head`)",
            checked.given,
            bytes.len()
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        ToolError(format!(
            "{}: is not UTF-8 text (invalid byte at offset {}); inspect it with bash",
            checked.given,
            e.utf8_error().valid_up_to()
        ))
    })
}

pub fn read_file(jail: &Jail, args: &Args<'_>) -> Result<String, ToolError> {
    let checked = jail.check(args.string("path")?).map_err(refused)?;
    let start = args.opt_uint("start_line", 1..=u64::from(u32::MAX))?;
    let end = args.opt_uint("end_line", 1..=u64::from(u32::MAX))?;
    let text = read_text(jail, &checked)?;
    let text = match (start, end) {
        (None, None) => text,
        (s, e) => {
            let total = text.lines().count() as u64;
            let s = s.unwrap_or(1);
            let e = e.unwrap_or(total).min(total);
            if s > e {
                return Err(ToolError(format!(
                    "{}: lines {s}-{e} are empty; the file has {total} lines",
                    checked.given
                )));
            }
            let mut out: String = text
                .split_inclusive('\n')
                .skip((s - 1) as usize)
                .take((e - s + 1) as usize)
                .collect();
            if e < total || s > 1 {
                let _ = write!(out, "\n[lines {s}-{e} of {total}]");
            }
            out
        }
    };
    Ok(cap_chars(text, MAX_READ_CHARS))
}

/// Cuts text to `cap` characters, saying how long it was.
pub fn cap_chars(text: String, cap: usize) -> String {
    let total = text.chars().count();
    if total <= cap {
        return text;
    }
    let cut: String = text.chars().take(cap).collect();
    format!("{cut}\n[truncated, {total} chars total]")
}

pub fn write_file(jail: &Jail, args: &Args<'_>) -> Result<String, ToolError> {
    let path = args.string("path")?;
    let content = args.string("content")?;
    let chars = content.chars().count();
    if chars > MAX_WRITE_CHARS {
        return Err(ToolError(format!(
            "{path}: content is {chars} chars; the limit is {MAX_WRITE_CHARS}. Write the file in parts with edit_file or bash"
        )));
    }
    let checked = jail.check(path).map_err(refused)?;
    if checked.abs.is_dir() {
        return Err(ToolError(format!("{path}: is a directory")));
    }
    write_checked(jail, &checked, content)?;
    Ok(format!("wrote {} bytes to {path}", content.len()))
}

fn write_checked(jail: &Jail, checked: &Checked, content: &str) -> Result<(), ToolError> {
    let mut file = jail.open_write(checked).map_err(refused)?;
    file.write_all(content.as_bytes()).map_err(|e| ToolError(format!("{}: {e}", checked.given)))
}

pub fn edit_file(jail: &Jail, args: &Args<'_>) -> Result<String, ToolError> {
    let path = args.string("path")?;
    let old = args.string("old_string")?;
    let new = args.string("new_string")?;
    if old.is_empty() {
        return Err(ToolError(format!(
            "{path}: old_string is empty; give the exact text to replace"
        )));
    }
    if old == new {
        return Err(ToolError(format!(
            "{path}: old_string and new_string are identical; nothing would change"
        )));
    }
    let checked = jail.check(path).map_err(refused)?;
    let text = read_text(jail, &checked)?;
    let starts: Vec<usize> = text.match_indices(old).map(|(i, _)| i).collect();
    match starts.as_slice() {
        [] => Err(ToolError(format!(
            "{path}: old_string was not found; read the file and copy the text exactly, whitespace included"
        ))),
        [at] => {
            let mut edited = String::with_capacity(text.len() + new.len());
            edited.push_str(&text[..*at]);
            edited.push_str(new);
            edited.push_str(&text[at + old.len()..]);
            write_checked(jail, &checked, &edited)?;
            let line = text[..*at].matches('\n').count() + 1;
            Ok(format!("edited {path} at line {line}"))
        }
        many => {
            let lines: Vec<String> = many
                .iter()
                .take(10)
                .map(|at| (text[..*at].matches('\n').count() + 1).to_string())
                .collect();
            Err(ToolError(format!(
                "{path}: old_string occurs {} times (lines {}); include more surrounding text so it matches exactly once",
                many.len(),
                lines.join(", ")
            )))
        }
    }
}

pub fn list_dir(jail: &Jail, args: &Args<'_>) -> Result<String, ToolError> {
    let path = args.opt_string("path")?.unwrap_or(".");
    let checked = jail.check(path).map_err(refused)?;
    let real = checked.abs.canonicalize().map_err(|e| ToolError(format!("{path}: {e}")))?;
    if !jail.contains(&real) {
        return Err(refused(crate::hands::confine::Refusal::Escapes(path.to_owned())));
    }
    if !real.is_dir() {
        return Err(ToolError(format!("{path}: is not a directory; use read_file")));
    }
    let mut rows = Vec::new();
    for entry in std::fs::read_dir(&real).map_err(|e| ToolError(format!("{path}: {e}")))? {
        let entry = entry.map_err(|e| ToolError(format!("{path}: {e}")))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == ".git" {
            continue;
        }
        let meta = entry.path().symlink_metadata();
        rows.push(match meta {
            Ok(m) if m.file_type().is_symlink() => format!("{name}@"),
            Ok(m) if m.is_dir() => format!("{name}/"),
            Ok(m) => format!("{name}  ({} bytes)", m.len()),
            Err(_) => name,
        });
    }
    rows.sort();
    if rows.is_empty() {
        return Ok("(empty directory)".into());
    }
    Ok(rows.join("\n"))
}
