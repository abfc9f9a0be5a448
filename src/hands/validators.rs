//! Validators: the mechanical checks (lint, tests) a case must pass before the evaluator sees it.
//!
//! Each runs as its own process group with a timeout, under the same sandbox as `bash`, and is
//! recorded as one `validator_run` event with the command, exit code, duration and capped
//! output. When any fails, the worker gets a short report: the failing tests by name and the
//! first lines that say why — not the whole log.

use super::Hands;
use super::process::ProcessOutcome;
use crate::session::event::{Scope, ValidatorResult, ValidatorRun};
use crate::session::sink::EventSink;
use regex::Regex;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::Path;
use std::sync::LazyLock;
use std::time::Duration;

/// Output kept in the event per validator, in bytes.
const EVENT_OUTPUT_CAP: usize = 16_000;
/// The failure report's share per validator, in characters.
const REPORT_CHARS: usize = 2_000;
/// The placeholder for "this task's tests plus every done task's tests".
pub const TESTS_PLACEHOLDER: &str = "{tests}";

/// A configured validator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidatorSpec {
    pub name: String,
    /// A shell command line run in the worktree; `{tests}` expands to the selected test files.
    pub command: String,
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
}

fn default_timeout() -> u64 {
    600
}

/// Validators for a repository nobody configured: Python gets ruff and pytest, Rust gets
/// clippy and the test suite, anything else gets none.
pub fn presets(repo: &Path) -> Vec<ValidatorSpec> {
    let has = |f: &str| repo.join(f).is_file();
    let v = |name: &str, command: &str| ValidatorSpec {
        name: name.into(),
        command: command.into(),
        timeout_secs: default_timeout(),
    };
    if has("Cargo.toml") {
        vec![
            v("clippy", "cargo clippy --all-targets --quiet -- -D warnings"),
            v("tests", "cargo test --quiet"),
        ]
    } else if has("pyproject.toml") || has("setup.py") || has("setup.cfg") {
        vec![v("ruff", "ruff check ."), v("pytest", "python -m pytest -x -q {tests}")]
    } else {
        Vec::new()
    }
}

/// The outcome of running every validator on one case.
#[derive(Debug, Clone, PartialEq)]
pub struct Validation {
    pub passed: bool,
    pub results: Vec<ValidatorResult>,
    /// What the worker is told when something failed.
    pub report: Option<String>,
}

/// Expands `{tests}`: the selected test paths, each shell-quoted; nothing selects everything.
pub fn expand(command: &str, tests: &[String]) -> String {
    let quoted: Vec<String> =
        tests.iter().map(|t| format!("'{}'", t.replace('\'', r"'\''"))).collect();
    command.replace(TESTS_PLACEHOLDER, &quoted.join(" ")).trim_end().to_owned()
}

/// Runs every validator in order, logs one `validator_run`, and reports.
pub fn run_all<S: EventSink>(
    specs: &[ValidatorSpec],
    hands: &Hands,
    tests: &[String],
    scope: &Scope,
    kept: Option<&str>,
    combined: bool,
    sink: &mut S,
) -> std::io::Result<Validation> {
    let mut results = Vec::new();
    let mut report = Vec::new();
    for spec in specs {
        let command = expand(&spec.command, tests);
        let run = hands.run_command(
            &command,
            Duration::from_secs(spec.timeout_secs),
            EVENT_OUTPUT_CAP,
            Some(&hands.cancel),
        );
        let outcome = run.unwrap_or_else(|e| ProcessOutcome {
            exit_code: None,
            timed_out: false,
            cancelled: false,
            output: format!("could not start: {e}"),
            output_len: 0,
            duration: Duration::ZERO,
        });
        let passed = outcome.success();
        if !passed {
            report.push(failure_section(spec, &command, &outcome));
        }
        results.push(ValidatorResult {
            name: spec.name.clone(),
            passed,
            command: Some(command),
            exit_code: outcome.exit_code.map(i64::from),
            duration_ms: Some(outcome.duration.as_millis() as u64),
            timed_out: Some(outcome.timed_out),
            output: Some(outcome.output_with_note()),
            extra: serde_json::Map::new(),
        });
    }
    let passed = report.is_empty();
    let mut event = ValidatorRun {
        scope: scope.clone(),
        passed: Some(passed),
        results: Some(results.clone()),
        ..ValidatorRun::default()
    };
    if let Some(sha) = kept {
        event.attempt_commit = Some(sha.to_owned());
    }
    event.combined = combined.then_some(true);
    sink.emit(&event)?;
    let report = (!passed).then(|| {
        format!("Validators failed; fix these before submitting again.\n\n{}", report.join("\n\n"))
    });
    Ok(Validation { passed, results, report })
}

