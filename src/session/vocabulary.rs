//! The rest of the log's words a reader acts on — whom a call was for, how it went, what a
//! checkpoint says — each a type, so that every reader matches on the type and a word spelt
//! wrong is a compile error, not a branch never taken. Unknown words (another writer's, a later
//! harrow's) are kept as written.

use super::state::named_enum;

named_enum! {
    /// Whom a model call, a prompt or a model switch was for (`role`, or a prompt's `phase`).
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub enum CallRole {
        Worker => "worker",
        Evaluator => "evaluator",
        Learnings => "learnings",
        Prep => "prep",
    }
}

impl CallRole {
    /// Reads a written role; unknown names are kept.
    pub fn parse(name: &str) -> CallRole {
        CallRole::known(name).unwrap_or_else(|| CallRole::Other(name.to_owned()))
    }

    /// Whether a written role (absent: not said) is this one.
    pub fn is(&self, written: Option<&str>) -> bool {
        written.is_some_and(|w| CallRole::parse(w) == *self)
    }
}

named_enum! {
    /// How a model call's try went, as Tilth's rule names it (what failed is its
    /// `error_class`).
    #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
    pub enum Health {
        #[default]
        Ok => "ok",
        /// A reply with no text, no reasoning and no tool call.
        Empty => "empty",
        /// An error object, `finish_reason: error`, no choices, or a request that failed.
        ProviderError => "provider_error",
    }
}

impl Health {
    /// Reads a written health; unknown classes are kept.
    pub fn parse(name: &str) -> Health {
        Health::known(name).unwrap_or_else(|| Health::Other(name.to_owned()))
    }

    /// Whether a written health says the call failed (absent: not said, so not failed).
    pub fn failed(written: Option<&str>) -> bool {
        written.is_some_and(|w| Health::parse(w) != Health::Ok)
    }
}

named_enum! {
    /// What a run's checkpoint says it is doing.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub enum CheckpointStatus {
        Running => "running",
        /// Paused between tasks, or stopped in a way a resume goes on from.
        Paused => "paused",
        /// A task waits for a person's decision.
        NeedsOperator => "needs_operator",
        AllDone => "all_done",
        Failed => "failed",
    }
}

impl CheckpointStatus {
    /// Reads a written status; unknown ones (Tilth's stop reasons) are kept.
    pub fn parse(name: &str) -> CheckpointStatus {
        CheckpointStatus::known(name).unwrap_or_else(|| CheckpointStatus::Other(name.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_reads_back_as_itself_and_unknown_ones_are_kept() {
        for role in CallRole::ALL {
            assert_eq!(CallRole::parse(role.as_str()), role);
        }
        for health in Health::ALL {
            assert_eq!(Health::parse(health.as_str()), health);
        }
        for status in CheckpointStatus::ALL {
            assert_eq!(CheckpointStatus::parse(status.as_str()), status);
        }
        assert_eq!(CallRole::parse("judge"), CallRole::Other("judge".into()));
        assert!(Health::failed(Some("a_new_word")) && !Health::failed(Some("ok")));
        assert!(!Health::failed(None) && CallRole::Worker.is(Some("worker")));
    }
}
