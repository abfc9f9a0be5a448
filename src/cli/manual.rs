//! `harrow man`: harrow(1), with what a person at the console needs beside the flags — the keys
//! of the console and the fleet (from the same key tables the console dispatches and helps
//! with), the environment, the files and the exit status — and with `--dir`, one page per verb,
//! which harrow(1) names.

use super::UsageError;
use crate::console::keymap::Mode;
use clap::CommandFactory;
use color_eyre::eyre::Result;
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write harrow.1 and a page per verb (harrow-run.1, harrow-show.1, …) into DIR instead of
    /// printing harrow(1)
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// The variables harrow reads, with what each does.
const ENVIRONMENT: &[(&str, &str)] = &[
    ("HARROW_BASE_URL", "the OpenAI-compatible endpoint every role uses unless its own is set"),
    ("HARROW_API_KEY", "the key sent to it (taken out of the environment before any tool runs)"),
    ("HARROW_WORKER_MODEL", "the worker's model"),
    ("HARROW_EVALUATOR_BASE_URL", "the evaluator's endpoint, when it differs"),
    ("HARROW_EVALUATOR_API_KEY", "the evaluator's key"),
    ("HARROW_EVALUATOR_MODEL", "the evaluator's model"),
    ("HARROW_PREP_BASE_URL", "the endpoint of harrow prep's interviewer"),
    ("HARROW_PREP_API_KEY", "its key"),
    ("HARROW_PREP_MODEL", "its model"),
    ("HARROW_CONFIG", "the configuration file, instead of the platform's config folder"),
    ("HARROW_SESSIONS_DIR", "where harrow's sessions are kept"),
    ("TILTH_SESSIONS_DIR", "where Tilth's sessions are read from"),
    ("HARROW_THEME", "the console's theme (dark, light, high-contrast)"),
    ("NO_COLOR", "no colour in the console or the output"),
    ("GITHUB_TOKEN, GITLAB_TOKEN, GITEA_TOKEN", "the forge's token for push and pr"),
];

/// The exit status every verb keeps to.
const EXIT_STATUS: &[(&str, &str)] = &[
    ("0", "done: every task of the run finished, or the verb did what it was asked"),
    (
        "1",
        "the run stopped before every task was done: a failed task, a cap, an operator stop, a held task, an unreachable model (all but a failure are resumable)",
    ),
    ("2", "a usage or input error, said in one line naming the file and the fix"),
    ("129", "SIGHUP: the run stopped gracefully, as on Ctrl-C, and is resumable"),
    ("143", "SIGTERM: the same, for a pod's end or a kill"),
];

/// The files a session folder holds.
const FILES: &[(&str, &str)] = &[
    ("config.toml", "the configuration, in the platform's config folder (or HARROW_CONFIG)"),
    ("SESSION/events.jsonl", "the session's log: every model call, tool call, verdict, decision"),
    ("SESSION/checkpoint.json, summary.json", "where the run stands, written as it goes"),
    ("SESSION/control.jsonl", "decisions and notes sent to the run (harrow control)"),
    ("SESSION/ledger/", "each task's verdicts and decisions, read by both models"),
    ("SESSION/export.md", "what harrow export and the fleet's E write"),
];

/// Prints harrow(1), or writes every page into `--dir`.
pub fn man(args: &ManArgs) -> Result<ExitCode> {
    let Some(dir) = &args.dir else {
        let mut out = std::io::stdout().lock();
        out.write_all(&main_page()?)?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    };
    crate::safe_io::ensure_dir(dir)
        .map_err(|e| UsageError(format!("cannot write into {}: {e}", dir.display())))?;
    let mut written = vec![write_page(dir, "harrow.1", &main_page()?)?];
    for verb in super::Cli::command().get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("harrow-{}", verb.get_name());
        let page =
            verb.clone().display_name(name.clone()).bin_name(format!("harrow {}", verb.get_name()));
        let mut text = Vec::new();
        clap_mangen::Man::new(page).render(&mut text)?;
        text.extend_from_slice(b".SH \"SEE ALSO\"\nharrow(1)\n");
        written.push(write_page(dir, &format!("{name}.1"), &text)?);
    }
    for path in &written {
        println!("{}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn write_page(dir: &Path, name: &str, text: &[u8]) -> Result<PathBuf> {
    let path = dir.join(name);
    crate::safe_io::replace(&path, text)
        .map_err(|e| UsageError(format!("cannot write {}: {e}", path.display())))?;
    Ok(path)
}

/// harrow(1): clap's page of the flags and verbs, then the keys, the environment, the files,
/// the exit status and the verbs' own pages.
fn main_page() -> Result<Vec<u8>> {
    let mut out = Vec::new();
    // `help` is clap's own verb: it has no page of its own to name.
    clap_mangen::Man::new(super::Cli::command().disable_help_subcommand(true)).render(&mut out)?;
    let mut extra = String::from(".SH KEYS\n");
    for mode in [Mode::Main, Mode::Browser] {
        let _ = writeln!(extra, ".SS \"{}\"", roff(mode.title()));
        for b in mode.bindings() {
            let _ = writeln!(extra, ".TP\n\\fB{}\\fR\n{}", roff(&b.label()), roff(b.help));
        }
    }
    for (title, rows) in
        [("ENVIRONMENT", ENVIRONMENT), ("FILES", FILES), ("EXIT STATUS", EXIT_STATUS)]
    {
        let _ = writeln!(extra, ".SH \"{title}\"");
        for (name, what) in rows {
            let _ = writeln!(extra, ".TP\n\\fB{}\\fR\n{}", roff(name), roff(what));
        }
    }
    extra.push_str(".SH \"SEE ALSO\"\n");
    let verbs: Vec<String> = super::Cli::command()
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .map(|s| format!("harrow-{}(1)", s.get_name()))
        .collect();
    let _ = writeln!(extra, "{}", roff(&verbs.join(", ")));
    out.extend_from_slice(extra.as_bytes());
    Ok(out)
}

/// Text safe as a roff line: backslashes escaped, a leading `.` or `'` (a request) defused.
fn roff(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    if escaped.starts_with(['.', '\'']) { format!("\\&{escaped}") } else { escaped }
}

#[cfg(test)]
mod tests {
    use super::roff;

    #[test]
    fn text_that_looks_like_a_request_is_defused() {
        assert_eq!(roff(".SH x"), "\\&.SH x");
        assert_eq!(roff("'br"), "\\&'br");
        assert_eq!(roff("a\\b-c"), "a\\eb\\-c");
    }
}