fn failure_section(spec: &ValidatorSpec, command: &str, o: &ProcessOutcome) -> String {
    let secs = o.duration.as_secs_f64();
    let head = if o.timed_out {
        format!(
            "## {} timed out after {} s and was killed: `{command}`",
            spec.name, spec.timeout_secs
        )
    } else {
        let code =
            o.exit_code.map_or_else(|| "killed by a signal".to_owned(), |c| format!("exit {c}"));
        format!("## {} failed: `{command}` ({code}, {secs:.1} s)", spec.name)
    };
    let failing = failing_tests(&o.output);
    let mut out = head;
    if !failing.is_empty() {
        let _ = write!(out, "\nFailing: {}", failing.join(", "));
    }
    for f in findings(&o.output) {
        let _ = write!(out, "\n- {f}");
    }
    let lines = useful_lines(&o.output);
    if !lines.is_empty() {
        out.push_str("\n```\n");
        out.push_str(&lines);
        out.push_str("\n```");
    }
    out
}

static FAILING: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r"(?m)^(?:FAILED|ERROR) (\S+)",
        r"(?m)^test (\S+) \.\.\. FAILED",
        r"(?m)^(\S+) --- FAILED\s*$",
        r"(?m)^---- (\S+) stdout ----",
        r"(?m)^--- FAIL: (\S+)",
        r"(?m)^\s*● (.+)$",
    ]
    .iter()
    .filter_map(|p| Regex::new(p).ok())
    .collect()
});

