//! An accept's witnesses checked on this attempt: a validator against the run that passed
//! it, a code quote against the judged tree, a test run in the sandbox on the task's base and
//! on the attempt — each on a copy of its tree written out beside the lane's worktree, so
//! nothing harrow runs to check a verdict changes the work that was judged.

use super::{Lane, Result, Task};
use crate::hands::workspace::DiffInfo;
use crate::harness::evidence::{self, TestRun};
use crate::harness::verdict::{Verdict, WitnessKind};
use crate::session::event::WitnessSeen;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How much of a test's output a failed witness keeps in its reason.
const OUTPUT_TAIL: usize = 300;

/// Each witness as checked, and the commit the attempt was kept as to check them on.
pub(super) type Witnessed = (Vec<WitnessSeen>, Option<String>);

/// The trees the witnesses of one verdict are checked on, written out when first needed.
struct Trees {
    scratch: Option<tempfile::TempDir>,
    /// The judged attempt, kept as a commit.
    attempt: String,
    base: String,
    written: (bool, bool),
}

impl Trees {
    /// The folder the trees are written to, beside the lane's worktree (on its disk, under
    /// the same sandbox rules), made the first time.
    fn dir(&mut self, beside: &Path) -> std::result::Result<PathBuf, String> {
        if self.scratch.is_none() {
            let parent = beside.parent().unwrap_or(beside);
            let dir = tempfile::Builder::new()
                .prefix(SCRATCH_PREFIX)
                .tempdir_in(parent)
                .map_err(|e| format!("no folder to check it in beside the worktree: {e}"))?;
            self.scratch = Some(dir);
        }
        Ok(self.scratch.as_ref().map(|d| d.path().to_path_buf()).unwrap_or_default())
    }
}

impl Lane {
    /// Checks every witness of `verdict` on this attempt. `validators`: the names of the
    /// validators that ran on it and passed. Returns each witness as checked, and the commit
    /// the attempt was kept as to check them on (the log must name it: it is a kept ref).
    pub(super) fn check_witnesses(
        &mut self,
        task: &Task,
        verdict: &Verdict,
        diff: &DiffInfo,
        validators: &[String],
        attempt: u64,
    ) -> Result<Result<Witnessed, String>> {
        let mut seen = Vec::new();
        // The attempt kept first, once, when a witness is checked on its tree: work that
        // cannot be kept (changed under the check) is no attempt to vouch for.
        let mut trees: Option<Trees> = None;
        if verdict.witnesses.iter().any(|w| !matches!(w.kind, WitnessKind::Validator { .. })) {
            // Kept as the judged attempt is (`judged` takes this commit rather than keep the
            // same tree twice).
            let kept = self.keep_work(
                &format!("{}/{attempt}", task.id),
                &diff.base,
                &format!("{} attempt {attempt}, as judged", task.id),
            )?;
            match kept {
                Ok(sha) => {
                    trees = Some(Trees {
                        scratch: None,
                        attempt: sha,
                        base: diff.base.clone(),
                        written: (false, false),
                    });
                }
                Err(why) => return Ok(Err(why)),
            }
        }
        for w in &verdict.witnesses {
            let mut record = evidence::record(w);
            let outcome = if w.criterion > task.criteria.len() {
                Err(format!("the task has {} acceptance criteria", task.criteria.len()))
            } else {
                match &w.kind {
                    WitnessKind::Validator { name, passed } => {
                        match (validators.iter().any(|v| v == name), passed) {
                            (true, true) => Ok("it ran on this attempt and passed".to_owned()),
                            (true, false) => {
                                Err("it passed on this attempt, not failed".to_owned())
                            }
                            (false, _) => Err(if validators.is_empty() {
                                "no validator ran on this attempt".to_owned()
                            } else {
                                format!(
                                    "no validator of that name ran on this attempt (these did: {})",
                                    validators.join(", ")
                                )
                            }),
                        }
                    }
                    WitnessKind::Code { at, quote } => match trees.as_ref() {
                        Some(t) => self.check_code(&t.attempt, at, quote, diff)?,
                        None => Err("the attempt was not kept".to_owned()),
                    },
                    WitnessKind::Test { id } => {
                        let worktree = self.hands.jail.root().to_path_buf();
                        match trees.as_mut() {
                            Some(t) => self.check_test(t, &worktree, id),
                            None => Err("the attempt was not kept".to_owned()),
                        }
                    }
                }
            };
            match outcome {
                Ok(note) => (record.seen, record.why) = (true, Some(note)),
                Err(why) => record.why = Some(crate::printable::line(&why)),
            }
            seen.push(record);
        }
        Ok(Ok((seen, trees.map(|t| t.attempt))))
    }

