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
    /// The tasks that must be done before this one starts (frontmatter `depends_on:`); `None`
    /// when the task does not say (see [`Plan::is_graph`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depends_on: Option<Vec<String>>,
    /// Work the task's first attempt N times at once and land the best judged one
    /// (frontmatter `best_of:`, 2 to 8; `--best-of` gives it to the tasks that do not say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_of: Option<u32>,
}

/// The fewest and most attempts a best-of task works at once.
pub const BEST_OF: std::ops::RangeInclusive<u32> = 2..=8;

/// The fix for a `best_of` outside [`BEST_OF`].
const BEST_OF_FIX: &str = "write `best_of: N` with N from 2 to 8, or leave it out";

/// Reads a `best_of` value: a whole number from 2 to 8.
pub fn best_of(value: &str) -> Result<u32, String> {
    match value.trim().parse::<u32>() {
        Ok(n) if BEST_OF.contains(&n) => Ok(n),
        _ => Err(format!("best_of '{}' is not a number from 2 to 8", value.trim())),
    }
}

impl Plan {
    /// The feature's name as people wrote it: the overview's first heading, when it has one.
    pub fn title(&self) -> Option<String> {
        let heading =
            self.overview.as_deref()?.lines().find_map(|l| l.trim().strip_prefix("# "))?;
        let heading = heading.split_whitespace().collect::<Vec<_>>().join(" ");
        (!heading.is_empty()).then_some(heading)
    }
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
    /// The seed file `harrow prep` wrote beside the plan (`seed.md`): what the interview
    /// settled — TL;DR, scope notes, blockers, open questions — for the worker as context.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<String>,
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

/// The most of one plan file harrow reads: a plan is prose, never megabytes.
const PLAN_FILE_MAX: u64 = 4 << 20;

/// A plan file's text, read as every file the operator names is ([`crate::safe_io::read_named`]).
fn read_text(path: &Path) -> std::io::Result<String> {
    crate::safe_io::read_named(path, PLAN_FILE_MAX)
}

fn read(path: &Path) -> Result<String, PlanError> {
    let text = read_text(path).map_err(|e| {
        err(
            path,
            None,
            format!("cannot read it ({e})"),
            "give a regular file of UTF-8 text, under 4 MB",
        )
    })?;
    Ok(text.strip_prefix('\u{feff}').map(str::to_owned).unwrap_or(text))
}

fn load_folder(dir: &Path) -> Result<Plan, PlanError> {
    check_folder(dir).map_err(|mut problems| problems.remove(0))
}

/// Checks a plan and returns it, or every problem it has (not only the first), each naming
/// its file, line and fix — what `harrow check` prints.
pub fn check(path: &Path) -> Result<Plan, Vec<PlanError>> {
    if path.is_dir() { check_folder(path) } else { load(path).map_err(|e| vec![e]) }
}

/// The id a task file's name gives: `T-007-slug.md` → `T-007`.
fn file_task_id(file: &Path) -> Option<String> {
    let stem = file.file_stem()?.to_str()?;
    let digits: String =
        stem.strip_prefix("T-")?.chars().take_while(char::is_ascii_digit).collect();
    (!digits.is_empty()).then(|| format!("T-{digits}"))
}

/// The problem of a task file whose name's number is not its id's, when its id is one.
fn misnamed(file: &Path, text: &str) -> Option<PlanError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lines: Vec<&str> = text.lines().collect();
    let close = lines.iter().skip(1).position(|l| l.trim() == "---")? + 1;
    let (given, line) = frontmatter(file, &lines[1..close], &mut Vec::new()).id?;
    let named = file_task_id(file)?;
    (valid_id(&given) && given != named).then(|| {
        err(
            file,
            Some(line),
            format!("the file is named for {named} but its id is {given}"),
            "make the id and the file name agree (the file's number is the task's)",
        )
    })
}

/// The line a problem's location names (`file:line`), for putting a file's problems in order.
fn line_in(location: &str) -> Option<usize> {
    location.rsplit_once(':').and_then(|(_, n)| n.parse().ok())
}

/// The line (from 1) of the first line of `file` that starts with `prefix`, else 1.
fn line_of(file: &Path, prefix: &str) -> usize {
    read_text(file)
        .ok()
        .and_then(|t| t.lines().position(|l| l.trim_start().starts_with(prefix)))
        .map_or(1, |i| i + 1)
}

