//! What harrow found when it weighed a verdict, as the log records it: each witness checked,
//! what the evidence gate made of an accept, and a best-of task's attempts side by side.

use serde::{Deserialize, Serialize};

/// One of a best-of task's attempts, as weighed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CandidateSeen {
    /// Its attempt number: its events, verdict and kept ref carry it.
    #[serde(default)]
    pub attempt: u64,
    /// The worker model it was worked by.
    #[serde(default)]
    pub model: String,
    /// What it came to, in words: `accepted`, `rejected (weak_test)`, `accepted without
    /// evidence`, `not judged: …`.
    #[serde(default)]
    pub outcome: String,
    /// Accepted with its evidence seen: it could land.
    #[serde(default)]
    pub eligible: bool,
    #[serde(default)]
    pub diff_summary: String,
    /// Lines its change adds and removes.
    #[serde(default)]
    pub changed_lines: u64,
    #[serde(default)]
    pub cost: f64,
    #[serde(default)]
    pub elapsed_ms: u64,
    /// Why it did not land (the evaluator's words when it chose among accepts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why_not: Option<String>,
    /// The attempt as judged, kept on the session's refs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_commit: Option<String>,
}

/// What the gate made of an accept's witnesses (`[gate] evidence`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceGate {
    /// Every criterion has a witness harrow saw.
    Seen,
    /// Some criterion has none: the evaluator is asked once more, with what failed.
    SentBack,
    /// Still none after that: the task waits for the operator.
    Held,
    /// None, and `evidence = "warn"`: the task lands, marked.
    Warned,
}

impl EvidenceGate {
    /// The gate a logged `evidence_gate` word names; a word this build does not know names
    /// none (every reader of the log reads it here).
    pub fn named(word: &str) -> Option<EvidenceGate> {
        serde_json::from_value(serde_json::Value::String(word.to_owned())).ok()
    }
}

/// One witness of a verdict as harrow checked it: seen, or not and why.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WitnessSeen {
    /// The criterion's number, from 1.
    #[serde(default)]
    pub criterion: u64,
    /// `validator`, `test` or `code`.
    #[serde(default)]
    pub kind: String,
    /// What was cited: the validator, the test id, `FILE:LINE`.
    #[serde(default)]
    pub cited: String,
    #[serde(default)]
    pub seen: bool,
    /// Why it was not seen, or what was seen (a test's two outcomes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}
