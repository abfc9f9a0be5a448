//! `harrow prep`: an interview that writes a plan. The model's questions are printed and the
//! answers read from standard input (an answer ends with a blank line) or from `--answers
//! FILE`; the draft is shown as the files it will become, and written and committed only when
//! accepted (`--accept`, or `y` when asked on a terminal).

use super::UsageError;
use super::run::brain_config;
use super::run_flags::ModelArgs;
use crate::brain::client::Brain;
use crate::config::Config;
use crate::hands::workspace::Workspace;
use crate::hands::{Hands, HandsConfig};
use crate::prep::{Answers, Decision, Interview, Person, write};
use crate::session::discover;
use crate::session::event::{PlanWritten, SeedCommitted, SessionStart, Stop};
use crate::session::timestamp;
use crate::session::writer::SessionWriter;
use color_eyre::eyre::{Result, WrapErr};
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The repository the plan is for.
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// What you want to build, to start the interview with.
    #[arg(long, value_name = "TEXT")]
    pub brief: Option<String>,
    /// The feature's name: the plan goes in `.harrow/NAME/`.
    #[arg(long, default_value = "new-feature")]
    pub feature: String,
    /// Answers to the model's questions, one per block, blocks separated by blank lines
    /// (default: typed on standard input, each ended by a blank line).
    #[arg(long, value_name = "FILE")]
    pub answers: Option<PathBuf>,
    /// Write and commit the plan without asking (else it is printed, and on a terminal you
    /// are asked).
    #[arg(long)]
    pub accept: bool,
    /// Commit the plan even though the working tree has other uncommitted changes.
    #[arg(long)]
    pub allow_dirty: bool,
    /// Commit the plan on this branch, made from the current commit and checked out
    /// (default: the branch the repository is on).
    #[arg(long, value_name = "NAME")]
    pub branch: Option<String>,
    /// Never ask on the terminal: answers come from --answers or standard input, and the plan
    /// is written only with --accept.
    #[arg(long)]
    pub headless: bool,
    #[command(flatten)]
    pub models: ModelArgs,
}

/// Answers typed on standard input: each ends with an empty line.
struct Typed;

impl Person for Typed {
    fn answer(&mut self, question: &str) -> Option<String> {
        println!("\n{}\n", crate::printable::text(question.trim()));
        print!("> ");
        let _ = std::io::stdout().flush();
        let mut lines = Vec::new();
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if line.trim().is_empty() {
                if lines.is_empty() {
                    continue;
                }
                break;
            }
            lines.push(line);
        }
        (!lines.is_empty()).then(|| lines.join("\n"))
    }

    fn review(&mut self, shown: &str) -> Decision {
        println!("\nThe plan, as it will be written:\n\n{}", crate::printable::text(shown));
        if !std::io::stdin().is_terminal() {
            return Decision::Reject;
        }
        match ask("Write and commit it? [y]es, [r]evise with a note, [N]o: ") {
            'y' => Decision::Accept,
            'r' => Decision::Revise(Typed.answer("What should change?").unwrap_or_default()),
            _ => Decision::Reject,
        }
    }
}

