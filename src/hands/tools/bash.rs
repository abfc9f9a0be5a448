//! `bash`: a shell command in the worktree, in its own process group, with a timeout, an
//! output cap, no secrets in its environment, and the sandbox when there is one.

use super::args::{Args, ToolError};
use crate::hands::Hands;
use std::fmt::Write as _;
use std::time::Duration;

/// Output the worker sees from one command, in characters.
pub const MAX_OUTPUT_CHARS: usize = 8_000;
/// The longest timeout a call may ask for; the configured bash timeout caps it further.
pub const MAX_TIMEOUT_SECS: u64 = 1_800;

pub fn bash(hands: &Hands, args: &Args<'_>) -> Result<String, ToolError> {
    let command = args.string("command")?;
    if command.trim().is_empty() {
        return Err(ToolError::new("bash: command is empty"));
    }
    let timeout = args
        .opt_uint("timeout_seconds", 1..=MAX_TIMEOUT_SECS)?
        .map_or(hands.config.bash_timeout, Duration::from_secs)
        .min(hands.config.bash_timeout);
    let outcome = hands
        .run_command(command, timeout, MAX_OUTPUT_CHARS * 4, Some(&hands.cancel))
        .map_err(|e| ToolError(format!("bash: could not start the shell: {e}")))?;
    let mut text = super::files::cap_chars(outcome.output.clone(), MAX_OUTPUT_CHARS);
    if outcome.output_len > outcome.output.len() && !text.contains("[truncated,") {
        let _ = write!(text, "\n[truncated, {} chars total]", outcome.output_len);
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    if outcome.cancelled {
        text.push_str(
            "[stopped by the operator; the command and everything it started were killed]",
        );
        return Err(ToolError(text));
    }
    if outcome.timed_out {
        let _ = write!(
            text,
            "[timed out after {} s; the command and everything it started were killed]",
            timeout.as_secs()
        );
        return Err(ToolError(text));
    }
    match outcome.exit_code {
        Some(code) => {
            let _ = write!(text, "[exit {code}]");
        }
        None => text.push_str("[killed by a signal]"),
    }
    Ok(text)
}
