//! Plain-text formatting shared by the verbs that print tables.

use std::fmt::Write;

/// `148585` → `148,585`.
pub fn thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0 {
        out.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Dollars with enough precision to tell small runs apart.
pub fn dollars(cost: f64) -> String {
    if cost == 0.0 {
        "$0".into()
    } else if cost < 0.01 {
        format!("${cost:.4}")
    } else if cost < 10.0 {
        format!("${cost:.3}")
    } else {
        format!("${cost:.2}")
    }
}

/// `2026-11-22T04:28:43.123Z` → `2026-11-22 04:28:43Z`.
pub fn short_ts(ts: Option<&str>) -> String {
    let Some(ts) = ts else { return "-".into() };
    let base = ts.split('.').next().unwrap_or(ts).trim_end_matches('Z');
    format!("{}Z", base.replacen('T', " ", 1))
}

/// Left-aligned columns separated by two spaces; the last column is not padded.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut text = String::new();
        for (i, (cell, w)) in cells.zip(&widths).enumerate() {
            if i + 1 == widths.len() {
                text.push_str(cell);
            } else {
                let _ = write!(text, "{cell:<w$}  ");
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(&mut header.iter().copied());
    for row in rows {
        line(&mut row.iter().map(String::as_str));
    }
    out
}

/// A line fit for the operator's terminal: known keys scrubbed, and control characters from
/// model text or tool output (escape sequences that could move the cursor, retitle the window
/// or hide text) shown escaped instead of sent raw.
pub fn terminal_line(text: &str) -> String {
    crate::printable::line(&crate::keys::scrub(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_escaped() {
        assert_eq!(
            terminal_line("ok\x1b]0;pwned\x07 done\r\n"),
            "ok\\u{1b}]0;pwned\\u{7} done\\u{d}\\n"
        );
        assert_eq!(terminal_line("tab\tstays"), "tab\tstays");
    }

    #[test]
    fn formats() {
        assert_eq!(thousands(148_585), "148,585");
        assert_eq!(thousands(-1000), "-1,000");
        assert_eq!(thousands(12), "12");
        assert_eq!(dollars(0.043_45), "$0.043");
        assert_eq!(dollars(0.004_66), "$0.0047");
        assert_eq!(short_ts(Some("2026-11-22T04:28:43.123Z")), "2026-11-22 04:28:43Z");
        assert_eq!(table(&["A", "BB"], &[vec!["xyz".into(), "1".into()]]), "A    BB\nxyz  1\n");
    }
}