/// Names of failing tests, as pytest, cargo test (quiet or not), go test and jest print them.
pub fn failing_tests(output: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for re in FAILING.iter() {
        for cap in re.captures_iter(output) {
            let name = cap[1].trim().to_owned();
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names.truncate(20);
    names
}

/// The line patterns [`findings`] reads.
struct FindingPatterns {
    /// ` --> path:line:col`, under a headline (rustc, clippy, ruff's full format).
    located: Regex,
    /// `F401 [*] message` (ruff's full format).
    rule_head: Regex,
    /// `error[E0425]: message` / `warning: message` (rustc, clippy).
    rust_head: Regex,
    /// The lint a rustc diagnostic names in its notes.
    lint: Regex,
    /// `path:line:col: RULE message` (ruff concise, flake8, pylint, mypy and the like).
    one_line: Regex,
    /// `thread 'name' panicked at path:line:col:` (a failing Rust test).
    panic: Regex,
    /// `tests/test_a.py:2: AssertionError` (where a pytest test failed).
    py_raise: Regex,
}

static PATTERNS: LazyLock<Option<FindingPatterns>> = LazyLock::new(|| {
    Some(FindingPatterns {
        located: Regex::new(r"^\s*--> (\S+?:\d+(?::\d+)?)\s*$").ok()?,
        rule_head: Regex::new(r"^([A-Z]{1,4}[0-9]{2,5})(?: \[\*\])? (.+)$").ok()?,
        rust_head: Regex::new(r"^(error|warning)(?:\[(E\d{4})\])?: (.+)$").ok()?,
        lint: Regex::new(r"#\[(?:warn|deny|forbid)\(([\w:]+)\)\]|`-D ([\w:-]+)`").ok()?,
        one_line: Regex::new(
            r"^([^\s:][^:\s]*:\d+(?::\d+)?):? (?:(error|warning|note):\s*)?([A-Z]{1,4}[0-9]{2,5})?(?: \[\*\])?:?\s*(.+)$",
        )
        .ok()?,
        panic: Regex::new(r"^thread '([^']+)'(?: \(\d+\))? panicked at (\S+?:\d+:\d+):$").ok()?,
        py_raise: Regex::new(r"^(\S+\.py:\d+): (\w*(?:Error|Exception|Failed|Exit))$").ok()?,
    })
});

/// Findings with their location and rule, one line each (`path:line:col RULE: message`), from
/// what linters, compilers and test runners print: ruff (full and concise), flake8-style
/// one-liners, rustc and clippy, Rust test panics and pytest's raise sites.
pub fn findings(output: &str) -> Vec<String> {
    let Some(p) = PATTERNS.as_ref() else { return Vec::new() };
    let lines: Vec<&str> = output.lines().collect();
    let located_below = |i: usize| {
        lines
            .iter()
            .skip(i + 1)
            .take(3)
            .find_map(|l| p.located.captures(l))
            .map(|c| c[1].to_owned())
    };
    let mut out: Vec<String> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let found = if let Some(c) = p.rule_head.captures(line) {
            located_below(i).map(|at| format!("{at} {}: {}", &c[1], &c[2]))
        } else if let Some(c) = p.rust_head.captures(line) {
            located_below(i).map(|at| {
                let lint = lines
                    .iter()
                    .skip(i + 1)
                    .take_while(|l| !l.trim().is_empty())
                    .find_map(|l| p.lint.captures(l))
                    .and_then(|l| l.get(1).or_else(|| l.get(2)).map(|m| m.as_str().to_owned()));
                let rule = c.get(2).map(|m| m.as_str().to_owned()).or(lint);
                match rule {
                    Some(rule) => format!("{at} {} {rule}: {}", &c[1], &c[3]),
                    None => format!("{at} {}: {}", &c[1], &c[3]),
                }
            })
        } else if let Some(c) = p.panic.captures(line) {
            let why = lines.get(i + 1).map_or("", |l| l.trim());
            Some(format!("{} test {} panicked: {why}", &c[2], &c[1]))
        } else if let Some(c) = p.py_raise.captures(line) {
            Some(format!("{} {}", &c[1], &c[2]))
        } else if let Some(c) = p.one_line.captures(line) {
            let rule = c.get(3).or_else(|| c.get(2)).map(|m| m.as_str());
            rule.map(|rule| format!("{} {rule}: {}", &c[1], &c[4]))
        } else {
            None
        };
        if let Some(f) = found.filter(|f| !out.contains(f)) {
            out.push(f);
        }
    }
    out.truncate(30);
    out
}

static USEFUL: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?i)(error|fail|panicked|assert|traceback|exception|warning:|expected|not found)")
        .ok()
});

