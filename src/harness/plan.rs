//! Feature plans: a Tilth feature folder (`overview.md` + `T-NNN-*.md`) or an old `prd.json`.
//!
//! Every error names the file, the line where it can, what is wrong and how to fix it, because
//! a plan is written by hand and a run must not start on a plan that half-parsed.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// One task of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    pub id: String,
    pub title: String,
    /// Markdown: every section of the task file other than the acceptance criteria.
    pub description: String,
    pub criteria: Vec<String>,
    /// Test files this task's acceptance rests on (frontmatter `tests:`), relative to the repo.
    #[serde(default)]
    pub tests: Vec<String>,
}

/// A whole plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// The folder or file it was read from.
    pub source: PathBuf,
    /// The feature's name (the folder's name, or the file's stem).
    pub feature: String,
    pub overview: Option<String>,
    pub tasks: Vec<Task>,
}

/// A plan that cannot be used, said in one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{location}: {problem}; {fix}")]
pub struct PlanError {
    pub location: String,
    pub problem: String,
    pub fix: String,
}

fn err(
    file: &Path,
    line: Option<usize>,
    problem: impl Into<String>,
    fix: impl Into<String>,
) -> PlanError {
    let location = match line {
        Some(l) => format!("{}:{l}", file.display()),
        None => file.display().to_string(),
    };
    PlanError { location, problem: problem.into(), fix: fix.into() }
}

fn valid_id(id: &str) -> bool {
    id.strip_prefix("T-").is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

/// Reads a plan from a feature folder or a `prd.json`.
pub fn load(path: &Path) -> Result<Plan, PlanError> {
    if path.is_dir() {
        load_folder(path)
    } else if path.is_file() {
        load_prd(path)
    } else {
        Err(err(
            path,
            None,
            "no such file or folder",
            "give a feature folder (overview.md + T-NNN-*.md) or a prd.json",
        ))
    }
}

fn read(path: &Path) -> Result<String, PlanError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        err(path, None, format!("cannot read it ({e})"), "check the file is readable UTF-8 text")
    })?;
    Ok(text.strip_prefix('\u{feff}').map(str::to_owned).unwrap_or(text))
}

fn load_folder(dir: &Path) -> Result<Plan, PlanError> {
    let overview_path = dir.join("overview.md");
    if !overview_path.is_file() {
        return Err(err(
            dir,
            None,
            "no overview.md",
            "add overview.md saying why the feature exists and what is in and out of scope",
        ));
    }
    let overview = read(&overview_path)?;
    if overview.trim().is_empty() {
        return Err(err(
            &overview_path,
            Some(1),
            "overview.md is empty",
            "describe the feature and its scope",
        ));
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| {
            err(dir, None, format!("cannot list it ({e})"), "check the folder's permissions")
        })?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            let is_md = p.extension().is_some_and(|e| e.eq_ignore_ascii_case("md"));
            is_md
                && p.is_file()
                && p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("T-"))
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(err(dir, None, "no task files", "add one T-NNN-<slug>.md per task"));
    }
    let mut tasks: Vec<(Task, PathBuf)> = Vec::new();
    for file in files {
        let task = parse_task_file(&file, &read(&file)?)?;
        if let Some((_, other)) = tasks.iter().find(|(t, _)| t.id == task.id) {
            return Err(err(
                &file,
                Some(2),
                format!("duplicate id {} (also in {})", task.id, other.display()),
                "give every task its own id",
            ));
        }
        tasks.push((task, file));
    }
    tasks.sort_by(|a, b| a.0.id.cmp(&b.0.id));
    Ok(Plan {
        source: dir.to_path_buf(),
        feature: dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        overview: Some(overview),
        tasks: tasks.into_iter().map(|(t, _)| t).collect(),
    })
}