/// Checks the arguments, then holds the interview (see [`interview`]).
pub fn run(args: &Args) -> Result<ExitCode> {
    let (config, _) = Config::load(None).map_err(|e| UsageError(e.to_string()))?;
    let feature = args.feature.trim().to_owned();
    if feature.is_empty()
        || !feature.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
    {
        return Err(UsageError(format!(
            "'{feature}' cannot name a feature folder: use letters, digits, - and _"
        ))
        .into());
    }
    let top = Workspace::source_top(&args.repo).map_err(|e| UsageError(e.to_string()))?;
    let top: PathBuf = top.components().collect();
    if write::feature_dir(&top, &feature).exists() {
        return Err(UsageError(format!(
            "{} exists already: choose another --feature",
            write::feature_dir(&top, &feature).display()
        ))
        .into());
    }
    if !args.allow_dirty {
        write::refuse_dirty(&top).map_err(|e| UsageError(e.to_string()))?;
    }
    let on_screen = args.answers.is_none()
        && !args.headless
        && std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal();
    let mut person: Box<dyn Person> = match &args.answers {
        Some(file) => {
            let text = crate::safe_io::read_named(file, 1 << 20)
                .map_err(|e| UsageError(format!("cannot read {}: {e}", file.display())))?;
            Box::new(Answers::parse(&text))
        }
        None => Box::new(Typed),
    };
    let brain =
        Brain::new(brain_config(&args.models, &config)?).map_err(|e| UsageError(e.to_string()))?;
    let how = How {
        accept: args.accept,
        ask: args.answers.is_none() && !args.headless,
        allow_dirty: args.allow_dirty,
        branch: args.branch.clone(),
    };
    if on_screen {
        return on_the_screen(top, feature, args.brief.clone(), brain, config, how);
    }
    interview(&top, &feature, args.brief.as_deref(), person.as_mut(), &brain, &config, &how)?;
    Ok(ExitCode::SUCCESS)
}

/// The interview on the console's screen. The interview runs on a thread of its own and the
/// screen in the console's loop, so the screen redraws while the model works and the person
/// can stop it mid-call. harrow's last word is printed once the terminal is given back.
fn on_the_screen(
    top: PathBuf,
    feature: String,
    brief: Option<String>,
    brain: Brain,
    config: Config,
    how: How,
) -> Result<ExitCode> {
    let mut console = crate::console::screen::Console::open()?;
    let (screen, mut person) = crate::console::interview::InterviewScreen::new(console.sender());
    let held = std::thread::Builder::new().name("harrow-prep".into()).spawn(move || {
        let result =
            interview(&top, &feature, brief.as_deref(), &mut person, &brain, &config, &how);
        person.ended();
        (result, person.last_said.take())
    })?;
    let shown = console.run(Box::new(screen));
    drop(console);
    let (result, last) =
        held.join().map_err(|_| color_eyre::eyre::eyre!("the interview stopped unexpectedly"))?;
    if let Some(last) = last {
        println!("{}", crate::printable::text(&last));
    }
    shown?;
    result?;
    Ok(ExitCode::SUCCESS)
}

/// How the draft is settled.
#[derive(Debug, Clone)]
pub struct How {
    /// Write it without asking.
    pub accept: bool,
    /// Ask on the terminal (when there is one).
    pub ask: bool,
    pub allow_dirty: bool,
    /// The branch to commit on, when not the current one.
    pub branch: Option<String>,
}

