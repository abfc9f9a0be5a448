//! `harrow completions` and `harrow man` from the real binary: the bash script loads in bash and
//! completes verbs, zsh and fish get theirs, and the manual page names every verb.

// A test whose setup fails should panic there.
#![allow(clippy::unwrap_used)]

use std::process::Command;

fn harrow(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_harrow")).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn bash_completion_loads_and_completes_verbs_and_flags() {
    let script = harrow(&["completions", "bash"]);
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), script).unwrap();
    // As bash calls a completion function: the command, the word being completed, the one
    // before it.
    let complete = |words: &str, cword: usize| {
        let list: Vec<&str> = words.split(' ').collect();
        let (cur, prev) = (list[cword], list[cword - 1]);
        let probe = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD={cword}; _harrow harrow {cur} {prev}; echo \"${{COMPREPLY[@]}}\"",
            file.path().display()
        );
        let out = Command::new("bash").args(["-c", &probe]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let verbs = complete("harrow sh", 1);
    assert!(verbs.split_whitespace().any(|w| w == "show"), "{verbs}");
    let flags = complete("harrow export --fo", 2);
    assert!(flags.split_whitespace().any(|w| w == "--format"), "{flags}");
}

#[test]
fn zsh_and_fish_get_their_own_scripts_and_the_man_page_names_every_verb() {
    assert!(harrow(&["completions", "zsh"]).starts_with("#compdef harrow"));
    assert!(harrow(&["completions", "fish"]).contains("complete -c harrow"));
    let man = harrow(&["man"]);
    assert!(man.contains(".TH harrow 1"), "{man}");
    for verb in ["run", "prep", "replay", "watch", "export", "completions"] {
        assert!(man.contains(verb), "the manual names {verb}");
    }
}
