//! The pull request's title and description: the plan's feature, and the session's Markdown
//! export (the plan, each task's verdicts with categories, the operator's decisions, time and
//! cost), cut to the forge's limit with a note that says where the whole record is.

use super::{ShipError, Shipment};
use crate::export::{Format, render};

/// The title: the feature the plan is about, and `(partial)` when some tasks did not finish.
pub fn title(ship: &Shipment) -> String {
    let feature = (ship.title.as_deref())
        .or(ship.feature.as_deref())
        .map(|f| f.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|f| !f.is_empty())
        .unwrap_or_else(|| format!("harrow session {}", ship.id));
    let feature: String = feature.chars().take(200).collect();
    if ship.unfinished.is_empty() { feature } else { format!("{feature} (partial)") }
}

/// The whole record, as `harrow export --format md` writes it.
pub fn record(ship: &Shipment) -> Result<String, ShipError> {
    render(&ship.dir, &ship.id, Format::Md)
        .map_err(|e| ShipError::new(format!("cannot read session {}'s log: {e}", ship.id)))
}

/// A description that fits a forge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fitted {
    pub text: String,
    /// Part of the record was left out.
    pub cut: bool,
}

/// `record` as it is when it fits in `limit` characters; otherwise cut at the last line that
/// fits with `note` after it.
pub fn fit(record: &str, limit: usize, note: &str) -> Fitted {
    if record.chars().count() <= limit {
        return Fitted { text: record.to_owned(), cut: false };
    }
    let room = limit.saturating_sub(note.chars().count() + 8);
    let end = record.char_indices().nth(room).map_or(record.len(), |(i, _)| i);
    let kept = &record[..end];
    let kept = kept.rfind('\n').map_or(kept, |i| &kept[..i]);
    Fitted { text: format!("{kept}\n\n---\n{note}\n"), cut: true }
}

/// The note under a cut record.
pub fn cut_note(ship: &Shipment, limit: usize, forge: &str, full: Option<&str>) -> String {
    let whole = match full {
        Some(url) => {
            format!("the whole record is at {url}, and `harrow export {}` writes it again", ship.id)
        }
        None => format!("`harrow export {}` writes the whole record", ship.id),
    };
    format!("_This record was cut to fit {forge}'s limit of {limit} characters; {whole}._")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt::Write as _;

    #[test]
    fn a_record_over_the_limit_is_cut_at_a_line_with_the_note_and_fits() {
        let record = (0..5000).fold(String::new(), |mut r, n| {
            let _ = writeln!(r, "| T-{n:04} | é done |");
            r
        });
        let fitted = fit(&record, 10_000, "_cut; see X._");
        assert!(fitted.cut);
        assert!(fitted.text.chars().count() <= 10_000, "{}", fitted.text.chars().count());
        assert!(fitted.text.ends_with("_cut; see X._\n"));
        let before_note = fitted.text.split("\n\n---\n").next().unwrap();
        assert!(before_note.ends_with("done |"), "cut inside a line: {before_note:?}");
        let short = fit("small\n", 10_000, "n");
        assert_eq!(short, Fitted { text: "small\n".into(), cut: false });
    }
}