    fn check_code(
        &self,
        commit: &str,
        at: &str,
        quote: &str,
        diff: &DiffInfo,
    ) -> Result<Result<String, String>> {
        let at = match evidence::code_at(at) {
            Ok(at) => at,
            Err(why) => return Ok(Err(why)),
        };
        let changed = diff.files.iter().any(|f| f.stat.path == at.path);
        let text = self.workspace.file_at(commit, &at.path)?;
        Ok(evidence::check_code(&at, quote, text.as_deref(), changed))
    }

    /// A cited test: it must pass on the attempt and fail on the task's base (with the test's
    /// own file as the attempt has it, as a test patch is applied).
    fn check_test(
        &self,
        trees: &mut Trees,
        worktree: &Path,
        id: &str,
    ) -> std::result::Result<String, String> {
        let dir = trees.dir(worktree)?;
        let (work, base) = (dir.join("work"), dir.join("base"));
        let out = |e: &dyn std::fmt::Display| format!("its tree could not be written out: {e}");
        if !trees.written.0 {
            std::fs::create_dir_all(&work).map_err(|e| out(&e))?;
            self.workspace.write_tree_to(&trees.attempt, &work).map_err(|e| out(&e))?;
            trees.written.0 = true;
        }
        let run = evidence::test_run(id, work.join("Cargo.toml").is_file())?;
        if let TestRun::Pytest { file } = &run
            && !std::fs::symlink_metadata(work.join(file)).is_ok_and(|m| m.is_file())
        {
            return Err(format!("{file} is not a file in the work (a link is not a test)"));
        }
        let command = evidence::test_command(id, &run);
        let (passed, said) = self.run_test(&work, &command, &run);
        if !passed {
            return Err(format!("it does not pass on the work: {said}"));
        }
        if !trees.written.1 {
            std::fs::create_dir_all(&base).map_err(|e| out(&e))?;
            self.workspace.write_tree_to(&trees.base, &base).map_err(|e| out(&e))?;
            trees.written.1 = true;
        }
        if let TestRun::Pytest { file } = &run {
            // The test's file as the attempt holds it, read from git (never through a link
            // in either tree), written where the base has no link on the way.
            let text = match self.workspace.file_at(&trees.attempt, file) {
                Ok(Some(text)) => text,
                Ok(None) => return Err(format!("{file} is not a file of the work")),
                Err(e) => return Err(out(&e)),
            };
            put_in_tree(&base, file, &text).map_err(|e| out(&e))?;
        }
        let (on_base, base_said) = self.run_test(&base, &command, &run);
        if on_base {
            return Err("it passes on the task's base too, so it does not show the change".into());
        }
        Ok(format!("fails on the task's base ({base_said}), passes on the work"))
    }

    /// Runs one test in `dir` under the lane's sandbox: whether it passed, and its outcome in
    /// a few words (the exit, and the output's last lines when it failed).
    fn run_test(&self, dir: &Path, command: &str, run: &TestRun) -> (bool, String) {
        let hands = match self.hands.beside(dir) {
            Ok(h) => h,
            Err(e) => return (false, format!("it could not be run: {e}")),
        };
        let outcome = hands.run_command(
            command,
            Duration::from_secs(self.shared.opts.witness_test_secs),
            64 * 1024,
            Some(&self.hands.cancel),
        );
        let Ok(o) = outcome else {
            return (false, "it could not be started".to_owned());
        };
        let passed = evidence::test_passed(run, o.exit_code, &o.output);
        let exit = if o.timed_out {
            format!("timed out after {} s", self.shared.opts.witness_test_secs)
        } else {
            o.exit_code.map_or_else(|| "killed by a signal".to_owned(), |c| format!("exit {c}"))
        };
        if passed {
            return (true, exit);
        }
        // Its last words: what failed, as the runner summed it up.
        let lines: Vec<&str> = o
            .output
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("!!!"))
            .collect();
        let last = lines[lines.len().saturating_sub(2)..].join(" · ");
        let last: String = last.chars().take(OUTPUT_TAIL).collect();
        (false, format!("{exit}: {}", crate::printable::line(&last)))
    }
}

