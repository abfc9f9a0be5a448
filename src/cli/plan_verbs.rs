//! `harrow init` and `harrow check`: a plan to start from, and a plan checked before a run.

use super::UsageError;
use super::format::table;
use crate::harness::plan::{self, SKELETON};
use color_eyre::eyre::{Result, WrapErr};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// The feature's name: the plan goes in `.harrow/NAME/` of the repository.
    #[arg(long, default_value = "new-feature")]
    pub feature: String,
    /// The repository to write the plan into.
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// A feature folder (overview.md + T-NNN-<slug>.md) or a prd.json.
    pub plan: PathBuf,
}

/// Writes a commented skeleton plan: an overview and one example task with every field.
pub fn init(args: &InitArgs) -> Result<ExitCode> {
    let name = args.feature.trim();
    let valid = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !name.starts_with('.');
    if !valid {
        return Err(UsageError(format!(
            "'{name}' cannot name a feature folder: use letters, digits, - and _ (for example --feature search-filters)"
        ))
        .into());
    }
    let top = crate::hands::workspace::Workspace::source_top(&args.repo)
        .map_err(|e| UsageError(e.to_string()))?;
    let top = top.components().collect::<PathBuf>();
    let dir = top.join(".harrow").join(name);
    if dir.exists() {
        return Err(UsageError(format!(
            "{} exists already: edit it, or choose another --feature",
            dir.display()
        ))
        .into());
    }
    std::fs::create_dir_all(&dir).wrap_err_with(|| format!("cannot create {}", dir.display()))?;
    for (file, text) in SKELETON {
        let path = dir.join(file);
        std::fs::write(&path, text.replace("{feature}", name))
            .wrap_err_with(|| format!("cannot write {}", path.display()))?;
    }
    println!("wrote {}/ — an overview and one example task", dir.display());
    println!("next: fill them in (add T-002-<slug>.md and so on), then");
    println!("  harrow check {}", dir.display());
    println!("  harrow run {} --repo {}", dir.display(), top.display());
    Ok(ExitCode::SUCCESS)
}

/// Checks a plan: its tasks, or every problem as `FILE:LINE: problem; fix` (exit 2).
pub fn check(args: &CheckArgs) -> ExitCode {
    match plan::check(&args.plan) {
        Ok(p) => {
            let rows: Vec<Vec<String>> = p
                .in_order()
                .iter()
                .map(|t| {
                    let after = p.dependencies(&t.id);
                    vec![
                        t.id.clone(),
                        t.title.clone(),
                        if after.is_empty() { "-".into() } else { after.join(", ") },
                        t.criteria.len().to_string(),
                        if t.tests.is_empty() { "-".into() } else { t.tests.join(", ") },
                    ]
                })
                .collect();
            let shape = if p.is_graph() {
                let free = p.tasks.iter().filter(|t| p.dependencies(&t.id).is_empty()).count();
                format!("a graph: {free} can start at once, the rest after what they depend on")
            } else {
                "each after the one before it (no task declares depends_on)".to_owned()
            };
            println!("{}: {} task(s), ready to run, {shape}", p.source.display(), p.tasks.len());
            print!(
                "{}",
                crate::printable::text(&table(
                    &["TASK", "TITLE", "AFTER", "CRITERIA", "TESTS"],
                    &rows
                ))
            );
            ExitCode::SUCCESS
        }
        Err(problems) => {
            for problem in &problems {
                eprintln!("{}", super::format::terminal_line(&problem.to_string()));
            }
            eprintln!("harrow: {} problem(s) in the plan; nothing was run", problems.len());
            ExitCode::from(2)
        }
    }
}