/// Parses one task file: a `---` frontmatter of `key: value` lines, then `## ` sections.
pub fn parse_task_file(file: &Path, text: &str) -> Result<Task, PlanError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lines: Vec<&str> = text.lines().collect();
    if lines.first().map(|l| l.trim()) != Some("---") {
        return Err(err(
            file,
            Some(1),
            "no frontmatter",
            "start the file with ---, then `id: T-001` and `title: …`, then ---",
        ));
    }
    let Some(close) = lines.iter().skip(1).position(|l| l.trim() == "---").map(|i| i + 1) else {
        return Err(err(
            file,
            Some(1),
            "the frontmatter is not closed",
            "end it with a line holding only ---",
        ));
    };
    let (mut id, mut title, mut tests) = (None, None, Vec::new());
    for (n, line) in lines.iter().enumerate().take(close).skip(1) {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            let fix = if line.trim_start().starts_with('-') {
                "lists go on one line: `tests: tests/test_a.py, tests/test_b.py`"
            } else {
                "write `key: value`"
            };
            return Err(err(
                file,
                Some(n + 1),
                format!("bad frontmatter line '{}'", line.trim()),
                fix,
            ));
        };
        let value = value.trim().trim_matches('"').trim_matches('\'').to_owned();
        match key.trim().to_ascii_lowercase().as_str() {
            "id" => id = Some((value, n + 1)),
            "title" => title = Some(value),
            "tests" => {
                tests = test_list(&value).map_err(|why| err(file, Some(n + 1), why, TESTS_FIX))?;
            }
            _ => {}
        }
    }
    let Some((id, id_line)) = id else {
        return Err(err(file, Some(2), "missing id", "add `id: T-001` to the frontmatter"));
    };
    if !valid_id(&id) {
        return Err(err(
            file,
            Some(id_line),
            format!("id '{id}' is not of the form T-<digits>"),
            "use an id like T-001",
        ));
    }
    let title = title.filter(|t| !t.is_empty()).ok_or_else(|| {
        err(file, Some(2), format!("{id} has no title"), "add `title: …` to the frontmatter")
    })?;

    let mut sections: Vec<(String, Vec<&str>)> = Vec::new();
    let mut criteria_line = None;
    for (n, line) in lines.iter().enumerate().skip(close + 1) {
        if let Some(heading) = line.strip_prefix("## ") {
            if heading.trim().eq_ignore_ascii_case("acceptance criteria") {
                criteria_line = Some(n + 1);
            }
            sections.push((heading.trim().to_owned(), Vec::new()));
        } else if let Some((_, body)) = sections.last_mut() {
            body.push(line);
        } else if !line.trim().is_empty() {
            sections.push((String::new(), vec![line]));
        }
    }
    let mut criteria = Vec::new();
    let mut description = Vec::new();
    let only_description =
        sections.iter().filter(|(h, _)| !h.eq_ignore_ascii_case("acceptance criteria")).count()
            == 1;
    for (heading, body) in &sections {
        if heading.eq_ignore_ascii_case("acceptance criteria") {
            for line in body {
                let t = line.trim_start();
                if let Some(item) = t.strip_prefix("- ").or_else(|| t.strip_prefix("* ")) {
                    criteria.push(item.trim().to_owned());
                } else if let Some(last) = criteria.last_mut().filter(|_| !t.is_empty()) {
                    last.push(' ');
                    last.push_str(t.trim());
                }
            }
        } else {
            let text = body.join("\n").trim().to_owned();
            if text.is_empty() {
                continue;
            }
            if heading.is_empty()
                || (only_description && heading.eq_ignore_ascii_case("description"))
            {
                description.push(text);
            } else {
                description.push(format!("## {heading}\n{text}"));
            }
        }
    }
    if criteria.is_empty() {
        let line = criteria_line.unwrap_or(close + 2);
        return Err(err(
            file,
            Some(line),
            format!("{id} has no acceptance criteria"),
            "add a `## Acceptance criteria` section with one `- ` bullet per criterion",
        ));
    }
    Ok(Task { id, title, description: description.join("\n\n"), criteria, tests })
}

const TESTS_FIX: &str = "list the task's test files as paths inside the repository, separated by commas: `tests: tests/test_a.py, tests/test_b.py` (a file that does not exist yet is fine)";

