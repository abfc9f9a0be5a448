//! Evidence an accept rests on: the witnesses an evaluator cites for each acceptance criterion
//! are checked by harrow itself — a validator against this attempt's run, a code quote against
//! the judged tree, a test by running it on the task's base and on the attempt. What is here
//! decides from what was found; running the tests is the lane's (`run/witness.rs`).

use crate::harness::verdict::{Witness, WitnessKind};
use crate::session::event::WitnessSeen;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::sync::LazyLock;

/// `[gate] evidence`: what an accept with a criterion no witness stands for gets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum EvidenceMode {
    /// Sent back to the evaluator once with what failed, then held for the operator.
    #[default]
    Required,
    /// Landed, and marked as accepted without evidence.
    Warn,
    /// Not checked: the evaluator's word is taken.
    Off,
}

/// The most lines one code witness may cite.
const CODE_MAX_LINES: usize = 200;

/// How long one run of a cited test may take on each tree, unless `[gate] test_secs` says.
pub const TEST_SECS: u64 = 120;

/// Where a code witness points: a path in the tree and a range of its lines, from 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeAt {
    pub path: String,
    pub first: usize,
    pub last: usize,
}

/// A path as a witness may give it: relative, inside the tree, made of the characters file
/// names in a repository are made of.
fn tree_path(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && path.split('/').all(|c| !c.is_empty() && c != "." && c != "..")
        && path.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-/+@".contains(&b))
}

/// Reads `FILE:LINE` or `FILE:LINE-LINE`.
pub fn code_at(at: &str) -> Result<CodeAt, String> {
    let (path, lines) = at.rsplit_once(':').ok_or("not FILE:LINE or FILE:LINE-LINE")?;
    let (first, last) = lines.split_once('-').unwrap_or((lines, lines));
    let number = |n: &str| n.trim().parse::<usize>().ok().filter(|n| *n >= 1);
    let (Some(first), Some(last)) = (number(first), number(last)) else {
        return Err("the lines are not LINE or LINE-LINE, from 1".into());
    };
    if last < first || last - first >= CODE_MAX_LINES {
        return Err(format!("the range must run forward and hold at most {CODE_MAX_LINES} lines"));
    }
    if !tree_path(path) {
        return Err("the path is not a file inside the tree".into());
    }
    Ok(CodeAt { path: path.to_owned(), first, last })
}

/// Lines as a quote is compared: each without its line end and trailing blanks, the block
/// without blank lines around it.
fn lines_of(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let start = lines.iter().position(|l| !l.is_empty()).unwrap_or(lines.len());
    let end = lines.iter().rposition(|l| !l.is_empty()).map_or(start, |e| e + 1);
    lines[start..end].to_vec()
}

/// Whether a code witness reads so in the judged tree. `text` is the file there (`None`: no
/// such file; not UTF-8 text: a binary file); `changed` whether the task's diff changes it.
pub fn check_code(
    at: &CodeAt,
    quote: &str,
    text: Option<&[u8]>,
    changed: bool,
) -> Result<String, String> {
    if !changed {
        return Err(format!("{} is not a file the task's diff changes", at.path));
    }
    let Some(bytes) = text else {
        return Err(format!("{} is not in the judged tree", at.path));
    };
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Err(format!("{} is a binary file: nothing in it can be quoted", at.path));
    };
    let all: Vec<&str> = text.lines().collect();
    if at.last > all.len() {
        return Err(format!("{} has {} lines, not {}", at.path, all.len(), at.last));
    }
    let cited: Vec<&str> = all[at.first - 1..at.last].iter().map(|l| l.trim_end()).collect();
    let cited = lines_of(&cited.join("\n")).join("\n");
    let quoted = lines_of(quote).join("\n");
    if quoted.is_empty() {
        return Err("the quote is empty".into());
    }
    if cited == quoted {
        return Ok("the lines read as quoted".into());
    }
    let squeeze = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    if squeeze(&cited) == squeeze(&quoted) {
        return Ok("the lines read as quoted, but for whitespace".into());
    }
    let shown: String = cited.chars().take(200).collect();
    Err(format!("the lines read {shown:?}, not the quote"))
}

/// How a test id is run, by the kind of test it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestRun {
    /// pytest's node id; its file is carried onto the base, as a test patch is.
    Pytest { file: String },
    /// A Rust test's name, through `cargo test`.
    Cargo,
}

static PYTEST_ID: LazyLock<Option<regex::Regex>> = LazyLock::new(|| {
    regex::Regex::new(r"^([A-Za-z0-9_./-]+\.py)((::[A-Za-z0-9_.\-]+)(\[[A-Za-z0-9_.,\-]*\])?)*$")
        .ok()
});
static RUST_TEST: LazyLock<Option<regex::Regex>> = LazyLock::new(|| {
    regex::Regex::new(r"^[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)*$").ok()
});

