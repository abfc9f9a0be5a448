//! A tool's output shortened to fit a model's window: its head (and tail) kept at character
//! boundaries, with a marker between them saying how much went and how to get it back. Used
//! where the output is made, when the window is small, and again when a conversation is
//! rebuilt to fit.

/// `text` with only its first `head` and last `tail` bytes (cut back to whole characters),
/// and between them the line `marker` makes of the number of characters left out.
pub fn shortened(
    text: &str,
    head: usize,
    tail: usize,
    marker: impl FnOnce(usize) -> String,
) -> String {
    let start = floor_boundary(text, head);
    let end = ceil_boundary(text, text.len().saturating_sub(tail).max(start));
    let gone = text[start..end].chars().count();
    format!("{}\n{}\n{}", &text[..start], marker(gone), &text[end..])
}

/// The largest character boundary at or before `at`.
fn floor_boundary(text: &str, at: usize) -> usize {
    (0..=at.min(text.len())).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0)
}

/// The smallest character boundary at or after `at`.
fn ceil_boundary(text: &str, at: usize) -> usize {
    (at.min(text.len())..=text.len()).find(|i| text.is_char_boundary(*i)).unwrap_or(text.len())
}

/// A tool's output cut to `cap` bytes for a window too small to take it whole: a file read
/// keeps its top and says which lines it shows, anything else keeps its start and (larger)
/// its end, where a command says how it went.
pub fn to_window(tool: &str, output: String, cap: usize) -> String {
    if output.len() <= cap {
        return output;
    }
    if crate::session::vocabulary::ToolName::ReadFile.is(Some(tool)) {
        let start = floor_boundary(&output, cap);
        let shown = output[..start].lines().count();
        let total = output.lines().count();
        return shortened(&output, cap, 0, |gone| {
            format!(
                "[… {gone} characters cut to fit the model's context window: lines 1-{shown} of {total} are shown; read the rest with read_file and start_line/end_line]"
            )
        });
    }
    shortened(&output, cap / 3, cap - cap / 3, |gone| {
        format!(
            "[… {gone} characters of this output cut to fit the model's context window: run a narrower command (grep, head, tail, sed -n) to see them]"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_keeps_whole_characters_and_says_how_much_went() {
        let text = "é".repeat(1_000);
        let cut = shortened(&text, 101, 51, |gone| format!("[{gone} went]"));
        assert_eq!(cut, format!("{}\n[925 went]\n{}", "é".repeat(50), "é".repeat(25)));
    }

    #[test]
    fn a_read_keeps_its_top_and_names_its_lines_and_a_command_keeps_its_end() {
        let file = (1..=500).fold(String::new(), |file, n| file + &format!("line {n}\n"));
        let read = to_window("read_file", file.clone(), 1_000);
        assert!(read.starts_with("line 1\n") && !read.contains("line 500"), "{read}");
        assert!(read.contains("lines 1-") && read.contains("of 500 are shown"), "{read}");
        let ran = to_window("bash", file.clone(), 1_000);
        assert!(ran.starts_with("line 1\n") && ran.ends_with("line 500\n"), "{ran}");
        assert!(ran.contains("run a narrower command"), "{ran}");
        assert_eq!(to_window("bash", "short".into(), 1_000), "short");
    }
}