/// From the first line that looks like the reason, a screenful; else the last lines.
pub fn useful_lines(output: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    let start = USEFUL
        .as_ref()
        .and_then(|re| lines.iter().position(|l| re.is_match(l)))
        .unwrap_or_else(|| lines.len().saturating_sub(25));
    let picked = lines[start..lines.len().min(start + 25)].join("\n");
    super::tools::files::cap_chars(picked, REPORT_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_failing_tests_in_common_runners() {
        let pytest = "tests/test_a.py F\nFAILED tests/test_a.py::test_add - AssertionError: 1 != 2\n1 failed";
        assert_eq!(failing_tests(pytest), ["tests/test_a.py::test_add"]);
        let cargo = "running 2 tests\ntest list::shows_items ... FAILED\ntest add ... ok\n";
        assert_eq!(failing_tests(cargo), ["list::shows_items"]);
        assert_eq!(failing_tests("--- FAIL: TestAdd (0.00s)"), ["TestAdd"]);
    }

    #[test]
    fn finds_locations_and_rules_in_what_linters_and_runners_print() {
        let ruff_full = "I001 [*] Import block is un-sorted or un-formatted\n --> a.py:1:1\n  |\n1 | import os\n  |\n\nF401 [*] `os` imported but unused\n --> a.py:1:8\n  |\nhelp: Remove unused import: `os`\n\nFound 2 errors.\n";
        assert_eq!(
            findings(ruff_full),
            [
                "a.py:1:1 I001: Import block is un-sorted or un-formatted",
                "a.py:1:8 F401: `os` imported but unused"
            ]
        );
        let concise = "a.py:1:8: F401 [*] `os` imported but unused\nFound 1 error.";
        assert_eq!(findings(concise), ["a.py:1:8 F401: `os` imported but unused"]);
        let mypy = "pkg/m.py:3: error: Incompatible types in assignment  [assignment]";
        assert_eq!(
            findings(mypy),
            ["pkg/m.py:3 error: Incompatible types in assignment  [assignment]"]
        );
        let clippy = "error: unused variable: `x`\n --> src/lib.rs:1:25\n  |\n  = note: `-D unused-variables` implied by `-D warnings`\n\nerror[E0425]: cannot find value `z`\n --> src/lib.rs:3:5\n\nerror: could not compile `cr` (lib) due to 2 previous errors\n";
        assert_eq!(
            findings(clippy),
            [
                "src/lib.rs:1:25 error unused-variables: unused variable: `x`",
                "src/lib.rs:3:5 error E0425: cannot find value `z`"
            ]
        );
        let lint = "warning: this looks like a bug\n --> src/a.rs:2:1\n  = note: `#[warn(clippy::eq_op)]` on by default\n";
        assert_eq!(findings(lint), ["src/a.rs:2:1 warning clippy::eq_op: this looks like a bug"]);
        let cargo_test = "running 2 tests\n. 1/2\ntests::adds --- FAILED\n\nfailures:\n\n---- tests::adds stdout ----\n\nthread 'tests::adds' (15864) panicked at src/lib.rs:3:33:\nassertion `left == right` failed\n  left: 2\n";
        assert_eq!(failing_tests(cargo_test), ["tests::adds"]);
        assert_eq!(
            findings(cargo_test),
            ["src/lib.rs:3:33 test tests::adds panicked: assertion `left == right` failed"]
        );
        let pytest = "    def test_add():\n>       assert 1 + 1 == 3\nE       assert (1 + 1) == 3\n\ntest_a.py:2: AssertionError\nFAILED test_a.py::test_add - assert (1 + 1) == 3\n1 failed in 0.02s";
        assert_eq!(findings(pytest), ["test_a.py:2 AssertionError"]);
        assert!(findings("Compiling x v0.1.0\nFinished in 1s\nok").is_empty());
    }

    #[test]
    fn useful_lines_start_at_the_reason() {
        let out = "Compiling x\nCompiling y\nerror[E0425]: cannot find value `z`\n --> src/lib.rs:3:5\nmore";
        assert!(useful_lines(out).starts_with("error[E0425]"));
        let quiet = (0..100).map(|i| format!("line {i}")).collect::<Vec<_>>().join("\n");
        assert!(useful_lines(&quiet).starts_with("line 75"));
    }

    #[test]
    fn expands_the_tests_placeholder() {
        assert_eq!(
            expand("pytest -q {tests}", &["tests/test_t001.py".into(), "it's.py".into()]),
            r"pytest -q 'tests/test_t001.py' 'it'\''s.py'"
        );
        assert_eq!(expand("pytest -q {tests}", &[]), "pytest -q");
    }

    #[test]
    fn presets_follow_the_repository() {
        let dir = tempfile::tempdir().unwrap();
        assert!(presets(dir.path()).is_empty());
        std::fs::write(dir.path().join("pyproject.toml"), "").unwrap();
        assert_eq!(
            presets(dir.path()).iter().map(|v| v.name.as_str()).collect::<Vec<_>>(),
            ["ruff", "pytest"]
        );
        std::fs::write(dir.path().join("Cargo.toml"), "").unwrap();
        assert_eq!(presets(dir.path())[1].command, "cargo test --quiet");
    }
}