/// Holds the interview for `feature` in the repository at `top` and settles the draft:
/// written and committed when accepted. Returns the plan folder written, if one was.
pub fn interview(
    top: &std::path::Path,
    feature: &str,
    brief: Option<&str>,
    person: &mut dyn Person,
    brain: &Brain,
    config: &Config,
    how: &How,
) -> Result<Option<PathBuf>> {
    let model = brain.endpoint(crate::brain::client::Role::Prep).map(|e| e.model.clone());
    let sessions = discover::harrow_sessions_dir().ok_or_else(|| {
        UsageError("cannot find a data folder for sessions; set HARROW_SESSIONS_DIR".into())
    })?;
    let id = timestamp::new_session_id();
    let dir = sessions.join(&id);
    let mut writer = SessionWriter::create(&dir).wrap_err("cannot create the session folder")?;
    // The interview's tools only read files (never a command), so it needs no sandbox; it must
    // not be refused on a machine that has none.
    let reading_only = HandsConfig {
        sandbox: crate::hands::isolation::SandboxMode::Off,
        ..config.hands.to_hands_config()
    };
    let hands = Hands::new(top, Some(&dir), reading_only).map_err(|e| UsageError(e.to_string()))?;
    writer.append(&SessionStart {
        phase: Some(crate::session::vocabulary::Phase::Prep.as_str().to_owned()),
        session_id: Some(id.clone()),
        host: Some(crate::session::lock::hostname()),
        source: Some(top.display().to_string()),
        feature: Some(feature.to_owned()),
        worker_model: model,
        ..SessionStart::default()
    })?;
    person.show(&format!(
        "harrow prep: session {id}; the interview's questions follow ({})",
        person.how_to_answer()
    ));
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let settled = {
        let mut interview = Interview::new(brain, &hands, &mut writer, feature, brief);
        let mut drafted = runtime.block_on(interview.draft(person));
        loop {
            let mut files = match drafted {
                Ok(d) => write::planned(&d, feature, &id),
                Err(e) => break Err(e),
            };
            // Reviewed until accepted, rejected or sent back; an edit is checked and shown again.
            let note = loop {
                let shown = crate::prep::draft::shown(&files);
                let decision = if how.accept {
                    person.show(&format!("The plan, as it will be written:\n\n{shown}"));
                    Decision::Accept
                } else if how.ask {
                    person.review(&shown)
                } else {
                    person.show(&format!("The plan, as it will be written:\n\n{shown}"));
                    Decision::Reject
                };
                match decision {
                    Decision::Edit(text) => match write::parse_edited(&text, feature) {
                        Ok(edited) => files = edited,
                        Err(problems) => person.show(&format!(
                            "The edit was not taken — fix these and edit again:\n{}",
                            problems.join("\n")
                        )),
                    },
                    Decision::Revise(note) => break Some(note),
                    Decision::Accept => break None,
                    Decision::Reject => {
                        files.clear();
                        break None;
                    }
                }
            };
            match note {
                Some(note) => drafted = runtime.block_on(interview.revise(&note, person)),
                None => break Ok(files),
            }
        }
    };
    let files = match settled {
        Ok(files) if !files.is_empty() => files,
        Ok(_) => {
            writer.append(&Stop { reason: Some("not_accepted".into()), ..Stop::default() })?;
            person.show(&format!(
                "Nothing was written (--accept writes it). The interview is session {id}."
            ));
            return Ok(None);
        }
        Err(crate::prep::PrepError::Stopped) => {
            writer.append(&Stop { reason: Some("operator_stop".into()), ..Stop::default() })?;
            person.show(&format!(
                "The interview was stopped; nothing was written. It is logged as session {id}."
            ));
            return Ok(None);
        }
        Err(e) => {
            writer.append(&Stop {
                reason: Some("error".into()),
                error: Some(e.to_string()),
                ..Stop::default()
            })?;
            return Err(UsageError(format!("{e} (the interview is logged as session {id})")).into());
        }
    };
    let written = write::write(top, feature, &files, how.allow_dirty, how.branch.as_deref())
        .map_err(|e| UsageError(e.to_string()))?;
    writer.append(&PlanWritten {
        feature: Some(feature.to_owned()),
        dir: Some(written.dir.display().to_string()),
        tasks: Some(written.tasks as u64),
        files: Some(written.files.clone()),
        ..PlanWritten::default()
    })?;
    writer.append(&SeedCommitted {
        sha: Some(written.sha.clone()),
        branch: Some(written.branch.clone()),
        ..SeedCommitted::default()
    })?;
    writer.append(&Stop { reason: Some("all_done".into()), ..Stop::default() })?;
    person.show(&format!(
        "Wrote {} file(s) and committed them on {} ({}).\nNext: harrow run {} --repo {}",
        written.files.len(),
        written.branch,
        &written.sha[..7.min(written.sha.len())],
        written.dir.display(),
        top.display()
    ));
    Ok(Some(written.dir))
}

/// A question on the terminal answered with one letter (lower case; `n` when unreadable).
fn ask(question: &str) -> char {
    print!("{question}");
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() {
        return 'n';
    }
    line.trim().chars().next().map_or('n', |c| c.to_ascii_lowercase())
}
