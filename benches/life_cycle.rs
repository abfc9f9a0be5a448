//! Tilth's life cycle in 35 model calls, run by the `harrow` binary with its default settings:
//! the 4-task todo-cli plan worked as Tilth 0.2.0's recorded session worked it — every tool,
//! parallel calls, a `sudo` the deny rules stop, arguments that are not JSON, a quiet turn and
//! its nudge, a case that does not parse, an evaluator that answers in prose and then rejects,
//! an empty reply and a 500 asked again, a task stopped at its cap, the operator's reject, a
//! resume. Three processes (`run`, `control`, `resume`); what each cost harrow itself and what
//! the commands it ran for the worker cost (python3, the shell, the sandbox), apart.
//! `cargo bench --bench life_cycle`

// A bench that cannot set up its input has nothing to measure: failing loudly is right.
#![allow(clippy::expect_used, clippy::unwrap_used)]

#[path = "support/mod.rs"]
mod support;

use harrow::brain::scripted::{ScriptedServer, parse_script};
use serde_json::{Value, json};
use std::path::Path;

/// Model calls the scripted life cycle makes (failed calls asked again included).
const CALLS: usize = 35;
fn main() {
    // `LIFE_CYCLE_RUNS=1` for a profile of one.
    let runs: usize =
        std::env::var("LIFE_CYCLE_RUNS").ok().and_then(|n| n.parse().ok()).unwrap_or(7);
    // Made first and run on once settled, as `loop_overhead`'s short runs (a repository made
    // the instant before a run has its hooks and config read again at every record).
    let made: Vec<tempfile::TempDir> = (0..runs).map(|_| prepare()).collect();
    std::thread::sleep(std::time::Duration::from_millis(2_500));
    let mut all: Vec<Figures> = made.iter().map(|tmp| life_cycle(tmp.path())).collect();
    all.sort_by(|a, b| a.own.total_cmp(&b.own));
    let Figures { own, low, high, commands } = all[runs / 2];
    println!(
        "Tilth's life cycle, {CALLS} model calls in 3 processes, default settings, median of {runs}: harrow's own CPU {own:.2} ms per model call (between {low:.2} and {high:.2} as the kernel's 10 ms ticks allow; runs {:.2}–{:.2}); the commands it ran for the worker, {commands:.2} ms more",
        all[0].own,
        all[runs - 1].own
    );
}

/// One life cycle's figures, per model call, in ms.
#[derive(Clone, Copy)]
struct Figures {
    /// harrow's own CPU, and the least and most it can be.
    own: f64,
    low: f64,
    high: f64,
    /// What the commands it ran for the worker took.
    commands: f64,
}

/// A run's folder: the todo-cli project (its AGENTS.md, no package yet) and the plan.
fn prepare() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/plans");
    std::fs::copy(fixtures.join("AGENTS.md"), repo.join("AGENTS.md")).unwrap();
    support::git(&repo, &["init", "-q", "-b", "main"]);
    support::git(&repo, &["add", "-A"]);
    support::git(&repo, &["commit", "-qm", "init"]);
    let plan = tmp.path().join("plan");
    std::fs::create_dir_all(&plan).unwrap();
    for entry in std::fs::read_dir(fixtures.join("todo-cli")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), plan.join(entry.file_name())).unwrap();
    }
    tmp
}