/// What kind of test `id` names, or why harrow will not run it. Only ids of these two
/// shapes are run: anything else (a shell word, an option, a path out of the tree) is refused
/// before it reaches a shell.
pub fn test_run(id: &str, cargo: bool) -> Result<TestRun, String> {
    if let Some(c) = PYTEST_ID.as_ref().and_then(|r| r.captures(id)) {
        let file = c[1].to_owned();
        if !tree_path(&file) {
            return Err("the test's file is not inside the tree".into());
        }
        return Ok(TestRun::Pytest { file });
    }
    if cargo && RUST_TEST.as_ref().is_some_and(|r| r.is_match(id)) {
        return Ok(TestRun::Cargo);
    }
    Err(if cargo {
        "not a test id harrow can run: give tests/test_x.py::test_y (pytest) or a Rust test's name (cargo test)".into()
    } else {
        "not a test id harrow can run: give tests/test_x.py::test_y (pytest)".into()
    })
}

/// The command that runs one test (the id already passed [`test_run`]).
pub fn test_command(id: &str, run: &TestRun) -> String {
    let id = shlex::try_quote(id).map_or_else(|_| String::from("''"), std::borrow::Cow::into_owned);
    match run {
        TestRun::Pytest { .. } => {
            format!("python3 -m pytest -q -p no:cacheprovider -x --no-header {id}")
        }
        TestRun::Cargo => format!("cargo test --quiet {id}"),
    }
}

/// Whether a run of one test passed: its exit, and for cargo that a test of that name ran.
pub fn test_passed(run: &TestRun, exit: Option<i32>, output: &str) -> bool {
    if exit != Some(0) {
        return false;
    }
    match run {
        TestRun::Pytest { .. } => true,
        TestRun::Cargo => output.lines().any(|l| {
            l.trim_start()
                .strip_prefix("test result: ok. ")
                .and_then(|r| r.split_whitespace().next())
                .and_then(|n| n.parse::<u64>().ok())
                .is_some_and(|n| n > 0)
        }),
    }
}

/// The criteria (by number) no seen witness stands for, of `count`.
pub fn unwitnessed(count: usize, seen: &[WitnessSeen]) -> Vec<u64> {
    (1..=count as u64).filter(|n| !seen.iter().any(|w| w.criterion == *n && w.seen)).collect()
}

/// A witness's record before it is checked: what it cites.
pub fn record(w: &Witness) -> WitnessSeen {
    let (kind, cited) = match &w.kind {
        WitnessKind::Validator { name, passed } => (
            "validator",
            format!(
                "{} {}",
                crate::printable::line(name),
                if *passed { "passed" } else { "failed" }
            ),
        ),
        WitnessKind::Test { id } => ("test", crate::printable::line(id)),
        WitnessKind::Code { at, .. } => ("code", crate::printable::line(at)),
    };
    WitnessSeen { criterion: w.criterion as u64, kind: kind.into(), cited, seen: false, why: None }
}

/// What the evaluator is told when an accept's evidence did not hold: each criterion without a
/// seen witness, and why each witness it gave failed.
pub fn sent_back(criteria: &[String], seen: &[WitnessSeen], missing: &[u64]) -> String {
    let mut out = String::from(
        "harrow checked the witnesses of your accept, and these acceptance criteria have none that holds:\n",
    );
    for n in missing {
        let text = criteria.get(*n as usize - 1).map_or("(no such criterion)", String::as_str);
        let _ = writeln!(out, "- criterion {n}: {text}");
        for w in seen.iter().filter(|w| w.criterion == *n) {
            let why = w.why.as_deref().unwrap_or("not seen");
            let _ = writeln!(out, "  - {} {}: {why}", w.kind, w.cited);
        }
    }
    out.push_str(
        "Give a witness harrow can check for each (a test that fails on the task's base and passes on the work, the exact lines of the diff that meet it, or a validator of this attempt), or reject if the criterion is not met. Call submit_verdict once.",
    );
    out
}