/// Reads a `tests:` value: paths inside the repository separated by commas, optionally in
/// brackets and quotes. A file need not exist yet (the worker writes it); a path that leaves
/// the repository, or several paths run together, is an error.
fn test_list(value: &str) -> Result<Vec<String>, String> {
    let inner = value.trim();
    let inner = inner.strip_prefix('[').and_then(|v| v.strip_suffix(']')).unwrap_or(inner);
    let mut out = Vec::new();
    for item in inner.split(',') {
        let item = item.trim().trim_matches(['"', '\'']).trim();
        if item.is_empty() {
            continue;
        }
        test_path(item)?;
        out.push(item.to_owned());
    }
    Ok(out)
}

/// Checks one test path of a plan.
fn test_path(item: &str) -> Result<(), String> {
    if item.split_whitespace().nth(1).is_some() {
        return Err(format!("tests entry '{item}' holds a space"));
    }
    let path = Path::new(item);
    if path.is_absolute() || path.components().any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(format!("tests entry '{item}' is not a path inside the repository"));
    }
    Ok(())
}

#[derive(Deserialize)]
struct PrdEntry {
    id: Option<String>,
    title: Option<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    acceptance_criteria: Vec<String>,
    #[serde(default)]
    tests: Vec<String>,
}

fn load_prd(file: &Path) -> Result<Plan, PlanError> {
    let text = read(file)?;
    let entries: Vec<PrdEntry> = serde_json::from_str(&text).map_err(|e| {
        err(file, Some(e.line()), format!("not a prd.json task array ({e})"), "write a JSON array of {\"id\", \"title\", \"description\", \"acceptance_criteria\"} objects")
    })?;
    if entries.is_empty() {
        return Err(err(file, Some(1), "no tasks", "add at least one task"));
    }
    let mut tasks: Vec<Task> = Vec::new();
    for (i, e) in entries.into_iter().enumerate() {
        let line = line_of_entry(&text, i);
        let id = e.id.filter(|id| valid_id(id)).ok_or_else(|| {
            err(
                file,
                line,
                format!("task #{} has no id of the form T-<digits>", i + 1),
                "give it an id like T-001",
            )
        })?;
        if tasks.iter().any(|t| t.id == id) {
            return Err(err(
                file,
                line,
                format!("duplicate id {id}"),
                "give every task its own id",
            ));
        }
        let title = e
            .title
            .filter(|t| !t.trim().is_empty())
            .ok_or_else(|| err(file, line, format!("{id} has no title"), "add a \"title\""))?;
        if e.acceptance_criteria.iter().all(|c| c.trim().is_empty()) {
            return Err(err(
                file,
                line,
                format!("{id} has no acceptance criteria"),
                "add an \"acceptance_criteria\" list",
            ));
        }
        if let Some(why) = e.tests.iter().find_map(|t| test_path(t).err()) {
            return Err(err(file, line, format!("{id}: {why}"), TESTS_FIX));
        }
        tasks.push(Task {
            id,
            title,
            description: e.description,
            criteria: e.acceptance_criteria,
            tests: e.tests,
        });
    }
    tasks.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(Plan {
        source: file.to_path_buf(),
        feature: file
            .parent()
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        overview: None,
        tasks,
    })
}

