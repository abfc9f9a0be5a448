//! `harrow completions` and `harrow man` from the real binary: the bash script loads in bash and
//! completes verbs, flags and session ids, zsh and fish get theirs, and the manual page names
//! every verb.

// A test whose setup fails should panic there.
#![allow(clippy::unwrap_used)]

use crate::tools;
use std::process::Command;

fn harrow(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_harrow")).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// A bash completer over the script `harrow completions bash` writes, with the sessions folder
/// `sessions` and nothing else of this machine's.
fn bash_completer(sessions: &std::path::Path) -> impl Fn(&str, usize) -> String {
    let script = harrow(&["completions", "bash"]);
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), script).unwrap();
    let home = tempfile::tempdir().unwrap();
    let sessions = sessions.to_path_buf();
    // As bash calls a completion function: the command, the word being completed, the one
    // before it.
    move |words: &str, cword: usize| {
        let list: Vec<&str> = words.split(' ').collect();
        let (cur, prev) = (list[cword], list[cword - 1]);
        let probe = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD={cword}; _clap_complete_harrow harrow {cur} {prev}; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            file.path().display()
        );
        let out = Command::new("bash")
            .args(["-c", &probe])
            .env("HARROW_SESSIONS_DIR", &sessions)
            .env("HOME", home.path())
            .env("XDG_CONFIG_HOME", home.path())
            .env("XDG_DATA_HOME", home.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }
}

#[test]
fn bash_completion_loads_and_completes_verbs_and_flags() {
    let none = tempfile::tempdir().unwrap();
    let complete = bash_completer(none.path());
    let verbs = complete("harrow sh", 1);
    assert!(verbs.lines().any(|w| w == "show"), "{verbs}");
    let flags = complete("harrow export --fo", 2);
    assert!(flags.lines().any(|w| w == "--format"), "{flags}");
}

/// Every verb that takes a session completes its id from the folders `harrow sessions` lists;
/// a folder whose name carries a control character (anyone who can write the sessions folder
/// names it) is offered neither as an id nor as a path, and a plan name with an escape sequence
/// reaches a shell's menu escaped.
#[test]
fn session_ids_complete_from_the_sessions_folder_and_hostile_names_are_never_offered() {
    let tmp = tempfile::tempdir().unwrap();
    let sessions = tmp.path().join("sessions");
    for id in ["20261127-101010-abc123", "20261126-090909-ffee00", "2026\u{1b}]0;owned\u{7}"] {
        std::fs::create_dir_all(sessions.join(id)).unwrap();
        std::fs::write(sessions.join(id).join("events.jsonl"), "").unwrap();
    }
    std::fs::write(
        sessions.join("20261127-101010-abc123").join("checkpoint.json"),
        r#"{"session_id": "20261127-101010-abc123", "feature_dir": "/p/text\u001b[31mstats"}"#,
    )
    .unwrap();
    let complete = bash_completer(&sessions);
    for verb in ["show", "replay", "resume", "control", "export", "cleanse"] {
        let ids = complete(&format!("harrow {verb} 2026"), 2);
        let offered: Vec<&str> = ids.lines().collect();
        assert_eq!(offered, ["20261127-101010-abc123", "20261126-090909-ffee00"], "{verb}");
    }
    let one = complete("harrow show 202611", 2);
    assert_eq!(one.lines().count(), 2, "{one}");
    let only = complete("harrow show 20261127", 2);
    assert_eq!(only.trim(), "20261127-101010-abc123");
    let paths = complete(&format!("harrow show {}/", sessions.display()), 2);
    assert_eq!(paths.lines().count(), 2, "only the two plain folders: {paths:?}");
    assert!(!paths.contains('\u{1b}'), "{paths:?}");
    let fish = Command::new(env!("CARGO_BIN_EXE_harrow"))
        .args(["--", "harrow", "show", "2026"])
        .env("COMPLETE", "fish")
        .env("HARROW_SESSIONS_DIR", &sessions)
        .env("HOME", tmp.path())
        .env("XDG_CONFIG_HOME", tmp.path())
        .output()
        .unwrap();
    let menu = String::from_utf8(fish.stdout).unwrap();
    assert!(menu.contains("20261127-101010-abc123\ttext\\u{1b}[31mstats"), "{menu:?}");
    assert!(!menu.contains('\u{1b}'), "{menu:?}");
}

#[test]
fn zsh_and_fish_get_their_own_scripts_and_the_man_page_names_every_verb() {
    assert!(harrow(&["completions", "zsh"]).starts_with("#compdef harrow"));
    assert!(
        harrow(&["completions", "fish"])
            .contains("complete --keep-order --exclusive --command harrow")
    );
    let man = harrow(&["man"]);
    assert!(man.contains(".TH harrow 1"), "{man}");
    for verb in ["run", "prep", "replay", "watch", "export", "completions", "stats", "rejudge"] {
        assert!(man.contains(verb), "the manual names {verb}");
    }
    // What `control` does, said the same in the verb list, its own help and the manual: every
    // operation it has, not the first few it had.
    let control = harrow(&["control", "--help"]);
    let listed = harrow(&["--help"]);
    let line = listed.lines().find(|l| l.trim_start().starts_with("control")).unwrap_or_default();
    for op in ["steer", "queue", "review", "rewind", "allow"] {
        assert!(control.contains(op), "control --help names {op}: {control}");
        assert!(
            line.contains(op) || listed.contains(&format!("{op}, ")),
            "--help names {op}: {line}"
        );
        assert!(man.contains(op), "the manual names {op}");
    }
}

/// `harrow man --dir` writes harrow(1) and a page for every verb harrow(1) names; harrow(1)
/// has the console's and the fleet's keys (from their key tables), the environment, the files
/// and the exit status; each page renders with man(1) without a warning.
#[test]
fn man_dir_writes_a_page_per_verb_and_the_keys_environment_and_exit_status() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("man1");
    let listed = harrow(&["man", "--dir", dir.to_str().unwrap()]);
    let main = std::fs::read_to_string(dir.join("harrow.1")).unwrap();
    for section in [".SH KEYS", ".SH \"ENVIRONMENT\"", ".SH \"FILES\"", ".SH \"EXIT STATUS\""] {
        assert!(main.contains(section), "harrow(1) has {section}");
    }
    for said in ["approve", "HARROW_SESSIONS_DIR", "143", "SIGTERM"] {
        assert!(main.contains(said), "harrow(1) says {said}");
    }
    let named: Vec<&str> = main
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter_map(|w| w.strip_prefix("harrow\\-").and_then(|v| v.strip_suffix("(1)")))
        .collect();
    assert!(named.len() >= 15, "the verbs' pages are named: {named:?}");
    for verb in &named {
        let page = dir.join(format!("harrow-{verb}.1"));
        assert!(page.is_file(), "harrow(1) names harrow-{verb}(1), which --dir writes");
        assert!(listed.contains(&format!("harrow-{verb}.1")), "{listed}");
    }
    tools::require_man();
    for page in std::fs::read_dir(&dir).unwrap() {
        let out = Command::new("man")
            .args(["--warnings", "-l", "-Tutf8"])
            .arg(page.unwrap().path())
            .env("MANWIDTH", "100")
            .output()
            .unwrap();
        let warnings = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && warnings.trim().is_empty(), "{warnings}");
    }
}
