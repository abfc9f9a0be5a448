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
    if Command::new("man").arg("--version").output().is_ok_and(|o| o.status.success()) {
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
}