/// Runs the life cycle in `root`: harrow's own CPU per model call and its commands', in ms.
fn life_cycle(root: &Path) -> Figures {
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let server = runtime
        .block_on(ScriptedServer::start(parse_script(&script().to_string()).unwrap(), true))
        .unwrap();
    let (repo, plan) = (root.join("repo"), root.join("plan"));
    let run = support::harrow_run(root, &server.base_url(), &plan, &repo)
        .args(["--headless", "--max-attempts", "2"])
        .output_measured();
    assert!(!run.0.status.success(), "the run stops at T-003's cap: {}", run.0.text());
    let session = only_session(root);
    let control = support::harrow(root, &server.base_url())
        .args(["control", &session, "reject", "--task", "T-003"])
        .args(["--reason", "Map every criterion of `list` to the code that meets it."])
        .output_measured();
    assert!(control.0.status.success(), "{}", control.0.text());
    let resume = support::harrow(root, &server.base_url())
        .args(["resume", &session, "--headless", "--repo", repo.to_str().unwrap()])
        .output_measured();
    assert!(resume.0.status.success(), "{}", resume.0.text());
    let asked: Vec<String> = server
        .received()
        .iter()
        .map(|r| format!("{} {} {} {}", r.role, r.task, r.attempt, r.turn))
        .collect();
    assert_eq!(asked.len(), CALLS, "{}{asked:#?}", run.0.text());
    let per_call = |ms: f64| ms / CALLS as f64;
    let each = [("run", &run.1), ("control", &control.1), ("resume", &resume.1)];
    if std::env::var_os("LIFE_CYCLE_EACH").is_some() {
        for (name, c) in each {
            let (low, high) = c.own_bounds();
            let (kernel_low, kernel_high) = c.own_system_bounds();
            eprintln!(
                "{name}: {:.1} ms with its commands; its own {:.1} (between {low:.1} and {high:.1}), of which the kernel's between {kernel_low:.1} and {kernel_high:.1}",
                c.whole,
                c.own_ms()
            );
        }
    }
    let sum = |f: &dyn Fn(&support::OwnCpu) -> f64| per_call(each.iter().map(|(_, c)| f(c)).sum());
    Figures {
        own: sum(&|c| c.own_ms()),
        low: sum(&|c| c.own_bounds().0),
        high: sum(&|c| c.own_bounds().1),
        commands: sum(&|c| c.children_share_ms()),
    }
}

