//! A session moved to another clone of its project (`resume --repo`): its branch and kept
//! attempts come from the session folder's copy, its worktree keeps its files, and a worktree
//! folder or a clone someone else prepared cannot turn the move against the operator.

use crate::support::git;
use harrow::hands::session_store::SessionStore;
use harrow::hands::workspace::{Review, Workspace, WorkspaceError};
use std::path::{Path, PathBuf};

const ID: &str = "20261127-000000-a1b2c3";

/// A project, a session on it with one landed task and one kept attempt in its copy, an
/// interrupted task's edits in its worktree, and a second clone made before the session
/// began (as another machine's would be).
struct Moved {
    tmp: tempfile::TempDir,
    ws: Workspace,
    store: SessionStore,
    kept: String,
}

/// A repository at `dir` whose one commit holds `file` with `text`.
fn repo_with(dir: &Path, file: &str, text: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(file), text).unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "initial"]);
    dir.to_path_buf()
}

/// In `tmp`: a project `first` with its clone `second`, and a session cut from `first` whose
/// branch is copied into its folder as the run's start copies it.
fn session_cut(tmp: &Path) -> (Workspace, SessionStore) {
    let src = repo_with(&tmp.join("first"), "a.txt", "a\n");
    git(tmp, &["clone", "-q", src.to_str().unwrap(), "second"]);
    let session = tmp.join("sessions").join(ID);
    let (ws, _) = Workspace::create(&src, &session.join("workspace"), ID).unwrap();
    let store = SessionStore::of(&session);
    store.copy_branch_from(&ws, &ws.branch).unwrap();
    (ws, store)
}

impl Moved {
    fn new() -> Moved {
        let tmp = tempfile::tempdir().unwrap();
        let (ws, store) = session_cut(tmp.path());
        let start = ws.tip().unwrap();
        std::fs::write(ws.worktree.join("b.txt"), "b\n").unwrap();
        let diff = ws.diff_from(&start).unwrap();
        let landed = ws
            .commit_task("T-001", "B", ID, Review::Accepted, Some(&start), Some(&diff.digest))
            .unwrap()
            .unwrap();
        store.copy_branch_from(&ws, &ws.branch).unwrap();
        std::fs::write(ws.worktree.join("a.txt"), "a, judged\n").unwrap();
        let tip = ws.tip().unwrap();
        let k = ws.keep("T-002/1", &tip, "judged").unwrap();
        store.copy_kept_from(&ws, &k).unwrap();
        // The log that landed and kept them: what a move brings is held to it.
        let log = [
            format!(
                r#"{{"ts":"t","seq":1,"type":"commit","payload":{{"task_id":"T-001","sha":"{landed}"}}}}"#
            ),
            format!(
                r#"{{"ts":"t","seq":2,"type":"evaluator_verdict","payload":{{"task_id":"T-002","verdict":"reject","attempt_commit":"{}"}}}}"#,
                k.oid
            ),
        ];
        let session = store.path().parent().unwrap();
        std::fs::write(session.join("events.jsonl"), log.join("\n") + "\n").unwrap();
        std::fs::write(ws.worktree.join("a.txt"), "a, edited after\n").unwrap();
        std::fs::write(ws.worktree.join("new.txt"), "untracked\n").unwrap();
        Moved { tmp, ws, store, kept: k.refname }
    }

    fn second(&self) -> PathBuf {
        self.tmp.path().join("second")
    }

    /// The first clone dies with its machine.
    fn lose_first(&self) {
        std::fs::remove_dir_all(self.tmp.path().join("first")).unwrap();
        assert!(!self.ws.opens(), "the worktree's link to the first clone is dead");
    }
}

fn rev(repo: &Path, r: &str) -> String {
    git(repo, &["rev-parse", r]).trim().to_owned()
}