/// The line where the `i`-th object of a top-level JSON array starts, for error messages.
fn line_of_entry(text: &str, i: usize) -> Option<usize> {
    let mut depth = 0i32;
    let mut seen = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (pos, c) in text.char_indices() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' if depth == 1 => {
                if seen == i {
                    return Some(text[..pos].matches('\n').count() + 1);
                }
                seen += 1;
                depth += 1;
            }
            '{' | '[' => depth += 1,
            '}' | ']' => depth -= 1,
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(text: &str) -> Result<Task, PlanError> {
        parse_task_file(Path::new("T-001-x.md"), text)
    }

    #[test]
    fn parses_a_task_file() {
        let t = task("\u{feff}---\nID: T-001\ntitle: \"Scaffold\"\ntests: tests/test_t001.py, tests/test_more.py\n---\n\n## Description\nMake it.\n\n## Acceptance criteria\n- one\n* two\n  continued\n\n## Notes\nkeep it small\n").unwrap();
        assert_eq!(t.id, "T-001");
        assert_eq!(t.title, "Scaffold");
        assert_eq!(t.criteria, ["one", "two continued"]);
        assert_eq!(t.description, "## Description\nMake it.\n\n## Notes\nkeep it small");
        assert_eq!(t.tests, ["tests/test_t001.py", "tests/test_more.py"]);
        let flow = task("---\nid: T-002\ntitle: x\ntests: [\"tests/a.py\", 'tests/b.py']\n---\n## Acceptance criteria\n- one\n").unwrap();
        assert_eq!(flow.tests, ["tests/a.py", "tests/b.py"]);
        let sole = task("---\nid: T-001\ntitle: x\n---\n## Description\nJust this.\n## Acceptance criteria\n- a\n").unwrap();
        assert_eq!(sole.description, "Just this.");
    }

    #[test]
    fn errors_name_file_line_and_fix() {
        let e = task("no frontmatter").unwrap_err();
        assert_eq!(
            e.to_string(),
            "T-001-x.md:1: no frontmatter; start the file with ---, then `id: T-001` and `title: …`, then ---"
        );
        assert!(
            task("---\ntitle: x\n---\n")
                .unwrap_err()
                .to_string()
                .contains("missing id; add `id: T-001`")
        );
        assert!(
            task("---\nid: 7\ntitle: x\n---\n")
                .unwrap_err()
                .to_string()
                .starts_with("T-001-x.md:2: id '7'")
        );
        let e = task("---\nid: T-001\ntitle: x\n---\n## Acceptance criteria\n\n").unwrap_err();
        assert_eq!(e.location, "T-001-x.md:5");
        assert!(e.problem.contains("no acceptance criteria"));
        assert!(
            task("---\nid: T-001\ntitle: x\nbroken\n---\n")
                .unwrap_err()
                .to_string()
                .starts_with("T-001-x.md:4: bad frontmatter")
        );
    }

    #[test]
    fn a_tests_list_in_a_wrong_syntax_names_its_line() {
        let yaml = task("---\nid: T-001\ntitle: x\ntests:\n  - tests/a.py\n---\n").unwrap_err();
        assert_eq!(yaml.location, "T-001-x.md:5");
        assert!(yaml.to_string().contains("lists go on one line"), "{yaml}");
        let spaced =
            task("---\nid: T-001\ntitle: x\ntests: tests/a.py tests/b.py\n---\n").unwrap_err();
        assert_eq!(spaced.location, "T-001-x.md:4");
        assert!(
            spaced.to_string().contains("holds a space; list the task's test files"),
            "{spaced}"
        );
        for outside in ["../secret.py", "/etc/passwd"] {
            let e =
                task(&format!("---\nid: T-001\ntitle: x\ntests: {outside}\n---\n")).unwrap_err();
            assert!(e.to_string().contains("is not a path inside the repository"), "{e}");
        }
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("prd.json");
        std::fs::write(&f, "[\n  {\"id\": \"T-001\", \"title\": \"a\", \"acceptance_criteria\": [\"x\"], \"tests\": [\"../x.py\"]}\n]").unwrap();
        assert!(
            load(&f).unwrap_err().to_string().contains("prd.json:2: T-001: tests entry '../x.py'")
        );
    }

    #[test]
    fn prd_json_errors_point_at_the_entry() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("prd.json");
        std::fs::write(&f, "[\n  {\"id\": \"T-001\", \"title\": \"a\", \"acceptance_criteria\": [\"x\"]},\n  {\"id\": \"T-001\", \"title\": \"b\", \"acceptance_criteria\": [\"y\"]}\n]").unwrap();
        assert!(load(&f).unwrap_err().to_string().contains("prd.json:3: duplicate id T-001"));
        std::fs::write(&f, "[\n  {\"id\": \"T-001\",\n").unwrap();
        assert!(load(&f).unwrap_err().to_string().contains("not a prd.json task array"));
        assert!(
            load(&dir.path().join("missing"))
                .unwrap_err()
                .to_string()
                .contains("no such file or folder")
        );
    }
}