fn only_session(root: &Path) -> String {
    let mut ids: Vec<String> = std::fs::read_dir(root.join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    ids.pop().unwrap()
}

trait Measured {
    fn output_measured(&mut self) -> (support::Finished, support::OwnCpu);
}

impl Measured for std::process::Command {
    fn output_measured(&mut self) -> (support::Finished, support::OwnCpu) {
        support::measured_apart(self)
    }
}

/// A tool call in a scripted reply.
fn call(name: &str, arguments: Value) -> Value {
    let mut call = json!({"name": name});
    call["arguments"] = arguments;
    call
}

fn turn(calls: Vec<Value>) -> Value {
    let mut turn = json!({});
    turn["tool_calls"] = Value::Array(calls);
    turn
}

/// `answer`, sent only when the same request is asked again: first `how` (an empty reply, an
/// HTTP error) is answered.
fn failing_once(how: &str, value: Value, mut answer: Value) -> Value {
    answer[how] = value;
    answer["times"] = json!(1);
    answer
}

/// A case mapping each of three criteria to `file:line`.
fn case(summary: &str, at: &str) -> Value {
    let coverage: Vec<Value> = (1..=3)
        .map(|n| json!({"criterion": format!("criterion {n}"), "addressed_by": at}))
        .collect();
    turn(vec![call("submit_case", json!({"summary": summary, "ac_coverage": coverage}))])
}

/// An accept witnessing each of three criteria by `quote` at `code`.
fn accept(code: &str, quote: &str) -> Value {
    let witnesses: Vec<Value> =
        (1..=3).map(|n| json!({"criterion": n, "code": code, "quote": quote})).collect();
    turn(vec![call(
        "submit_verdict",
        json!({"verdict": "accept", "rejection_category": null, "concern": "Each criterion is met where the case says.", "evidence": [], "next_step": null, "witnesses": witnesses}),
    )])
}

fn reject(category: &str, concern: &str) -> Value {
    turn(vec![call(
        "submit_verdict",
        json!({"verdict": "reject", "rejection_category": category, "concern": concern, "evidence": ["todo_cli/__main__.py:1"], "next_step": "Meet every criterion and map each to its line."}),
    )])
}

const MAIN: &str = "import sys\n\n\nUSAGE = \"usage: python3 -m todo_cli <add|list|done> ...\"\n\n\ndef main(argv=None):\n    args = sys.argv[1:] if argv is None else argv\n    if not args:\n        print(USAGE, file=sys.stderr)\n        return 2\n    return 0\n\n\nif __name__ == \"__main__\":\n    sys.exit(main())\n";

/// The life cycle's model replies, as Tilth 0.2.0's recorded session had them.
fn script() -> Value {
    let main_at = "todo_cli/__main__.py:7";
    let t1 = vec![
        turn(vec![
            call("glob", json!({"pattern": "**/*"})),
            call("read_file", json!({"path": "AGENTS.md"})),
        ]),
        turn(vec![
            call(
                "write_file",
                json!({"path": "todo_cli/__init__.py", "content": "\"\"\"Markdown-backed todo CLI.\"\"\"\n"}),
            ),
            call("write_file", json!({"path": "todo_cli/__main__.py", "content": MAIN})),
        ]),
        turn(vec![call("bash", json!({"command": "python3 -m todo_cli; echo \"rc=$?\""}))]),
        turn(vec![call("bash", json!({"command": "sudo apt-get install -y tree"}))]),
        turn(vec![call(
            "edit_file",
            json!("{\"path\": \"todo_cli/__main__.py\", \"old_string\": "),
        )]),
        json!({"content": "The package is in place and prints its usage."}),
        turn(vec![call(
            "submit_case",
            json!("{\"summary\": \"Scaffolded.\", \"ac_coverage\": [{\"criterion\""),
        )]),
        case("Scaffolded the todo_cli package with a usage-only main().", main_at),
    ];
    let t1_rework = vec![
        failing_once(
            "empty",
            json!(true),
            turn(vec![call("grep", json!({"pattern": "def main", "path_glob": "todo_cli/*.py"}))]),
        ),
        turn(vec![
            call(
                "edit_file",
                json!({"path": "todo_cli/__main__.py", "old_string": "    return 0\n", "new_string": "    print(\"unknown command\", file=sys.stderr)\n    return 2\n"}),
            ),
            call(
                "bash",
                json!({"command": "python3 -c \"import todo_cli; print(todo_cli.__name__)\""}),
            ),
        ]),
        case("Scaffolded todo_cli; import check now verified.", main_at),
    ];
    let t2 = vec![
        failing_once(
            "http_status",
            json!(500),
            turn(vec![call("read_file", json!({"path": "todo_cli/__main__.py"}))]),
        ),
        turn(vec![call(
            "write_file",
            json!({"path": "todo_cli/add.py", "content": "def add(text):\n    with open(\"TODOS.md\", \"a\") as f:\n        f.write(f\"- [ ] {text}\\n\")\n"}),
        )]),
        turn(vec![call(
            "bash",
            json!({"command": "d=$(mktemp -d); PYTHONPATH=\"$PWD\" sh -c 'cd \"$0\" && python3 -c \"from todo_cli.add import add; add(1)\" && cat TODOS.md' \"$d\""}),
        )]),
        case("Implemented `add`.", "todo_cli/add.py:1"),
    ];
    let t3 = vec![
        turn(vec![call(
            "write_file",
            json!({"path": "todo_cli/list.py", "content": "def show():\n    print(\"DEBUG listing\")\n    print(\"(no todos)\")\n"}),
        )]),
        case("Implemented `list`.", "todo_cli/list.py:1"),
    ];
    let t3_rework = vec![
        turn(vec![call(
            "edit_file",
            json!({"path": "todo_cli/list.py", "old_string": "    print(\"DEBUG listing\")\n", "new_string": ""}),
        )]),
        case("Implemented `list`; removed the debug print.", "todo_cli/list.py:1"),
    ];
    let t3_resumed = vec![
        turn(vec![call("read_file", json!({"path": "todo_cli/list.py"}))]),
        turn(vec![call(
            "bash",
            json!({"command": "cd todo_cli && python3 -c 'import list' ; echo rc=$?"}),
        )]),
        case("Implemented `list` with all three criteria mapped.", "todo_cli/list.py:1"),
    ];
    let t4 = vec![
        turn(vec![call("read_file", json!({"path": "todo_cli/__main__.py"}))]),
        turn(vec![call(
            "bash",
            json!({"command": "echo done-subcommand placeholder > DONE_NOTES.md"}),
        )]),
        case("Implemented `done` (notes file).", "DONE_NOTES.md:1"),
    ];
    json!({
        "worker": {
            "T-001": {"1": t1, "2": t1_rework},
            "T-002": {"1": t2},
            "T-003": {"1": t3, "2": t3_rework, "3": t3_resumed},
            "T-004": {"1": t4},
        },
        "evaluator": {
            "T-001": {
                "1": [json!({"content": "Looks fine to me."}), reject("acceptance_gap", "The third criterion is not shown to run.")],
                "2": [accept(main_at, "def main(argv=None):")],
            },
            "T-002": {"1": [accept("todo_cli/add.py:1", "def add(text):")]},
            "T-003": {
                "1": [reject("half_finished", "A debug print is left in `list`.")],
                "2": [reject("acceptance_gap", "Only one of the three criteria is mapped.")],
                "3": [accept("todo_cli/list.py:1", "def show():")],
            },
            "T-004": {"1": [accept("DONE_NOTES.md:1", "done-subcommand placeholder")]},
        },
    })
}