/// Where `init`'s example text is still in a task, if it is: its title or a criterion.
fn example_text(file: &Path, task: &Task) -> Option<usize> {
    const EXAMPLE: &str = "Replace this with";
    let left =
        task.title.starts_with(EXAMPLE) || task.criteria.iter().any(|c| c.starts_with(EXAMPLE));
    left.then(|| {
        read_text(file)
            .ok()
            .and_then(|t| t.lines().position(|l| l.contains(EXAMPLE)))
            .map_or(1, |i| i + 1)
    })
}

/// Whether a file name is a task's: `T-<digits>-<slug>.md` or `T-<digits>.md`.
fn task_file_name(name: &str) -> bool {
    let Some(stem) = name.strip_suffix(".md") else { return false };
    let Some(rest) = stem.strip_prefix("T-") else { return false };
    let digits = rest.split('-').next().unwrap_or("");
    !digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit())
        && (rest.len() == digits.len() || rest.len() > digits.len() + 1)
}

/// Whether a Markdown file that is not named as a task looks like one: its name starts as a
/// task's would, or it opens with a frontmatter holding an `id:`.
fn looks_like_a_task(path: &Path, name: &str) -> bool {
    if name.to_ascii_lowercase().starts_with("t-") || name.to_ascii_lowercase().starts_with("t_") {
        return true;
    }
    let Ok(text) = read_text(path) else { return false };
    let mut lines = text.trim_start_matches('\u{feff}').lines();
    lines.next().is_some_and(|l| l.trim() == "---")
        && lines
            .take_while(|l| l.trim() != "---")
            .any(|l| l.trim_start().to_ascii_lowercase().starts_with("id:"))
}