#[test]
fn a_session_whose_clone_died_goes_on_in_another_with_its_branch_kept_work_and_edits() {
    let m = Moved::new();
    let tip = m.ws.tip().unwrap();
    let kept = rev(m.store.path(), &m.kept);
    m.lose_first();
    let moved = m.ws.rehome(&m.second(), &m.store).unwrap();
    assert!(moved.kept_files && moved.brought.branch_moved, "{moved:?}");
    assert_eq!(moved.brought.kept, 1);
    let ws = moved.workspace;
    assert!(ws.opens(), "the worktree is a worktree of the second clone now");
    assert_eq!(ws.source.canonicalize().unwrap(), m.second().canonicalize().unwrap());
    assert_eq!(ws.tip().unwrap(), tip, "the branch as it landed");
    assert_eq!(rev(&m.second(), &m.kept), kept, "the kept attempt travelled");
    assert_eq!(
        git(&ws.worktree, &["symbolic-ref", "HEAD"]).trim(),
        format!("refs/heads/{}", ws.branch)
    );
    let status = git(&ws.worktree, &["status", "--porcelain"]);
    assert!(status.contains(" M a.txt") && status.contains("?? new.txt"), "{status}");
    assert_eq!(std::fs::read_to_string(ws.worktree.join("a.txt")).unwrap(), "a, edited after\n");
    // What the resume restores a rework from is there to restore.
    ws.restore_files(&kept).unwrap();
    assert_eq!(std::fs::read_to_string(ws.worktree.join("a.txt")).unwrap(), "a, judged\n");
}

#[test]
fn a_planted_git_link_in_the_worktree_is_replaced_never_followed() {
    let m = Moved::new();
    m.lose_first();
    let victim = m.tmp.path().join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    let dot_git = m.ws.worktree.join(".git");
    std::fs::remove_file(&dot_git).unwrap();
    std::os::unix::fs::symlink(&victim, &dot_git).unwrap();
    let moved = m.ws.rehome(&m.second(), &m.store).unwrap();
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "precious\n",
        "the link was not written through"
    );
    assert!(std::fs::symlink_metadata(&dot_git).unwrap().is_file(), "a file of harrow's now");
    assert!(moved.workspace.opens());
}

#[test]
fn a_clone_whose_session_branch_went_another_way_is_refused_and_left_as_it_was() {
    let m = Moved::new();
    m.lose_first();
    let second = m.second();
    git(&second, &["checkout", "-q", "-b", &m.ws.branch]);
    std::fs::write(second.join("other.txt"), "someone else's\n").unwrap();
    git(&second, &["add", "-A"]);
    git(&second, &["-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qm", "other"]);
    let before = rev(&second, &m.ws.branch);
    let refused = m.ws.rehome(&second, &m.store).unwrap_err();
    assert!(matches!(refused, WorkspaceError::Diverged { .. }), "{refused}");
    let said = refused.to_string();
    assert!(said.contains(&before) && said.contains("went another way"), "{said}");
    assert_eq!(rev(&second, &m.ws.branch), before, "the clone's branch is untouched");
    let kept = git(&second, &["for-each-ref", &format!("refs/harrow/{ID}/")]);
    assert!(kept.trim().is_empty(), "no ref was written before the refusal: {kept}");
}

#[test]
fn a_session_folder_without_a_copy_of_its_branch_says_so() {
    let m = Moved::new();
    m.lose_first();
    std::fs::remove_dir_all(m.store.path()).unwrap();
    let refused = m.ws.rehome(&m.second(), &m.store).unwrap_err();
    assert!(matches!(refused, WorkspaceError::NoCopy(_)), "{refused}");
}

#[test]
fn a_record_naming_a_branch_of_the_clones_own_moves_nothing() {
    let m = Moved::new();
    m.lose_first();
    let second = m.second();
    let main = rev(&second, "main");
    // The folder's copy names main too, at a commit that would move it forward.
    let tip = rev(m.store.path(), &format!("refs/heads/{}", m.ws.branch));
    git(m.store.path(), &["update-ref", "refs/heads/main", &tip]);
    let forged = Workspace { branch: "main".into(), ..m.ws.clone() };
    let refused = forged.rehome(&second, &m.store).unwrap_err();
    assert!(matches!(refused, WorkspaceError::NotASessionBranch(_)), "{refused}");
    assert_eq!(rev(&second, "main"), main, "the clone's main is untouched");
}

/// The session folder is someone else's to write: a link planted where its git copy should be
/// is neither written through at a landing nor read from on a move.
#[test]
fn a_link_in_place_of_the_sessions_git_copy_is_neither_written_through_nor_read() {
    let m = Moved::new();
    let elsewhere = m.tmp.path().join("elsewhere.git");
    git(m.tmp.path(), &["init", "-q", "--bare", elsewhere.to_str().unwrap()]);
    std::fs::remove_dir_all(m.store.path()).unwrap();
    std::os::unix::fs::symlink(&elsewhere, m.store.path()).unwrap();
    assert!(m.store.copy_branch_from(&m.ws, &m.ws.branch).is_err(), "refused, not followed");
    let written = git(&elsewhere, &["for-each-ref"]);
    assert!(written.trim().is_empty(), "nothing reached the linked repository: {written}");
    m.lose_first();
    let refused = m.ws.rehome(&m.second(), &m.store).unwrap_err();
    assert!(matches!(refused, WorkspaceError::NoCopy(_)), "{refused}");
}

