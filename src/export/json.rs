//! The export as one JSON document, written a piece at a time: the head's fields, each task
//! as an element of `tasks`, then `changes`. The pieces join into exactly what serialising the
//! whole document with two-space indentation gives.

use super::{ExportHead, FileChange, TaskExport};
use crate::printable::json_pretty;
use std::io;

/// Every line after the first, indented by `by` spaces: a pretty-printed value nested deeper.
fn nested(text: &str, by: usize) -> String {
    let pad = " ".repeat(by);
    text.lines().enumerate().fold(String::with_capacity(text.len()), |mut out, (i, line)| {
        if i > 0 {
            out.push('\n');
            out.push_str(&pad);
        }
        out.push_str(line);
        out
    })
}

/// The document's opening brace and the head's fields, up to the `tasks` array's bracket.
pub fn head(e: &ExportHead) -> io::Result<String> {
    let fields = json_pretty(e).map_err(io::Error::other)?;
    // `{` … `}`: the fields without the closing brace, then the tasks.
    let open = fields.trim_end().strip_suffix('}').unwrap_or(&fields).trim_end();
    Ok(format!("{open},\n  \"tasks\": ["))
}

/// One task as an element of `tasks`.
pub fn task(t: &TaskExport, first: bool) -> io::Result<String> {
    let value = json_pretty(t).map_err(io::Error::other)?;
    let sep = if first { "" } else { "," };
    Ok(format!("{sep}\n    {}", nested(&value, 4)))
}

/// The `tasks` array's end, `changes` and the document's closing brace.
pub fn tail(changes: Option<&[FileChange]>, any_tasks: bool) -> io::Result<String> {
    let changes = json_pretty(&changes).map_err(io::Error::other)?;
    let close = if any_tasks { "\n  ]" } else { "]" };
    Ok(format!("{close},\n  \"changes\": {}\n}}\n", nested(&changes, 2)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize)]
    struct Whole<'a> {
        #[serde(flatten)]
        head: &'a ExportHead,
        tasks: &'a [TaskExport],
        changes: Option<&'a [FileChange]>,
    }

    #[test]
    fn the_pieces_join_into_the_whole_document() {
        let start =
            ExportHead { session: "s".into(), feature: Some("f".into()), ..Default::default() };
        let task = |id: &str| TaskExport {
            id: id.into(),
            attempts: vec![super::super::Attempt { number: 1, ..Default::default() }],
            ..Default::default()
        };
        let changes = [FileChange { path: "a.rs".into(), added: 1, removed: 2 }];
        for (tasks, changes) in [
            (vec![task("T-1"), task("T-2")], Some(&changes[..])),
            (vec![], None),
            (vec![task("T-1")], Some(&[][..])),
        ] {
            let mut pieces = head(&start).unwrap();
            for (n, t) in tasks.iter().enumerate() {
                pieces += &task_piece(t, n == 0);
            }
            pieces += &tail(changes, !tasks.is_empty()).unwrap();
            let whole =
                json_pretty(&Whole { head: &start, tasks: &tasks, changes }).unwrap() + "\n";
            assert_eq!(pieces, whole);
        }
    }

    fn task_piece(t: &TaskExport, first: bool) -> String {
        task(t, first).unwrap()
    }
}
