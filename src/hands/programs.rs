//! Whether the programs a validator runs are installed, checked before a session is created:
//! a missing linter otherwise fails every submit with exit 127 until the iteration cap, and
//! the worker is blamed for it.

use super::validators::ValidatorSpec;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A validator whose program is not installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    pub validator: String,
    /// The program (or `python -m` module, or cargo subcommand) that is missing.
    pub program: String,
}

/// Shell words that are not programs to look for.
const BUILTINS: &[&str] = &[
    "cd", "test", "[", "[[", "]]", "echo", "printf", "true", "false", "exit", "export", "set", ":",
    "!", "exec", "command", "eval", "source", ".", "if", "then", "else", "elif", "fi", "for", "in",
    "do", "done", "while", "until", "case", "esac", "select", "function", "{", "}", "(", ")",
    "wait", "time", "ulimit", "umask", "read", "trap", "shift", "unset", "local", "return",
    "break", "continue", "type", "hash", "pwd", "pushd", "popd", "shopt", "declare", "typeset",
    "readonly", "let", "builtin", "alias", "unalias", "jobs", "bg", "fg", "kill", "getopts",
];

/// cargo's own subcommands; any other needs a `cargo-<name>` program.
const CARGO_BUILTIN: &[&str] = &[
    "build",
    "b",
    "check",
    "c",
    "test",
    "t",
    "run",
    "r",
    "bench",
    "doc",
    "d",
    "fetch",
    "metadata",
    "tree",
    "update",
    "vendor",
    "verify-project",
    "version",
    "package",
    "publish",
    "locate-project",
    "generate-lockfile",
    "pkgid",
    "rustc",
    "rustdoc",
    "clean",
    "fix",
    "add",
    "remove",
    "info",
    "search",
    "new",
    "init",
    "install",
    "uninstall",
    "login",
    "logout",
    "owner",
    "yank",
    "report",
];

/// The first validator whose program cannot be found, if any. `repo` is where relative
/// program paths (`./scripts/lint`) are looked up.
pub fn first_missing(specs: &[ValidatorSpec], repo: &Path) -> Option<Missing> {
    specs.iter().find_map(|spec| {
        missing_in(&spec.command, repo)
            .map(|program| Missing { validator: spec.name.clone(), program })
    })
}

/// The first program a command line needs that is not installed.
fn missing_in(command: &str, repo: &Path) -> Option<String> {
    for words in segments(command).into_iter().filter_map(program_words) {
        let program = words[0];
        if !installed(program, repo) {
            return Some(program.to_owned());
        }
        if program == "cargo"
            && let Some(sub) = words.get(1).filter(|s| !s.starts_with(['-', '+']))
            && !CARGO_BUILTIN.contains(sub)
            && !installed(&format!("cargo-{sub}"), repo)
        {
            return Some(format!("cargo-{sub}"));
        }
        if program.starts_with("python")
            && words.get(1) == Some(&"-m")
            && let Some(module) = words.get(2)
            && !importable(program, module)
        {
            return Some(format!("{module} (python -m {module})"));
        }
    }
    None
}

/// A segment's words from its program on: assignments (`VAR=x`), redirections (`>log`, `2>`,
/// `<in`), a subshell's or a group's opening (`(cd`, `{`, `!`) and `env` come before it. `None`
/// when the segment runs no program harrow can look for (a builtin, a `$VAR`).
fn program_words(segment: &str) -> Option<Vec<&str>> {
    let words: Vec<&str> = segment
        .split_whitespace()
        .map(|w| w.trim_start_matches(['(', '{', '!']))
        .filter(|w| !w.is_empty())
        .skip_while(|w| {
            (w.contains('=') && !w.starts_with('-'))
                || w.trim_start_matches(|c: char| c.is_ascii_digit()).starts_with(['>', '<'])
        })
        .collect();
    let mut words = if words.first() == Some(&"env") { words[1..].to_vec() } else { words };
    let program = words.first()?.trim_end_matches([')', '}']).trim_matches(['\'', '"']);
    if program.is_empty() || BUILTINS.contains(&program) || program.starts_with('$') {
        return None;
    }
    words[0] = program;
    Some(words)
}

