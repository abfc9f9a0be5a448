//! Searching the worker stream: rows the replay has not reached included, since where each
//! event belongs is known for the whole log.

use super::describe::row;
use super::player::Player;
use super::view::Filter;

/// The last search: what was asked, the event it landed on, and the rows that hold it.
#[derive(Debug, Clone, Default)]
pub struct Search {
    pub query: String,
    pub at: Option<usize>,
    /// The matching rows counted for (query, filter, rows in the stream then), in order.
    hits: Option<Hits>,
}

/// Which rows hold a query, as counted once.
#[derive(Debug, Clone)]
struct Hits {
    key: (String, Filter, usize),
    positions: Vec<usize>,
    /// Whether every row was looked at (a huge stream is counted up to [`COUNT_ROWS`]).
    whole: bool,
}

/// The most rows a search counts its matches over: a count must not read a huge log whole.
const COUNT_ROWS: usize = 20_000;

impl Search {
    /// The rows holding the query in the whole stream (counted up to [`COUNT_ROWS`] rows), for
    /// a stream that shows only them; `None` without a query.
    pub fn matches(&mut self, player: &mut Player, filter: Filter) -> Option<Vec<usize>> {
        if self.query.is_empty() {
            return None;
        }
        self.count(player, filter);
        self.hits.as_ref().map(|h| h.positions.clone())
    }

    /// Counts the rows holding the query, once per query and filter: rows appended since the
    /// last count are the only ones read again (a live run's stream grows on every event).
    /// Whether the count changed.
    pub fn count(&mut self, player: &mut Player, filter: Filter) -> bool {
        let needle = self.query.to_lowercase();
        let (rows, index) = player.stream_and_index(filter);
        let key = (needle.clone(), filter, rows.len());
        let mut matches =
            |p: &usize| index.fetch(*p).is_ok_and(|e| row(&e).to_lowercase().contains(&needle));
        match &mut self.hits {
            Some(h) if h.key == key => false,
            Some(h) if h.key.0 == key.0 && h.key.1 == filter && h.whole && h.key.2 < rows.len() => {
                let room = COUNT_ROWS.saturating_sub(h.key.2);
                h.positions
                    .extend(rows[h.key.2..].iter().take(room).copied().filter(|p| matches(p)));
                h.whole = rows.len() <= COUNT_ROWS;
                h.key = key;
                true
            }
            _ => {
                let positions = rows.iter().take(COUNT_ROWS).copied().filter(matches).collect();
                self.hits = Some(Hits { key, positions, whole: rows.len() <= COUNT_ROWS });
                true
            }
        }
    }

    /// Where the match at `pos` stands among all: `3/7`, or `3/120+` when the stream was too
    /// long to count whole. Counted once per query, filter and stream length.
    pub fn rank(&mut self, player: &mut Player, filter: Filter, pos: usize) -> Option<String> {
        self.count(player, filter);
        let hits = self.hits.as_ref()?;
        let k = hits.positions.iter().position(|p| *p == pos)? + 1;
        let more = if hits.whole { "" } else { "+" };
        Some(format!("{k}/{}{more}", hits.positions.len()))
    }
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
