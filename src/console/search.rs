//! Searching the worker stream: rows the replay has not reached included, since where each
//! event belongs is known for the whole log.

use super::describe::row;
use super::player::Player;
use super::view::Filter;

/// The last search: what was asked and the event it landed on.
#[derive(Debug, Clone, Default)]
pub struct Search {
    pub query: String,
    pub at: Option<usize>,
}

/// The first row of the stream (as `filter` keeps it) from `start` on, or back from it,
/// that contains `query`, ignoring case.
fn find_from(
    player: &mut Player,
    filter: Filter,
    query: &str,
    start: usize,
    forward: bool,
) -> Option<usize> {
    let needle = query.to_lowercase();
    let (rows, index) = player.stream_and_index(filter);
    let mut matches =
        |pos: &usize| index.fetch(*pos).is_ok_and(|e| row(&e).to_lowercase().contains(&needle));
    if forward {
        rows[rows.partition_point(|p| *p < start)..].iter().copied().find(|p| matches(p))
    } else {
        rows[..rows.partition_point(|p| *p <= start)].iter().rev().copied().find(|p| matches(p))
    }
}

/// Finds `query` from `start`, going round the log's end once: the position, and which end
/// the search wrapped to when it did.
pub fn find(
    player: &mut Player,
    filter: Filter,
    query: &str,
    start: usize,
    forward: bool,
) -> Option<(usize, Option<&'static str>)> {
    if let Some(pos) = find_from(player, filter, query, start, forward) {
        return Some((pos, None));
    }
    let total = player.total();
    if total == 0 {
        return None;
    }
    let (from, end) = if forward { (0, "top") } else { (total - 1, "end") };
    find_from(player, filter, query, from, forward).map(|pos| (pos, Some(end)))
}

/// Where a repeated search starts: just past the last match, going round at either end.
pub fn next_start(from: Option<usize>, total: usize, forward: bool) -> usize {
    let last = total.saturating_sub(1);
    match (from, forward) {
        (Some(p), true) if p < last => p + 1,
        (Some(_) | None, true) => 0,
        (Some(0) | None, false) => last,
        (Some(p), false) => p - 1,
    }
}