/// The prefix of the folders a verdict's witnesses are checked in.
const SCRATCH_PREFIX: &str = ".harrow-witness-";

/// Removes the folders of witness checks a crash cut short, in each of `folders`: only real
/// folders harrow names so (a link of that name is left alone, never followed).
pub(super) fn sweep_leftovers<'a>(folders: impl Iterator<Item = &'a PathBuf>) {
    for folder in folders {
        // A folder that is a link is not harrow's: nothing below it is swept.
        if !std::fs::symlink_metadata(folder).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(folder) else { continue };
        for entry in entries.flatten() {
            let ours = entry.file_name().to_str().is_some_and(|n| n.starts_with(SCRATCH_PREFIX));
            if ours && entry.file_type().is_ok_and(|t| t.is_dir()) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
}

/// Writes `bytes` at `path` under `root`, refusing any link on the way (a folder of the tree
/// that is a link, or the file itself): a tree written out from the worker's commits is
/// hostile to harrow, which writes it outside any sandbox.
fn put_in_tree(root: &Path, path: &str, bytes: &[u8]) -> std::io::Result<()> {
    let (folders, name) = path.rsplit_once('/').unwrap_or(("", path));
    let mut at = root.to_path_buf();
    for folder in folders.split('/').filter(|f| !f.is_empty()) {
        at.push(folder);
        crate::safe_io::ensure_dir(&at)?;
    }
    std::io::Write::write_all(&mut crate::safe_io::create(&at.join(name))?, bytes)
}

#[cfg(test)]
mod tests {
    use super::{put_in_tree, sweep_leftovers};

    #[test]
    fn leftover_witness_folders_are_swept_and_a_link_of_their_name_is_not_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let session = tmp.path().join("session");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(session.join(".harrow-witness-abc/work/src")).unwrap();
        std::fs::create_dir_all(session.join("workspace")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("keep"), "keep").unwrap();
        std::os::unix::fs::symlink(&outside, session.join(".harrow-witness-link")).unwrap();
        std::fs::create_dir_all(outside.join(".harrow-witness-theirs")).unwrap();
        let lanes = tmp.path().join("lanes");
        std::os::unix::fs::symlink(&outside, &lanes).unwrap();
        sweep_leftovers([session.clone(), tmp.path().join("missing"), lanes].iter());
        assert!(!session.join(".harrow-witness-abc").exists());
        assert!(session.join("workspace").is_dir(), "only harrow's scratch folders go");
        assert!(outside.join("keep").is_file(), "nothing removed through a link");
        assert!(outside.join(".harrow-witness-theirs").is_dir(), "nor below a folder that is one");
    }

    #[test]
    fn a_test_file_is_never_written_through_a_link_in_the_tree() {
        let tmp = tempfile::tempdir().unwrap();
        let (root, outside) = (tmp.path().join("base"), tmp.path().join("outside"));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("tests")).unwrap();
        assert!(put_in_tree(&root, "tests/test_x.py", b"x").is_err());
        assert!(!outside.join("test_x.py").exists(), "written through a folder link");
        let victim = outside.join("victim.py");
        std::fs::write(&victim, "keep").unwrap();
        std::os::unix::fs::symlink(&victim, root.join("test_y.py")).unwrap();
        assert!(put_in_tree(&root, "test_y.py", b"x").is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        put_in_tree(&root, "a/b/test_z.py", b"z").unwrap();
        assert_eq!(std::fs::read_to_string(root.join("a/b/test_z.py")).unwrap(), "z");
    }
}
