//! Keeping a worker's conversation inside its model's window. Before each request the
//! conversation's tokens are estimated — characters per token as the server last counted them,
//! in its `usage` or in a "too long" answer — and past `[models] compact_at` of the window (or
//! past the room the reply needs) it is rebuilt from what harrow records to fit three quarters
//! of that (see [`crate::harness::compact`]), logged as `context_compacted`. The same happens
//! once when the server answers that a request is too long. One tool output takes at most a
//! fifth of a known window. A conversation that does not fit even rebuilt — the task's own
//! prompt too large — holds the task for a person, never crashes the run.

use super::Desk;
use super::{Lane, Result, Task, TaskEnd, scope};
use crate::brain::client::Role;
use crate::harness::compact::{self, CHARS_PER_TOKEN, Record, compact};
use crate::session::event::ContextCompacted;
use crate::session::vocabulary::CompactTrigger;
use serde_json::Value;

/// The share of the threshold a rebuilt conversation aims at: room for a few turns before
/// the next rebuild.
const REBUILD_SHARE: f64 = 0.75;

/// One tool output may take a fifth of the window.
const TOOL_SHARE_DIVISOR: f64 = 5.0;
/// The least a tool output is cut to, however small the window: less says too little.
const MIN_TOOL_OUTPUT: usize = 1_000;

/// What a task's conversation knows of its window.
#[derive(Debug)]
pub(super) struct WindowKeeper {
    /// Characters per token, as the server's `usage` last counted the conversation.
    chars_per_token: f64,
    /// The server said a request was too long and the conversation was rebuilt for it.
    pub compacted_for_server: bool,
    /// The window the server named when it refused a request: the one to fit from then on,
    /// whatever was configured.
    pub named: Option<u64>,
}

impl Default for WindowKeeper {
    fn default() -> Self {
        WindowKeeper { chars_per_token: CHARS_PER_TOKEN, compacted_for_server: false, named: None }
    }
}

impl WindowKeeper {
    /// Learns characters per token from a reply: the request's characters over the prompt
    /// tokens the server counted (ignored when implausible, as a server that reports none).
    pub fn calibrate(&mut self, messages: &[Value], prompt_tokens: u64) {
        if prompt_tokens < 64 {
            return;
        }
        let ratio = compact::chars(messages) as f64 / prompt_tokens as f64;
        if (1.0..=8.0).contains(&ratio) {
            self.chars_per_token = ratio;
        }
    }
}

impl Lane {
    /// The worker's window as this task knows it, 0 when unknown: the one its server named,
    /// else the one a compaction of this run fitted to last (read from the log, so later
    /// tasks fit to it before they meet a refusal themselves), else the configured or probed.
    pub(super) fn worker_window(&self, keeper: &WindowKeeper) -> u64 {
        let learned = || self.writer.learned_window();
        keeper.named.or_else(learned).or(self.shared.opts.worker_window).unwrap_or(0)
    }

    /// The most of the window one tool output may take, in bytes, when the window is known:
    /// a fifth of it, so that a read or a build log leaves room for the task and the turns
    /// around it (and never more than a read returns anyway).
    pub(super) fn tool_output_cap(&self, keeper: &WindowKeeper) -> Option<usize> {
        let window = self.worker_window(keeper);
        (window > 0).then(|| {
            let share = (window as f64 * keeper.chars_per_token / TOOL_SHARE_DIVISOR) as usize;
            share.clamp(MIN_TOOL_OUTPUT, crate::hands::tools::files::MAX_READ_CHARS)
        })
    }

    /// Rebuilds `messages` when the next request would pass the threshold of the worker's
    /// window (`trigger` `threshold`), or because the server refused it as too long
    /// (`server`, whatever the estimate says). The task's end when even the rebuilt
    /// conversation does not fit: held for a person.
    pub(super) fn keep_in_window(
        &mut self,
        task: &Task,
        sc: (u64, u64),
        messages: &mut Vec<Value>,
        trigger: &CompactTrigger,
        keeper: &WindowKeeper,
    ) -> Result<Option<TaskEnd>> {
        let (iter, attempt) = sc;
        let window = self.worker_window(keeper);
        self.brain.learn_window(Role::Worker, window);
        let before = compact::tokens(messages, keeper.chars_per_token);
        // A request may fill `compact_at` of the window, and never the room the reply needs.
        let reply = self.brain.reply_cap(Role::Worker).unwrap_or(0).min(window / 2);
        let threshold = ((window as f64 * self.shared.opts.compact_at) as u64).min(window - reply);
        if *trigger == CompactTrigger::Threshold && (window == 0 || before <= threshold) {
            return Ok(None);
        }
        // The rebuild aims below the threshold, so that the next turns have room before the
        // next one; in characters, as the conversation is measured.
        let budget = (window > 0)
            .then_some((threshold as f64 * REBUILD_SHARE * keeper.chars_per_token) as usize);
        // The diff may take a quarter of the window, and never more than 6,000 characters.
        let diff_max = match window {
            0 => 6_000,
            w => ((w as f64 * keeper.chars_per_token / 4.0) as usize).min(6_000),
        };
        let record = self.compaction_record(task, diff_max);
        let Some(rebuilt) = compact(messages, &record, budget) else {
            if window > 0 && before > window {
                return self.too_long(task, attempt, messages, keeper, window).map(Some);
            }
            return Ok(None);
        };
        let after = compact::tokens(&rebuilt.messages, keeper.chars_per_token);
        self.emit(&ContextCompacted {
            scope: scope(&task.id, iter, attempt),
            trigger: Some(trigger.as_str().to_owned()),
            tokens_before: Some(before),
            tokens_after: Some(after),
            window: Some(window),
            dropped: Some(rebuilt.dropped as u64),
            kept: Some(rebuilt.kept),
            summary: Some(rebuilt.summary),
            cut: Some(rebuilt.cut).filter(|c| !c.is_empty()),
            ..ContextCompacted::default()
        })?;
        *messages = rebuilt.messages;
        if window > 0 && after > window {
            return self.too_long(task, attempt, messages, keeper, window).map(Some);
        }
        Ok(None)
    }

    /// What a rebuilt conversation says beside the messages: the diff as it stands (shown in
    /// at most `diff_max` characters, files named) and the verdicts that still stand.
    fn compaction_record(&self, task: &Task, diff_max: usize) -> Record {
        let diff = (self.task_base(&task.id).ok())
            .and_then(|base| self.task_diff(&base).ok())
            .unwrap_or_default();
        let verdicts = (self.ledger_standing(&task.id).iter())
            .map(|e| format!("{}. {}", e.attempt, e.verdict.summary()))
            .collect();
        Record { diff, diff_max, verdicts }
    }

    /// Holds a task whose conversation does not fit its model's window even rebuilt: what
    /// is left is the task's own prompt and what harrow keeps of the work, so the fix is a
    /// larger window or a smaller task.
    fn too_long(
        &mut self,
        task: &Task,
        attempt: u64,
        messages: &[Value],
        keeper: &WindowKeeper,
        window: u64,
    ) -> Result<TaskEnd> {
        let tokens = compact::tokens(messages, keeper.chars_per_token);
        let own = compact::tokens(&messages[..2.min(messages.len())], keeper.chars_per_token);
        let why = format!(
            "the task's conversation does not fit the worker's context window even rebuilt (~{tokens} tokens of {window}; the task's prompt alone is ~{own}): give the model a larger window (llama.cpp: -c, Ollama: num_ctx, vLLM: --max-model-len), or split the task"
        );
        self.hold(&task.id, &why, attempt)
    }
}