/// The objects of the repository at `git_dir`, as git lists them.
fn objects_of(git_dir: &Path) -> Vec<String> {
    let listed = git(
        git_dir,
        &["--git-dir", ".", "cat-file", "--batch-all-objects", "--batch-check=%(objectname)"],
    );
    listed.lines().map(str::to_owned).collect()
}

#[test]
fn the_sessions_git_copy_holds_what_the_session_made_and_stands_on_its_base() {
    let m = Moved::new();
    let copy = m.store.path();
    let mut names: Vec<String> = std::fs::read_dir(copy)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["HEAD", "config", "harrow-base", "objects", "refs"], "no sample hooks");
    assert_eq!(std::fs::read_to_string(copy.join("harrow-base")).unwrap().trim(), m.ws.base);
    let held = objects_of(copy);
    let listed = git(&m.tmp.path().join("first"), &["rev-list", "--objects", &m.ws.base]);
    let base_objects: Vec<&str> = listed.lines().filter_map(|l| l.split(' ').next()).collect();
    assert_eq!(base_objects.len(), 3, "the base: its commit, tree and a.txt");
    assert!(held.iter().all(|o| !base_objects.contains(&o.as_str())), "none of the base's");
    // The landed task and the kept attempt: a commit, a tree and a blob each.
    assert_eq!(held.len(), 6, "{held:?}");
    // With the base's objects at hand (any clone's), git finds the copy whole.
    let checked = std::process::Command::new("git")
        .args(["--git-dir", ".", "fsck", "--no-progress", "--no-dangling"])
        .arg(format!("refs/heads/{}", m.ws.branch))
        .arg(&m.kept)
        .current_dir(copy)
        .env("GIT_ALTERNATE_OBJECT_DIRECTORIES", m.tmp.path().join("first/.git/objects"))
        .output()
        .unwrap();
    assert!(checked.status.success(), "{}", String::from_utf8_lossy(&checked.stderr));
}

#[test]
fn a_clone_without_the_sessions_base_is_told_to_fetch_it_and_left_as_it_was() {
    let m = Moved::new();
    m.lose_first();
    let stranger = repo_with(&m.tmp.path().join("stranger"), "s.txt", "another project\n");
    let refused = m.ws.rehome(&stranger, &m.store).unwrap_err();
    assert!(matches!(refused, WorkspaceError::NoBase { .. }), "{refused}");
    let said = refused.to_string();
    assert!(said.contains(&m.ws.base) && said.contains("git fetch"), "{said}");
    let refs = git(&stranger, &["for-each-ref", "--format=%(refname)"]);
    assert_eq!(refs.trim(), "refs/heads/main", "nothing was written into the clone");
}

#[test]
fn a_copy_that_holds_its_whole_history_serves_a_clone_without_the_base() {
    let m = Moved::new();
    // As harrow made copies before they stood on the base: the base's history in them too.
    let first = m.tmp.path().join("first");
    git(&first, &["repack", "-q", "-a", "-d"]);
    for pack in std::fs::read_dir(first.join(".git/objects/pack")).unwrap() {
        let pack = pack.unwrap().path();
        std::fs::copy(&pack, m.store.path().join("objects/pack").join(pack.file_name().unwrap()))
            .unwrap();
    }
    let tip = m.ws.tip().unwrap();
    m.lose_first();
    let stranger = repo_with(&m.tmp.path().join("stranger"), "s.txt", "another project\n");
    let moved = m.ws.rehome(&stranger, &m.store).unwrap();
    assert_eq!(moved.workspace.tip().unwrap(), tip);
    assert_eq!(rev(&stranger, &m.kept), rev(m.store.path(), &m.kept));
}

#[test]
fn a_session_that_never_landed_goes_on_in_another_clone_from_its_base() {
    let tmp = tempfile::tempdir().unwrap();
    let (ws, store) = session_cut(tmp.path());
    assert!(objects_of(store.path()).is_empty(), "a session cut from its base copies nothing");
    std::fs::write(ws.worktree.join("a.txt"), "a, begun\n").unwrap();
    std::fs::remove_dir_all(tmp.path().join("first")).unwrap();
    let moved = ws.rehome(&tmp.path().join("second"), &store).unwrap();
    assert!(moved.brought.branch_moved, "{moved:?}");
    assert_eq!(moved.workspace.tip().unwrap(), ws.base, "the branch starts at the base");
    let status = git(&moved.workspace.worktree, &["status", "--porcelain"]);
    assert_eq!(status, " M a.txt\n", "the begun edit is still there");
}