fn check_folder(dir: &Path) -> Result<Plan, Vec<PlanError>> {
    let mut problems = Vec::new();
    let overview_path = dir.join("overview.md");
    // Anything standing there is read (a FIFO or a device is refused as what it is).
    let overview = if overview_path.exists() {
        match read(&overview_path) {
            Ok(text) if text.trim().is_empty() => {
                problems.push(err(
                    &overview_path,
                    Some(1),
                    "overview.md is empty",
                    "describe the feature and its scope",
                ));
                None
            }
            Ok(text) => Some(text),
            Err(e) => {
                problems.push(e);
                None
            }
        }
    } else {
        problems.push(err(
            dir,
            None,
            "no overview.md",
            "add overview.md saying why the feature exists and what is in and out of scope",
        ));
        None
    };
    let entries: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(list) => list.filter_map(Result::ok).map(|e| e.path()).collect(),
        Err(e) => {
            return Err(vec![err(
                dir,
                None,
                format!("cannot list it ({e})"),
                "check the folder's permissions",
            )]);
        }
    };
    let mut files = Vec::new();
    for path in entries {
        let Some(name) = path.file_name().and_then(|n| n.to_str()).map(str::to_owned) else {
            continue;
        };
        let is_md = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("md"));
        // Only folders are passed over: a task file that is not a regular file (a FIFO, a
        // device) is read, and refused as what it is, never left out of the plan unsaid.
        if !is_md || path.is_dir() || name.eq_ignore_ascii_case("overview.md") {
            continue;
        }
        if task_file_name(&name) {
            files.push(path);
        } else if looks_like_a_task(&path, &name) {
            problems.push(err(
                &path,
                Some(1),
                format!("{name} looks like a task but is not read as one: task files are named T-<number>-<slug>.md"),
                "rename it, for example to T-001-my-task.md (or move it out of the plan folder)",
            ));
        }
    }
    files.sort();
    if files.is_empty() && problems.iter().all(|p| !p.problem.contains("looks like a task")) {
        problems.push(err(dir, None, "no task files", "add one T-NNN-<slug>.md per task"));
    }
    let mut tasks: Vec<(Task, PathBuf)> = Vec::new();
    for file in files {
        let text = match read(&file) {
            Ok(text) => text,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        // The file's name and its id are told apart whatever else the file lacks, and its
        // problems come in the order of its lines.
        let misnamed = misnamed(&file, &text);
        let task = match parse_task_file(&file, &text) {
            Ok(task) if misnamed.is_none() => task,
            parsed => {
                let mut found = parsed.err().unwrap_or_default();
                found.extend(misnamed);
                found.sort_by_key(|p| line_in(&p.location));
                problems.extend(found);
                continue;
            }
        };
        if let Some(line) = example_text(&file, &task) {
            problems.push(err(
                &file,
                Some(line),
                "not ready: still the example text",
                "write the task's own title and acceptance criteria in place of the example",
            ));
        }
        if let Some((_, other)) = tasks.iter().find(|(t, _)| t.id == task.id) {
            problems.push(err(
                &file,
                Some(2),
                format!("duplicate id {} (also in {})", task.id, other.display()),
                "give every task its own id",
            ));
            continue;
        }
        tasks.push((task, file));
    }
    tasks.sort_by(|a, b| a.0.id.cmp(&b.0.id));
    let files: Vec<(String, PathBuf)> =
        tasks.iter().map(|(t, f)| (t.id.clone(), f.clone())).collect();
    let plan = Plan {
        source: dir.to_path_buf(),
        feature: String::new(),
        overview: None,
        tasks: tasks.iter().map(|(t, _)| t.clone()).collect(),
        seed: None,
    };
    for g in plan.graph_problems() {
        let file = files.iter().find(|(id, _)| *id == g.task).map(|(_, f)| f.clone());
        let file = file.unwrap_or_else(|| dir.to_path_buf());
        let line = line_of(&file, "depends_on:");
        problems.push(err(&file, Some(line), g.problem, g.fix));
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(Plan {
        source: dir.to_path_buf(),
        feature: dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        overview,
        tasks: tasks.into_iter().map(|(t, _)| t).collect(),
        seed: read_text(&dir.join("seed.md")).ok().filter(|s| !s.trim().is_empty()),
    })
}

/// The skeleton `harrow init` writes: an overview and one example task with every field,
/// which `check` accepts as it is.
pub const SKELETON: [(&str, &str); 2] = [
    ("overview.md", include_str!("../../assets/init/overview.md")),
    ("T-001-example.md", include_str!("../../assets/init/T-001-example.md")),
];

/// Parses one task file: a `---` frontmatter of `key: value` lines, then `## ` sections.
/// Every problem the file has is reported, each with its line, not only the first.
pub fn parse_task_file(file: &Path, text: &str) -> Result<Task, Vec<PlanError>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lines: Vec<&str> = text.lines().collect();
    if lines.first().map(|l| l.trim()) != Some("---") {
        return Err(vec![err(
            file,
            Some(1),
            "no frontmatter",
            "start the file with ---, then `id: T-001` and `title: …`, then ---",
        )]);
    }
    let Some(close) = lines.iter().skip(1).position(|l| l.trim() == "---").map(|i| i + 1) else {
        return Err(vec![err(
            file,
            Some(1),
            "the frontmatter is not closed",
            "end it with a line holding only ---",
        )]);
    };
    let mut problems = Vec::new();
    let front = frontmatter(file, &lines[1..close], &mut problems);
    let id = match front.id {
        Some((id, line)) if !valid_id(&id) => {
            problems.push(err(
                file,
                Some(line),
                format!("id '{id}' is not of the form T-<digits>"),
                "use an id like T-001",
            ));
            id
        }
        Some((id, _)) => id,
        None => {
            problems.push(err(file, Some(2), "missing id", "add `id: T-001` to the frontmatter"));
            "the task".to_owned()
        }
    };
    let title = front.title.filter(|t| !t.is_empty());
    if title.is_none() {
        problems.push(err(
            file,
            Some(2),
            format!("{id} has no title"),
            "add `title: …` to the frontmatter",
        ));
    }
    let (description, criteria, criteria_line) = body(&lines, close);
    if criteria.is_empty() {
        problems.push(err(
            file,
            Some(criteria_line.unwrap_or(close + 2)),
            format!("{id} has no acceptance criteria"),
            "add a `## Acceptance criteria` section with one `- ` bullet per criterion",
        ));
    }
    match title {
        Some(title) if problems.is_empty() => Ok(Task {
            id,
            title,
            description,
            criteria,
            tests: front.tests,
            depends_on: front.depends_on,
            best_of: front.best_of,
        }),
        _ => {
            // In the order of the file's lines, as a person fixes them.
            problems.sort_by_key(|p| line_in(&p.location));
            Err(problems)
        }
    }
}

/// What a task file's frontmatter says.
#[derive(Default)]
struct Frontmatter {
    /// The id and its line.
    id: Option<(String, usize)>,
    title: Option<String>,
    tests: Vec<String>,
    depends_on: Option<Vec<String>>,
    best_of: Option<u32>,
}

