//! The head of a `summary.json`: what a reader that folds only a log's tail starts from (the
//! fleet), read without holding the rest. The one reader of the file besides the writer's.

use crate::session::state::{StopReason, TaskState};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

/// The part of `summary.json` a fleet row starts from; everything else in it is skipped as it
/// streams past.
#[derive(Debug, Default, Deserialize)]
pub struct SummaryHead {
    #[serde(default)]
    pub started_at: Option<String>,
    #[serde(default)]
    pub last_event_at: Option<String>,
    #[serde(default)]
    pub tokens: TokensHead,
    #[serde(default)]
    pub harrow: HarrowHead,
}

#[derive(Debug, Default, Deserialize)]
pub struct TokensHead {
    #[serde(default)]
    pub total: i64,
    #[serde(default)]
    pub cost: f64,
}

#[derive(Debug, Default, Deserialize)]
pub struct HarrowHead {
    #[serde(default)]
    pub format: String,
    #[serde(default)]
    pub task_count: Option<u64>,
    #[serde(default)]
    pub tasks_done: u64,
    #[serde(default)]
    pub tasks: BTreeMap<String, TaskHead>,
    #[serde(default)]
    pub feature: Option<String>,
    #[serde(default)]
    pub phase: Option<String>,
    #[serde(default)]
    pub host: Option<String>,
    #[serde(default, deserialize_with = "stop_reason")]
    pub final_stop: Option<StopReason>,
    /// Where in the log the summary was folded to.
    #[serde(default)]
    pub log_bytes: Option<u64>,
    #[serde(default)]
    pub pull_request: Option<String>,
    #[serde(default)]
    pub unreadable_lines: UnreadableHead,
}

/// How many lines of the log the summary could not read.
#[derive(Debug, Default, Deserialize)]
pub struct UnreadableHead {
    #[serde(default)]
    pub count: u64,
}

#[derive(Debug, Default, Deserialize)]
pub struct TaskHead {
    #[serde(default)]
    pub state: TaskState,
}

fn stop_reason<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<StopReason>, D::Error> {
    Ok(Option::<String>::deserialize(d)?.map(|r| StopReason::parse(&r)))
}

impl SummaryHead {
    /// Whether the summary was written by a `harrow prep` interview.
    pub fn is_prep(&self) -> bool {
        crate::session::vocabulary::Phase::Prep.is(self.harrow.phase.as_deref())
    }

    /// Reads the head of the session's `summary.json`, if there is a readable one. One over
    /// the size limit (a planted giant, in a shared folder) is not read at all.
    pub fn read(dir: &Path) -> Option<SummaryHead> {
        let path = crate::session::dir::SessionDir::new(dir).summary();
        let file = crate::safe_io::open_regular(&path).ok()?;
        if file.metadata().ok()?.len() > crate::safe_io::SMALL_FILE {
            return None;
        }
        let limited = std::io::BufReader::new(file.take(crate::safe_io::SMALL_FILE));
        serde_json::from_reader(limited).ok()
    }
}
