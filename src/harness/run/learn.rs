//! The optional learnings step after an accepted task.

use super::Desk;
use super::{
    CallTag, Lane, ProposedLearnings, Result, Role, Task, json, learnings, memory, record, scope,
};
use std::fmt::Write as _;

impl Lane {
    /// The learnings step for an accepted task. Never stops the run.
    pub(super) async fn propose_learning(&mut self, task: &Task) -> Result<()> {
        let ledger = record::read_ledger(&self.shared.dir, &task.id);
        let project = memory::project_context(&self.hands.jail, &self.shared.opts.context_files);
        let mut prompt = format!("# Task {} — {}\n\n", task.id, task.title);
        for c in &task.criteria {
            let _ = writeln!(prompt, "- {c}");
        }
        if let Some((p, _)) = &project {
            let _ = write!(prompt, "\n## Project notes today\n\n{p}\n");
        }
        if let Some(last) = ledger.last() {
            let _ = write!(prompt, "\n## What changed\n\n{}\n", last.diff_summary);
        }
        if ledger.len() > 1 {
            let _ = write!(
                prompt,
                "\n## Reviews before it was accepted\n\n{}\n",
                memory::render_ledger(&ledger)
            );
        }
        let sc = scope(&task.id, 0, 0);
        self.log_prompt(&sc, "learnings", &prompt)?;
        let messages = vec![
            json!({"role": "system", "content": learnings::LEARNINGS_PROMPT}),
            json!({"role": "user", "content": prompt}),
        ];
        let reply = self
            .call(
                CallTag { role: Role::Learnings, task: &task.id, attempt: 1, turn: 0 },
                0,
                &messages,
                &[],
            )
            .await?;
        let mut event =
            ProposedLearnings { scope: sc, emitted: Some(false), ..ProposedLearnings::default() };
        match reply.map(|r| learnings::parse(r.content.as_deref().unwrap_or(""))) {
            Ok(learnings::Proposal::Learning(text)) => {
                learnings::append(&self.shared.dir, &self.shared.id, &task.id, &task.title, &text)?;
                event.emitted = Some(true);
                event.entry = Some(text);
            }
            Ok(learnings::Proposal::Nothing) => event.reason = Some("no_proposal".into()),
            Ok(learnings::Proposal::Unparseable(raw)) => {
                event.reason = Some("unparseable".into());
                event.raw = Some(raw);
            }
            Err(e) => event.reason = Some(format!("unreachable: {e}")),
        }
        self.emit(&event)
    }
}