#[test]
fn a_copy_cut_short_is_made_again_and_one_planted_with_a_link_inside_is_refused() {
    let m = Moved::new();
    let copy = m.store.path().to_path_buf();
    std::fs::remove_dir_all(&copy).unwrap();
    std::fs::create_dir_all(copy.join("objects")).unwrap();
    m.store.copy_branch_from(&m.ws, &m.ws.branch).unwrap();
    let branch = format!("refs/heads/{}", m.ws.branch);
    let copy_dir = copy.to_str().unwrap();
    assert_eq!(
        git(m.tmp.path(), &["--git-dir", copy_dir, "rev-parse", &branch]).trim(),
        m.ws.tip().unwrap()
    );
    let elsewhere = m.tmp.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::remove_dir_all(&copy).unwrap();
    std::fs::create_dir_all(&copy).unwrap();
    std::os::unix::fs::symlink(&elsewhere, copy.join("objects")).unwrap();
    assert!(m.store.copy_branch_from(&m.ws, &m.ws.branch).is_err(), "refused, not followed");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0, "nothing written through it");
}

#[test]
fn a_planted_base_file_is_neither_written_through_nor_waited_on() {
    let m = Moved::new();
    let named = m.store.path().join("harrow-base");
    let victim = m.tmp.path().join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    std::fs::remove_file(&named).unwrap();
    std::os::unix::fs::symlink(&victim, &named).unwrap();
    m.store.copy_branch_from(&m.ws, &m.ws.branch).unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n", "not written through");
    assert_eq!(std::fs::read_to_string(&named).unwrap().trim(), m.ws.base, "replaced");
    std::fs::remove_file(&named).unwrap();
    nix::unistd::mkfifo(&named, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    let tip = m.ws.tip().unwrap();
    m.lose_first();
    let (done, wait) = std::sync::mpsc::channel();
    let (ws, store, second) = (m.ws.clone(), m.store.clone(), m.second());
    std::thread::spawn(move || {
        let _ = done.send(ws.rehome(&second, &store).map(|r| r.workspace.tip()));
    });
    let moved = wait.recv_timeout(std::time::Duration::from_secs(20)).expect("never waited on");
    assert_eq!(moved.unwrap().unwrap(), tip);
}

/// The copy is held to the log: a commit added on its session branch, or a kept ref moved,
/// is refused before anything reaches the clone, the commit named.
#[test]
fn a_copy_that_differs_from_the_log_is_refused_and_the_clone_left_as_it_was() {
    let m = Moved::new();
    m.lose_first();
    let copy = m.store.path();
    let branch = format!("refs/heads/{}", m.ws.branch);
    let tip = rev(copy, &branch);
    let planted =
        git(copy, &["commit-tree", &format!("{tip}^{{tree}}"), "-p", &tip, "-m", "planted"])
            .trim()
            .to_owned();
    for set in [branch.as_str(), m.kept.as_str()] {
        let before = rev(copy, set);
        git(copy, &["update-ref", set, &planted]);
        let refused = m.ws.rehome(&m.second(), &m.store).unwrap_err();
        assert!(matches!(refused, WorkspaceError::NotAsLogged { .. }), "{set}: {refused}");
        assert!(refused.to_string().contains(&planted[..12]), "{refused}");
        let brought = git(&m.second(), &["for-each-ref", "refs/heads/session/", "refs/harrow/"]);
        assert!(brought.trim().is_empty(), "{set}: nothing reached the clone: {brought}");
        git(copy, &["update-ref", set, &before]);
    }
    // Two planted on top: the newest is named, and nothing moves.
    let second_plant = git(
        copy,
        &["commit-tree", &format!("{planted}^{{tree}}"), "-p", &planted, "-m", "planted too"],
    )
    .trim()
    .to_owned();
    git(copy, &["update-ref", &branch, &second_plant]);
    let refused = m.ws.rehome(&m.second(), &m.store).unwrap_err();
    assert!(refused.to_string().contains(&second_plant[..12]), "{refused}");
    git(copy, &["update-ref", &branch, &tip]);
    assert!(m.ws.rehome(&m.second(), &m.store).is_ok(), "as the log has it, the copy moves");
}
