//! Rewinding a task: which state of its work the operator means — an attempt as it was
//! judged, or the worktree a worker turn left — found in the log, and what the worker is told
//! when it goes on from there. The CLI asks this before it sends a rewind (so a mistyped
//! attempt is refused at once) and the loop again when it applies one.

use crate::session::event::EventKind as K;
use crate::session::scan::scan;
use std::collections::BTreeMap;
use std::io;
use std::path::Path;

/// Where a rewind takes a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The attempt the state belongs to.
    pub attempt: u64,
    /// The turn, for a rewind to a turn.
    pub turn: Option<u64>,
    /// What holds the files.
    pub state: Kept,
    /// The `seq` of the last event of the conversation kept: the worker goes on from there.
    pub continues_at: u64,
    /// Attempts judged after that point: their work is set aside.
    pub rewound: Vec<u64>,
}

/// The git object a state of the work was kept as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kept {
    /// A judged attempt, kept as a commit on its attempt ref.
    Commit(String),
    /// A turn's worktree, kept as a tree.
    Tree(String),
}

impl Target {
    /// The state in words: "attempt 2, as it was judged", "turn 5 of attempt 2".
    pub fn described(&self) -> String {
        crate::session::outcome::rewound_to(self.attempt, self.turn)
    }
}

/// What the log says of one task's states that can be gone back to.
#[derive(Debug, Default)]
struct Seen {
    /// Attempt → (its kept commit, when one was kept; the verdict's seq).
    verdicts: BTreeMap<u64, (Option<String>, u64)>,
    /// Attempt → the seq of the answer its worker got to its verdict.
    answered: BTreeMap<u64, u64>,
    /// (attempt, turn, tree, seq), in log order.
    turns: Vec<(u64, u64, String, u64)>,
}

/// Finds the state `to_attempt` / `to_turn` name for `task` in the session's log. `Err`
/// says in one line why there is none, naming the states that exist.
pub fn find(
    dir: &Path,
    task: &str,
    session_id: &str,
    to_attempt: Option<u64>,
    to_turn: Option<u64>,
) -> io::Result<Result<Target, String>> {
    let mut seen = Seen::default();
    scan(&crate::session::dir::SessionDir::new(dir).events(), |_, f| {
        if f.payload.task_id.get() != Some(task) {
            return;
        }
        let (Some(seq), Some(attempt)) = (f.seq.count(), f.payload.attempt.count()) else {
            return;
        };
        match f.event_kind() {
            Some(K::Verdict) => {
                let commit = f.payload.attempt_commit.get().map(str::to_owned);
                seen.verdicts.insert(attempt, (commit, seq));
            }
            Some(K::FeedbackSent)
                if seen.verdicts.get(&attempt).is_some_and(|(_, at)| *at < seq) =>
            {
                seen.answered.insert(attempt, seq);
            }
            Some(K::TurnTree) => {
                if let (Some(turn), Some(tree)) = (f.payload.iter.count(), f.payload.tree.get()) {
                    seen.turns.push((attempt, turn, tree.to_owned(), seq));
                }
            }
            _ => {}
        }
    })?;
    Ok(seen.resolve(task, session_id, to_attempt, to_turn))
}

impl Seen {
    fn resolve(
        &self,
        task: &str,
        session_id: &str,
        to_attempt: Option<u64>,
        to_turn: Option<u64>,
    ) -> Result<Target, String> {
        let (attempt, turn, state, continues_at) = match (to_attempt, to_turn) {
            (_, Some(turn)) => {
                let found = (self.turns.iter().rev())
                    .find(|(a, t, ..)| *t == turn && to_attempt.is_none_or(|k| k == *a));
                let Some((attempt, _, tree, seq)) = found else {
                    let of = to_attempt.map(|k| format!(" of attempt {k}")).unwrap_or_default();
                    return Err(format!(
                        "{task} has no turn {turn}{of} recorded; {}",
                        self.turns_named(task)
                    ));
                };
                (*attempt, Some(turn), Kept::Tree(tree.clone()), *seq)
            }
            (Some(k), None) => match self.verdicts.get(&k) {
                Some((Some(commit), seq)) => {
                    let answered = self.answered.get(&k).copied().unwrap_or(*seq);
                    (k, None, Kept::Commit(commit.clone()), answered)
                }
                Some((None, _)) => {
                    return Err(format!(
                        "{task}'s attempt {k} changed no file, so nothing of it was kept; rewind to a turn instead (--to-turn N); {}",
                        self.turns_named(task)
                    ));
                }
                None => {
                    return Err(format!(
                        "{task} has no attempt {k} kept; {}",
                        self.attempts_named(task, session_id)
                    ));
                }
            },
            (None, None) => {
                return Err("a rewind needs --to-attempt K or --to-turn N".to_owned());
            }
        };
        let rewound = (self.verdicts.iter())
            .filter(|(_, (_, seq))| *seq > continues_at)
            .map(|(a, _)| *a)
            .collect();
        Ok(Target { attempt, turn, state, continues_at, rewound })
    }

