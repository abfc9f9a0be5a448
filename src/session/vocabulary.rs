//! The rest of the log's words a reader acts on — whom a call was for, how it went, what a
//! checkpoint says — each a type, so that every reader matches on the type and a word spelt
//! wrong is a compile error, not a branch never taken. Unknown words (another writer's, a later
//! harrow's) are kept as written.

use super::state::{StopReason, named_enum};

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
    /// The tools harrow gives its models: the hands' (the worker's), and each role's own.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub enum ToolName {
        Bash => "bash",
        ReadFile => "read_file",
        WriteFile => "write_file",
        EditFile => "edit_file",
        Glob => "glob",
        Grep => "grep",
        ListDir => "list_dir",
        /// The worker's: its case that the task is done.
        SubmitCase => "submit_case",
        /// The evaluator's: its verdict.
        SubmitVerdict => "submit_verdict",
        /// The evaluator's, choosing among best-of candidates.
        SubmitChoice => "submit_choice",
        /// The prep interview's: the plan it drafted.
        WritePlan => "write_plan",
    }
}

named_enum! {
    /// What a session (`session_start`'s `phase`) or a Tilth era's event was for, beside a run.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub enum Phase {
        /// A `harrow prep` interview's session.
        Prep => "prep",
        /// Tilth's (eras B and C): the step that wrote the plan and the seed tests.
        PrepFeature => "prep-feature",
    }
}

/// How a task ended, as `progress.txt`'s outcome column says it (Tilth's words: `done`,
/// `failed:<reason>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Accepted,
    AcceptedBelowBar,
    /// Accepted with no evaluator (`--no-eval`).
    Unreviewed,
    Skipped,
    /// Failed, and why (a stop reason).
    Failed(StopReason),
    /// A word this build does not know, kept as written.
    Other(String),
}

impl Outcome {
    /// The column as written.
    pub fn written(&self) -> String {
        match self {
            Outcome::Accepted => "done".into(),
            Outcome::AcceptedBelowBar => "done (below the bar)".into(),
            Outcome::Unreviewed => "done (unreviewed: --no-eval)".into(),
            Outcome::Skipped => "skipped".into(),
            Outcome::Failed(reason) => format!("failed:{reason}"),
            Outcome::Other(word) => word.clone(),
        }
    }

    /// Reads the column: harrow's words, Tilth's (a `done…` or `failed…` it wrote otherwise
    /// reads as accepted or failed), anything else kept.
    pub fn read(column: &str) -> Outcome {
        let known =
            [Outcome::Accepted, Outcome::AcceptedBelowBar, Outcome::Unreviewed, Outcome::Skipped];
        if let Some(o) = known.into_iter().find(|o| o.written() == column) {
            return o;
        }
        if let Some(reason) = column.strip_prefix("failed:") {
            return Outcome::Failed(StopReason::parse(reason));
        }
        if column.starts_with("failed") {
            return Outcome::Failed(StopReason::Other(column.to_owned()));
        }
        if column.starts_with("done") {
            return Outcome::Accepted;
        }
        Outcome::Other(column.to_owned())
    }
}

named_enum! {
    /// What a `feedback_sent` carried to the worker.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub enum FeedbackKind {
        /// The evaluator's verdict (and the validators' report with it).
        Verdict => "verdict",
        /// Its accepted work did not merge onto the session branch: redo it on top.
        Merge => "merge",
    }
}

named_enum! {
    /// What harrow did about a loop it saw (`loop_detected`'s `action`).
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub enum LoopAction {
        /// The worker was told, with the call's result.
        Nudged => "nudged",
        /// The task was held for a person.
        Held => "held",
    }
}

/// `loop_detected`'s `tool` when the loop is the worktree's files coming back to an earlier
/// state rather than one call repeated.
pub const WORKTREE_LOOP: &str = "the worktree";

named_enum! {
    /// The hook a `hook_run` reports.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub enum HookName {
        PreTool => "pre_tool",
        PostEdit => "post_edit",
        GitGuard => "git_guard",
        /// An ACP agent asked for a permission, and harrow answered it.
        Permission => "permission",
    }
}

named_enum! {
    /// Why a role's calls went to another model (`model_switch`'s `kind`).
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub enum SwitchKind {
        /// Its endpoint failed, or failed lately.
        Fallback => "fallback",
        /// A stronger worker model after rejects.
        Escalation => "escalation",
    }
}

named_enum! {
    /// Where an operator's command came from (its `source`).
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub enum CommandSource {
        /// The console watching the run.
        Console => "console",
        /// `harrow control`.
        Cli => "cli",
        /// The fleet's session list.
        Fleet => "fleet",
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
        for tool in ToolName::ALL {
            assert!(tool.is(Some(tool.as_str())));
        }
        for phase in Phase::ALL {
            assert!(phase.is(Some(phase.as_str())));
        }
        let outcomes = [
            Outcome::Accepted,
            Outcome::AcceptedBelowBar,
            Outcome::Unreviewed,
            Outcome::Skipped,
            Outcome::Failed(StopReason::OperatorFail),
        ];
        for outcome in outcomes {
            assert_eq!(Outcome::read(&outcome.written()), outcome);
        }
        assert_eq!(Outcome::read("done (somehow)"), Outcome::Accepted, "Tilth's other done");
        assert!(matches!(Outcome::read("failed"), Outcome::Failed(_)));
        assert_eq!(Outcome::read("later"), Outcome::Other("later".into()));
        for kind in FeedbackKind::ALL {
            assert!(kind.is(Some(kind.as_str())));
        }
        for action in LoopAction::ALL {
            assert!(action.is(Some(action.as_str())));
        }
        for hook in HookName::ALL {
            assert!(hook.is(Some(hook.as_str())));
        }
        for kind in SwitchKind::ALL {
            assert!(kind.is(Some(kind.as_str())) && !kind.is(Some("other")));
        }
        for status in CheckpointStatus::ALL {
            assert_eq!(CheckpointStatus::parse(status.as_str()), status);
        }
        assert_eq!(CallRole::parse("judge"), CallRole::Other("judge".into()));
        assert!(Health::failed(Some("a_new_word")) && !Health::failed(Some("ok")));
        assert!(!Health::failed(None) && CallRole::Worker.is(Some("worker")));
    }
}

named_enum! {
    /// Who wrote a session's log, as its summary says (`format`): harrow numbers its lines
    /// (`seq`), Tilth does not.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub enum WrittenBy {
        Harrow => "harrow",
        Tilth => "tilth",
    }
}

named_enum! {
    /// Why a worker's conversation was compacted (`context_compacted`'s `trigger`): it would
    /// pass its share of the window, or the server refused it as too long.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    pub enum CompactTrigger {
        Threshold => "threshold",
        Server => "server",
    }
}
