//! What `session_start` records of how a run began — its limits and its plan's tasks — for
//! `resume` to go on as the run began, on this machine or another.

use crate::harness::run::RunOptions;

/// The limits a run was started with, as `session_start` records them.
pub(super) fn limits(opts: &RunOptions) -> serde_json::Value {
    serde_json::json!({
        "max_iterations_per_task": opts.max_iterations,
        "max_evaluator_calls_per_task": opts.max_attempts,
        "on_cap": opts.on_cap,
        "score_threshold": opts.score_threshold,
        "evidence": opts.evidence,
        "witness_test_secs": opts.witness_test_secs,
        "max_wall_clock_minutes": opts.caps.wall_clock.map(|d| d.as_secs_f64() / 60.0),
        "max_tokens": opts.caps.tokens,
        "max_token_dollar_spend": opts.caps.dollars,
        "lanes": opts.lanes,
        "agent": opts.agent.as_ref().map(crate::agent::AgentSpec::recorded),
    })
}

/// The plan's tasks as `session_start` records them: id, title, what each depends on, and
/// how many attempts a best-of task works at once (`--best-of` included, for a resume).
pub(super) fn plan_tasks(plan: &crate::harness::plan::Plan) -> serde_json::Value {
    (plan.tasks.iter())
        .map(|t| {
            let mut entry = serde_json::json!({"id": t.id, "title": t.title});
            if let Some(deps) = &t.depends_on {
                entry["depends_on"] = serde_json::json!(deps);
            }
            if let Some(n) = t.best_of {
                entry["best_of"] = serde_json::json!(n);
            }
            entry
        })
        .collect()
}