/// The words for an accept held or marked for want of evidence: `accepted without evidence for:
/// criterion 2 (…), criterion 3 (…)`.
pub fn without_evidence(criteria: &[String], missing: &[u64]) -> String {
    let named: Vec<String> = missing
        .iter()
        .map(|n| {
            let text = criteria.get(*n as usize - 1).map_or("", String::as_str);
            let text: String = text.chars().take(80).collect();
            format!("criterion {n} ({text})")
        })
        .collect();
    format!("accepted without evidence for: {}", named.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_pointer_is_a_path_inside_the_tree_and_a_forward_range() {
        assert_eq!(
            code_at("src/calc.py:3-4").unwrap(),
            CodeAt { path: "src/calc.py".into(), first: 3, last: 4 }
        );
        assert_eq!(code_at("a.py:7").unwrap().last, 7);
        for bad in [
            "../etc/passwd:1",
            "/etc/passwd:1",
            "a.py:0",
            "a.py:5-3",
            "a.py",
            "a.py:x",
            "a b.py:1",
            "a.py:1-999",
        ] {
            assert!(code_at(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_quote_holds_only_where_the_lines_read_so_in_a_changed_text_file() {
        let at = code_at("calc.py:2-3").unwrap();
        let text = b"import os\ndef add(a, b):\n    return a + b\n";
        assert!(check_code(&at, "def add(a, b):\n    return a + b", Some(text), true).is_ok());
        let loose = check_code(&at, "def add(a,  b):\n return a + b\n", Some(text), true);
        assert!(loose.unwrap().contains("but for whitespace"));
        assert!(check_code(&at, "def add(a, b):\n    return a - b", Some(text), true).is_err());
        assert!(
            check_code(&at, "def add(a, b):", Some(text), false)
                .unwrap_err()
                .contains("not a file the task's diff changes")
        );
        assert!(check_code(&at, "x", None, true).unwrap_err().contains("not in the judged tree"));
        assert!(
            check_code(&at, "x", Some(&[0xff, 0xfe, 0, 1]), true).unwrap_err().contains("binary")
        );
        let far = code_at("calc.py:9").unwrap();
        assert!(check_code(&far, "x", Some(text), true).unwrap_err().contains("has 3 lines"));
        assert!(check_code(&at, "  \n", Some(text), true).unwrap_err().contains("empty"));
    }

    #[test]
    fn only_test_ids_of_known_shapes_run_and_never_as_shell_words() {
        assert_eq!(
            test_run("tests/test_calc.py::test_add", false).unwrap(),
            TestRun::Pytest { file: "tests/test_calc.py".into() }
        );
        assert!(test_run("tests/test_calc.py::TestX::test_y[1-2]", false).is_ok());
        assert_eq!(test_run("parse::tests::empty_file", true).unwrap(), TestRun::Cargo);
        for hostile in [
            "tests/t.py; rm -rf ~",
            "tests/t.py::x && curl evil",
            "$(touch /tmp/x)",
            "--co",
            "-k x",
            "../t.py::x",
            "/tmp/t.py::x",
            "t.py::x`id`",
            "name with space",
        ] {
            assert!(test_run(hostile, true).is_err(), "{hostile}");
        }
        assert!(test_run("empty_file", false).is_err(), "a Rust name without a Cargo project");
        let cmd = test_command("tests/t.py::x", &TestRun::Pytest { file: "tests/t.py".into() });
        assert!(cmd.ends_with(" tests/t.py::x"), "{cmd}");
    }

    #[test]
    fn a_cargo_test_passes_only_when_a_test_of_that_name_ran() {
        let ok = "running 1 test\n.\ntest result: ok. 1 passed; 0 failed; 0 ignored\n";
        let none = "running 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored\n";
        assert!(test_passed(&TestRun::Cargo, Some(0), ok));
        assert!(!test_passed(&TestRun::Cargo, Some(0), none));
        assert!(!test_passed(&TestRun::Cargo, Some(101), ok));
        assert!(test_passed(&TestRun::Pytest { file: "t.py".into() }, Some(0), ""));
        assert!(!test_passed(&TestRun::Pytest { file: "t.py".into() }, None, ""));
    }

    #[test]
    fn a_criterion_is_witnessed_only_by_a_seen_witness() {
        let seen = vec![
            WitnessSeen {
                criterion: 1,
                kind: "code".into(),
                cited: "a.py:1".into(),
                seen: true,
                why: None,
            },
            WitnessSeen {
                criterion: 2,
                kind: "test".into(),
                cited: "t.py::x".into(),
                seen: false,
                why: Some("passes on the base too".into()),
            },
        ];
        assert_eq!(unwitnessed(3, &seen), [2, 3]);
        let criteria = vec!["one".to_owned(), "two".to_owned(), "three".to_owned()];
        let told = sent_back(&criteria, &seen, &[2, 3]);
        assert!(
            told.contains("criterion 2: two") && told.contains("passes on the base too"),
            "{told}"
        );
        assert_eq!(
            without_evidence(&criteria, &[3]),
            "accepted without evidence for: criterion 3 (three)"
        );
    }
}