/// Reads the frontmatter's lines (the first is the file's line 2); each bad line is a problem
/// and the reading goes on.
fn frontmatter(file: &Path, lines: &[&str], problems: &mut Vec<PlanError>) -> Frontmatter {
    let mut front = Frontmatter::default();
    for (n, line) in lines.iter().enumerate().map(|(i, l)| (i + 2, l)) {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            let fix = if line.trim_start().starts_with('-') {
                "lists go on one line: `tests: tests/test_a.py, tests/test_b.py`"
            } else {
                "write `key: value`"
            };
            problems.push(err(
                file,
                Some(n),
                format!("bad frontmatter line '{}'", line.trim()),
                fix,
            ));
            continue;
        };
        let value = value.trim().trim_matches('"').trim_matches('\'').to_owned();
        match key.trim().to_ascii_lowercase().as_str() {
            "id" => front.id = Some((value, n)),
            "title" => front.title = Some(value),
            "tests" => match test_list(&value) {
                Ok(tests) => front.tests = tests,
                Err(why) => problems.push(err(file, Some(n), why, TESTS_FIX)),
            },
            "best_of" | "best-of" | "bestof" => match best_of(&value) {
                Ok(n) => front.best_of = Some(n),
                Err(why) => problems.push(err(file, Some(n), why, BEST_OF_FIX)),
            },
            "depends_on" | "depends-on" | "dependson" => match id_list(&value) {
                Ok(ids) => front.depends_on = Some(ids),
                Err(why) => problems.push(err(
                    file,
                    Some(n),
                    why,
                    "list task ids: `depends_on: [T-001, T-003]`",
                )),
            },
            _ => {}
        }
    }
    front
}

/// The body after the frontmatter (which closes at `close`): the description, the acceptance
/// criteria and the line of their heading.
fn body(lines: &[&str], close: usize) -> (String, Vec<String>, Option<usize>) {
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
    (description.join("\n\n"), criteria, criteria_line)
}

/// Reads a `depends_on:` value: task ids separated by commas, optionally in brackets and
/// quotes; `[]` (or nothing) is a task that waits for nothing.
fn id_list(value: &str) -> Result<Vec<String>, String> {
    frontmatter_list(value, |item| {
        if valid_id(item) {
            Ok(())
        } else {
            Err(format!("depends_on entry '{item}' is not a task id of the form T-<digits>"))
        }
    })
}

/// A frontmatter list: items separated by commas, optionally in brackets and quotes, each
/// held to `check`; empty items are left out.
fn frontmatter_list(
    value: &str,
    check: impl Fn(&str) -> Result<(), String>,
) -> Result<Vec<String>, String> {
    let inner = value.trim();
    let inner = inner.strip_prefix('[').and_then(|v| v.strip_suffix(']')).unwrap_or(inner);
    let mut out = Vec::new();
    for item in inner.split(',') {
        let item = item.trim().trim_matches(['"', '\'']).trim();
        if item.is_empty() {
            continue;
        }
        check(item)?;
        out.push(item.to_owned());
    }
    Ok(out)
}

const TESTS_FIX: &str = "list the task's test files as paths inside the repository, separated by commas: `tests: tests/test_a.py, tests/test_b.py` (a file that does not exist yet is fine)";

/// Reads a `tests:` value: paths inside the repository separated by commas, optionally in
/// brackets and quotes. A file need not exist yet (the worker writes it); a path that leaves
/// the repository, or several paths run together, is an error.
fn test_list(value: &str) -> Result<Vec<String>, String> {
    frontmatter_list(value, check_test_path)
}