    /// The kept attempts with their refs, for a refusal.
    fn attempts_named(&self, task: &str, session_id: &str) -> String {
        let kept: Vec<String> = (self.verdicts.iter())
            .filter(|(_, (commit, _))| commit.is_some())
            .map(|(a, _)| format!("{a} (refs/harrow/{session_id}/{task}/{a})"))
            .collect();
        if kept.is_empty() {
            format!("{task} has no kept attempt yet (an attempt is kept when it is judged)")
        } else {
            format!("the kept attempts are {}", kept.join(", "))
        }
    }

    /// The turns that can be gone back to, by attempt (the last 24), for a refusal.
    fn turns_named(&self, task: &str) -> String {
        if self.turns.is_empty() {
            return format!("no turn of {task} was recorded");
        }
        let mut by_attempt: BTreeMap<u64, Vec<String>> = BTreeMap::new();
        let recent = self.turns.len().saturating_sub(24);
        for (attempt, turn, ..) in &self.turns[recent..] {
            let turns = by_attempt.entry(*attempt).or_default();
            if !turns.contains(&turn.to_string()) {
                turns.push(turn.to_string());
            }
        }
        let listed: Vec<String> =
            by_attempt.iter().map(|(a, t)| format!("attempt {a}: {}", t.join(", "))).collect();
        format!("turns that can be rewound to: {}", listed.join("; "))
    }
}

/// What the worker is told where its conversation goes on after a rewind.
pub fn note(target: &str, reason: &str) -> String {
    format!(
        "The operator rewound this task to {target}: the files are exactly as they were then, and the work done after it was set aside (it is no longer in the worktree, and the verdicts on it no longer count). The operator's reason:\n\n> {}\n\nGo on from here.",
        reason.replace('\n', "\n> ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen() -> Seen {
        let mut s = Seen::default();
        s.verdicts.insert(1, (Some("c1".into()), 10));
        s.answered.insert(1, 12);
        s.verdicts.insert(2, (Some("c2".into()), 30));
        s.verdicts.insert(3, (None, 40));
        s.turns = vec![(1, 0, "t0".into(), 2), (1, 1, "t1".into(), 5), (2, 4, "t4".into(), 20)];
        s
    }

    #[test]
    fn an_attempt_goes_on_after_its_verdicts_answer_and_sets_aside_what_came_later() {
        let t = seen().resolve("T-001", "S", Some(1), None).unwrap();
        assert_eq!(t.state, Kept::Commit("c1".into()));
        assert_eq!(t.continues_at, 12);
        assert_eq!(t.rewound, vec![2, 3]);
        assert_eq!(t.described(), "attempt 1, as it was judged");
    }

    #[test]
    fn a_turn_sets_aside_the_verdicts_after_it_even_of_its_own_attempt() {
        let t = seen().resolve("T-001", "S", None, Some(4)).unwrap();
        assert_eq!((t.attempt, t.turn), (2, Some(4)));
        assert_eq!(t.state, Kept::Tree("t4".into()));
        assert_eq!(t.rewound, vec![2, 3]);
    }

    #[test]
    fn a_state_that_is_not_there_is_refused_naming_those_that_are() {
        let s = seen();
        let missing = s.resolve("T-001", "S", Some(5), None).unwrap_err();
        assert!(missing.contains("no attempt 5 kept"), "{missing}");
        assert!(missing.contains("1 (refs/harrow/S/T-001/1), 2 (refs/harrow/S/T-001/2)"));
        let empty = s.resolve("T-001", "S", Some(3), None).unwrap_err();
        assert!(empty.contains("changed no file") && empty.contains("--to-turn"), "{empty}");
        let turn = s.resolve("T-001", "S", Some(1), Some(4)).unwrap_err();
        assert!(turn.contains("no turn 4 of attempt 1"), "{turn}");
        assert!(turn.contains("attempt 1: 0, 1; attempt 2: 4"), "{turn}");
        let none = Seen::default().resolve("T-001", "S", Some(1), None).unwrap_err();
        assert!(none.contains("no kept attempt yet"), "{none}");
    }
}