/// The toolchains whose start can be tried without side effects, and how: a validator that
/// runs one of these is asked to start it where validators run, before the first task.
const PROBES: &[(&str, &str)] = &[
    ("cargo", "cargo --version"),
    ("rustc", "rustc --version"),
    ("python", "python --version"),
    ("python3", "python3 --version"),
    ("pytest", "pytest --version"),
    ("ruff", "ruff --version"),
    ("go", "go version"),
    ("node", "node --version"),
    ("npm", "npm --version"),
    ("npx", "npx --version"),
    ("make", "make --version"),
];

/// The probes of the known toolchains a validator's command runs, each once.
pub fn probes(specs: &[ValidatorSpec]) -> Vec<(String, &'static str)> {
    let mut out: Vec<(String, &'static str)> = Vec::new();
    for spec in specs {
        for words in segments(&spec.command).into_iter().filter_map(program_words) {
            let found = PROBES.iter().find(|(name, _)| *name == words[0]);
            if let Some((_, probe)) = found
                && !out.iter().any(|(_, p)| p == probe)
            {
                out.push((spec.name.clone(), probe));
            }
        }
    }
    out
}

/// The command line cut at unquoted `&`, `|`, `;` and newlines: each piece starts a program.
fn segments(command: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut quote = None;
    let mut start = 0;
    for (i, c) in command.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            // `2>&1`, `>&2`, `&>file`, `>|file` redirect; they separate nothing.
            (None, '&' | '|')
                if command[..i].ends_with(['>', '<'])
                    || (c == '&' && command[i + 1..].starts_with('>')) => {}
            (None, '&' | '|' | ';' | '\n') => {
                out.push(&command[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    out.push(&command[start..]);
    out.retain(|s| !s.trim().is_empty());
    out
}

fn installed(program: &str, repo: &Path) -> bool {
    if program.contains('/') {
        let path = if Path::new(program).is_absolute() {
            PathBuf::from(program)
        } else {
            repo.join(program)
        };
        return path.is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

fn importable(python: &str, module: &str) -> bool {
    let top = module.split('.').next().unwrap_or(module);
    Command::new(python)
        .args(["-c", &format!("import {top}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(command: &str) -> ValidatorSpec {
        ValidatorSpec { name: "v".into(), command: command.into(), timeout_secs: 1 }
    }

    #[test]
    fn names_the_missing_program() {
        let here = Path::new(".");
        assert_eq!(
            missing_in("harrow-no-such-linter check .", here).as_deref(),
            Some("harrow-no-such-linter")
        );
        assert_eq!(missing_in("test -f x && sh -c true", here), None, "builtins and sh are fine");
        assert_eq!(
            missing_in("sh -c 'true; harrow-quoted'", here),
            None,
            "quoted pieces are not programs"
        );
        assert_eq!(
            missing_in("RUST_LOG=1 cargo harrow-no-such-sub --all", here).as_deref(),
            Some("cargo-harrow-no-such-sub")
        );
        assert_eq!(
            missing_in(
                "wait; cd . && VAR=1 cargo test 2>&1 | tee /dev/null; [ -f x ] || true; (cd . && true) & wait; time true >/dev/null; { true; }",
                here
            ),
            None,
            "shell builtins, redirections, pipelines, subshells and assignments are not programs"
        );
        assert_eq!(missing_in("true 2>&1 | harrow-nope-7", here), Some("harrow-nope-7".into()));
        assert_eq!(missing_in("cargo test --quiet", here), None);
        assert_eq!(
            missing_in("python3 -m harrow_no_such_module -q", here).as_deref(),
            Some("harrow_no_such_module (python -m harrow_no_such_module)")
        );
        assert_eq!(
            missing_in("./scripts/harrow-missing.sh", here).as_deref(),
            Some("./scripts/harrow-missing.sh")
        );
        let found = first_missing(&[spec("true"), spec("harrow-nope x")], here).unwrap();
        assert_eq!(found.program, "harrow-nope");
    }
}