/// Whether a `tests:` entry is a path inside the repository; the reason when it is not.
pub fn check_test_path(item: &str) -> Result<(), String> {
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
    #[serde(default, rename = "dependsOn", alias = "depends_on")]
    depends_on: Option<Vec<String>>,
    #[serde(default, rename = "bestOf", alias = "best_of")]
    best_of: Option<u32>,
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
        if let Some(why) = e.tests.iter().find_map(|t| check_test_path(t).err()) {
            return Err(err(file, line, format!("{id}: {why}"), TESTS_FIX));
        }
        if let Some(n) = e.best_of.filter(|n| !BEST_OF.contains(n)) {
            let why = format!("{id}: bestOf {n} is not a number from 2 to 8");
            return Err(err(file, line, why, BEST_OF_FIX));
        }
        tasks.push(Task {
            id,
            title,
            description: e.description,
            criteria: e.acceptance_criteria,
            tests: e.tests,
            depends_on: e.depends_on,
            best_of: e.best_of,
        });
    }
    let entry_order: Vec<String> = tasks.iter().map(|t| t.id.clone()).collect();
    tasks.sort_by(|a, b| a.id.cmp(&b.id));
    let plan = Plan {
        source: file.to_path_buf(),
        feature: String::new(),
        overview: None,
        tasks: tasks.clone(),
        seed: None,
    };
    if let Some(g) = plan.graph_problems().into_iter().next() {
        let at = entry_order.iter().position(|id| *id == g.task).unwrap_or(0);
        return Err(err(file, line_of_entry(&text, at), g.problem, g.fix));
    }
    Ok(Plan {
        source: file.to_path_buf(),
        feature: file
            .parent()
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        overview: None,
        tasks,
        seed: None,
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
        parse_task_file(Path::new("T-001-x.md"), text).map_err(|mut all| all.remove(0))
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
    fn task_file_names() {
        for good in ["T-001-x.md", "T-1.md", "T-12-two-words.md"] {
            assert!(task_file_name(good), "{good}");
        }
        for bad in ["t-001-x.md", "T-x.md", "T-001x.md", "T-.md", "T-001-.md", "task-1.md"] {
            assert!(!task_file_name(bad), "{bad}");
        }
    }

    #[test]
    fn every_problem_is_reported_and_a_misnamed_task_is_never_dropped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("overview.md"), "# F\n").unwrap();
        std::fs::write(
            dir.path().join("T-001-a.md"),
            "---\nid: T-001\ntitle: a\n---\n## Acceptance criteria\n- x\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("t-002-b.md"), "---\nid: T-002\ntitle: b\n---\n").unwrap();
        std::fs::write(dir.path().join("task3.md"), "---\nid: T-003\ntitle: c\n---\n").unwrap();
        std::fs::write(dir.path().join("T-004-d.md"), "---\nid: T-004\n---\n").unwrap();
        std::fs::write(dir.path().join("NOTES.md"), "just notes\n").unwrap();
        let problems = check(dir.path()).unwrap_err();
        let text: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(problems.len(), 4, "T-004 lacks both a title and criteria: {text:#?}");
        assert!(text.iter().any(|t| t.contains("t-002-b.md looks like a task")), "{text:#?}");
        assert!(text.iter().any(|t| t.contains("task3.md looks like a task")), "{text:#?}");
        assert!(text.iter().any(|t| t.contains("T-004 has no title")), "{text:#?}");
        assert!(load(dir.path()).is_err(), "run refuses the plan too");
    }

    #[test]
    fn the_skeleton_is_well_formed_but_not_ready_until_its_example_text_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in SKELETON {
            std::fs::write(dir.path().join(name), text.replace("{feature}", "f")).unwrap();
        }
        let problems = check(dir.path()).unwrap_err();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].to_string().contains(":4: not ready: still the example text"),
            "{}",
            problems[0]
        );
        let task = dir.path().join(SKELETON[1].0);
        let text = std::fs::read_to_string(&task).unwrap();
        let filled = text
            .replace("Replace this with what the task delivers, in a few words", "Add search")
            .replace(
                "Replace this with one observable fact",
                "search prints matches; one observable fact",
            );
        std::fs::write(&task, filled).unwrap();
        let plan = check(dir.path()).unwrap();
        assert_eq!(plan.tasks.len(), 1);
        assert_eq!(plan.tasks[0].criteria.len(), 2);
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
    fn a_misnamed_file_without_a_title_says_both_in_the_order_of_its_lines() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("overview.md"), "# F\n").unwrap();
        let text = "---\nid: T-003\nbest_of: 1\n---\n## Description\nx\n";
        std::fs::write(dir.path().join("T-001-x.md"), text).unwrap();
        let all = check(dir.path()).unwrap_err();
        let said: Vec<String> = all.iter().map(ToString::to_string).collect();
        assert!(said.iter().any(|s| s.contains("named for T-001 but its id is T-003")), "{said:?}");
        assert!(said.iter().any(|s| s.contains("has no title")), "{said:?}");
        let lines: Vec<usize> = all
            .iter()
            .filter_map(|p| p.location.rsplit_once(':').and_then(|(_, n)| n.parse().ok()))
            .collect();
        assert!(lines.windows(2).all(|w| w[0] <= w[1]), "{said:?}");
    }

    #[test]
    fn best_of_is_read_from_2_to_8_and_anything_else_names_its_line_and_fix() {
        let body = "## Acceptance criteria\n- works\n";
        let ok = task(&format!("---\nid: T-001\ntitle: x\nbest_of: 3\n---\n{body}")).unwrap();
        assert_eq!(ok.best_of, Some(3));
        for bad in ["1", "9", "three", "-2", "2.5"] {
            let e = task(&format!("---\nid: T-001\ntitle: x\nbest_of: {bad}\n---\n{body}"))
                .unwrap_err();
            assert_eq!(e.location, "T-001-x.md:4", "{e}");
            assert!(e.to_string().contains("from 2 to 8"), "{e}");
        }
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("prd.json");
        std::fs::write(&f, "[\n  {\"id\": \"T-001\", \"title\": \"a\", \"acceptance_criteria\": [\"x\"], \"bestOf\": 12}\n]").unwrap();
        assert!(load(&f).unwrap_err().to_string().contains("prd.json:2: T-001: bestOf 12"));
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
