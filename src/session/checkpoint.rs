//! `checkpoint.json`: the resumable state snapshot, in Tilth's keys plus harrow's.

use super::summary::Usage;
use crate::session::dir::CHECKPOINT_FILE;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The snapshot. Every field is optional on read because each Tilth era wrote fewer of them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Epoch seconds of this process's start or resume (Tilth resets it on resume).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feature_dir: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(default)]
    pub tokens_used: i64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub usage: BTreeMap<String, Usage>,
    /// `running`, `all_done` or `failed` (Tilth); harrow adds `paused`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default)]
    pub archived: bool,
    /// harrow: the plan the run reads, and anything else a newer writer added.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// What reading a checkpoint found.
#[derive(Debug, Clone, PartialEq)]
pub enum CheckpointRead {
    Missing,
    /// Present but not readable JSON: a rewrite in progress (Tilth does not write atomically)
    /// or damage. Holds the reason.
    Unreadable(String),
    Ok(Checkpoint),
}

impl CheckpointRead {
    pub fn checkpoint(&self) -> Option<&Checkpoint> {
        match self {
            CheckpointRead::Ok(c) => Some(c),
            _ => None,
        }
    }
}

/// Reads a session folder's checkpoint, retrying once when it looks mid-rewrite.
pub fn read_checkpoint(dir: &Path) -> CheckpointRead {
    let path = dir.join(CHECKPOINT_FILE);
    let mut last_error = String::new();
    for attempt in 0..2 {
        match crate::safe_io::read_capped(&path, crate::safe_io::SMALL_FILE) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return CheckpointRead::Missing,
            Err(e) => last_error = e.to_string(),
            Ok(bytes) => match serde_json::from_slice::<Checkpoint>(&bytes) {
                Ok(c) => return CheckpointRead::Ok(c),
                Err(e) => last_error = e.to_string(),
            },
        }
        if attempt == 0 {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
    CheckpointRead::Unreadable(last_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_written_checkpoint_is_stated_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_checkpoint(dir.path()), CheckpointRead::Missing);
        std::fs::write(dir.path().join(CHECKPOINT_FILE), "{\n  \"session_id\": \"x\",\n  \"sta")
            .unwrap();
        assert!(matches!(read_checkpoint(dir.path()), CheckpointRead::Unreadable(_)));
    }

    #[test]
    fn reads_the_oldest_shape() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(CHECKPOINT_FILE),
            r#"{"session_id":"a","started_at":1.5,"workspace":"/w","branch":"b","tokens_used":9}"#,
        )
        .unwrap();
        let c = read_checkpoint(dir.path());
        assert_eq!(c.checkpoint().unwrap().tokens_used, 9);
        assert_eq!(c.checkpoint().unwrap().status, None);
    }
}
