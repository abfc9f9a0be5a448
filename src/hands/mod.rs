//! The hands: everything that touches the workspace — the git worktree, the tools the worker
//! calls, the hooks around them, and the validators. Everything a tool reads or writes is
//! confined to the worktree ([`confine`]); every process runs through [`process`].

pub mod cancel;
pub mod confine;
pub(crate) mod environment;
pub mod git_guard;
pub mod hooks;
pub mod isolation;
pub mod kept_state;
pub(crate) mod kernel_sandbox;
pub mod lanes;
pub mod logged_work;
pub mod own_refs;
pub mod process;
pub(crate) mod programs;
pub mod rehome;
mod repo_pool;
pub mod session_store;
mod staging;
#[cfg(test)]
mod test_git;
pub(crate) mod tools;
pub mod validators;
pub mod witness_trees;
pub mod workspace;

use crate::session::event::{HookRun, PreToolBlock, Scope, ToolCall, ToolResult};
use crate::session::sink::EventSink;
use confine::Jail;
use hooks::{DenyRule, PostEditLinter, PreTool};
use isolation::{Isolation, SandboxMode};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tools::ToolKind;
use tools::args::Args;

/// Characters of a tool result kept in the event's `result_preview` (Tilth's size).
pub const RESULT_PREVIEW_CHARS: usize = 500;

/// How the hands behave; from the configuration file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandsConfig {
    pub bash_timeout: Duration,
    pub sandbox: SandboxMode,
    pub deny: Vec<DenyRule>,
    pub post_edit: Vec<PostEditLinter>,
    /// Variables added to the commands' environment allow-list.
    pub pass_env: Vec<String>,
    /// The lane these hands work in, in a run with lanes: a build folder shared through
    /// `CARGO_TARGET_DIR` gets a subfolder per lane, so two lanes' builds never overwrite
    /// each other's artifacts (a folder inside the worktree is the lane's own already).
    pub lane: Option<u64>,
    /// A build folder shared by every run, for commands whose environment names none
    /// (`CARGO_TARGET_DIR` unset): the demo's cache, so its builds are not made again in
    /// each new worktree. Writable in the sandbox.
    pub build_dir: Option<PathBuf>,
}

impl Default for HandsConfig {
    fn default() -> Self {
        HandsConfig {
            bash_timeout: Duration::from_secs(120),
            sandbox: SandboxMode::Auto,
            deny: Vec::new(),
            post_edit: Vec::new(),
            pass_env: Vec::new(),
            lane: None,
            build_dir: None,
        }
    }
}

/// Why the hands could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum HandsError {
    #[error("workspace {0}: {1}")]
    Workspace(PathBuf, std::io::Error),
    #[error(transparent)]
    Rule(#[from] hooks::BadRule),
    #[error("{0}")]
    Sandbox(String),
}

/// The tools of one worktree, ready to be called.
#[derive(Debug)]
pub struct Hands {
    pub jail: Jail,
    pub config: HandsConfig,
    pub isolation: Isolation,
    /// Raised to stop the tool or validator in flight at once (the operator's `fail` or
    /// `stop --now`): its process group is killed.
    pub cancel: Arc<cancel::Cancel>,
    pre_tool: PreTool,
    /// The folders the sandbox hides, shows read-only and lets write, kept to make another
    /// sandbox over the same worktree (an ACP agent's, with its home and the network).
    folders: SandboxFolders,
}

/// The folders a sandbox over a worktree is made of.
#[derive(Debug, Clone)]
struct SandboxFolders {
    hide: Option<PathBuf>,
    readable: Vec<PathBuf>,
    writable: Vec<PathBuf>,
}

/// What a tool call returned to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallOutcome {
    pub output: String,
    pub is_error: bool,
    /// The `pre_tool` hook vetoed the call.
    pub blocked: bool,
}

/// Build caches outside the worktree that the user's environment points the build at
/// (`CARGO_TARGET_DIR`, else the configured shared build folder): writable in the sandbox, so
/// an ordinary `cargo test` works there. The folder is created when missing.
fn build_cache_dirs(worktree: &Path, build_dir: Option<&Path>) -> Vec<PathBuf> {
    let Some(dir) = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .or(build_dir.map(Path::to_path_buf))
    else {
        return Vec::new();
    };
    let dir = if dir.is_absolute() { dir } else { worktree.join(dir) };
    if dir.starts_with(worktree) || std::fs::create_dir_all(&dir).is_err() {
        return Vec::new();
    }
    dir.canonicalize().into_iter().collect()
}

impl Hands {
    /// Hands for a worktree. `session_dir` is hidden from sandboxed commands.
    pub fn new(
        worktree: &Path,
        session_dir: Option<&Path>,
        config: HandsConfig,
    ) -> Result<Hands, HandsError> {
        let jail =
            Jail::new(worktree).map_err(|e| HandsError::Workspace(worktree.to_path_buf(), e))?;
        let pre_tool = PreTool::new(jail.root(), &config.deny)?;
        // The worktree's own git folder (its HEAD and index) is writable in the sandbox; the
        // repository's shared folder (objects, refs, config, hooks) stays read-only there,
        // since harrow commits outside the sandbox.
        let repo = repo_pool::open(jail.root(), |p| git2::Repository::open(p)).ok();
        let common_git = repo.as_ref().map(|r| r.commondir().to_path_buf());
        let private_git = repo.as_ref().map(|r| r.path().to_path_buf());
        // The session folder is hidden whether the worktree is inside it or, with a work
        // folder on local disk, elsewhere: its log and ledgers are harrow's, never the worker's.
        let hide = session_dir
            .map(|d| d.canonicalize().unwrap_or_else(|_| d.to_path_buf()))
            .filter(|d| !d.starts_with(jail.root()));
        let mut writable: Vec<PathBuf> = private_git.into_iter().collect();
        writable.extend(build_cache_dirs(jail.root(), config.build_dir.as_deref()));
        let readable: Vec<PathBuf> = common_git.into_iter().collect();
        let isolation = Isolation::choose(
            config.sandbox,
            jail.root(),
            hide.as_deref(),
            &readable,
            writable.clone(),
        )
        .map_err(HandsError::Sandbox)?;
        let folders = SandboxFolders { hide, readable, writable };
        Ok(Hands { jail, config, isolation, cancel: Arc::default(), pre_tool, folders })
    }

    /// The sandbox an ACP agent runs in over this worktree: the same rules as every command,
    /// with `home` (its private home) writable too. The network is opened where the agent is
    /// started ([`Isolation::wrap_networked`]), since it must reach its model.
    pub fn agent_isolation(&self, home: &Path) -> Result<Isolation, String> {
        let mut writable = self.folders.writable.clone();
        writable.push(home.to_path_buf());
        Isolation::choose(
            self.config.sandbox,
            self.jail.root(),
            self.folders.hide.as_deref(),
            &self.folders.readable,
            writable,
        )
    }

    /// Hands over another folder with this one's rules (its sandbox, the session folder
    /// hidden, its environment): where harrow runs a verdict's test on a tree written out.
    pub fn beside(&self, dir: &Path) -> Result<Hands, HandsError> {
        Hands::new(dir, self.folders.hide.as_deref(), self.config.clone())
    }

    /// Runs a shell command in the worktree, in the sandbox, with the allow-listed environment:
    /// the one way `bash`, the hooks and the validators start a process.
    pub fn run_command(
        &self,
        command: &str,
        timeout: Duration,
        output_cap: usize,
        cancel: Option<&cancel::Cancel>,
    ) -> std::io::Result<process::ProcessOutcome> {
        let root = self.jail.root();
        process::run(&process::Spec {
            argv: self.isolation.wrap(command, root),
            cwd: root,
            timeout,
            output_cap,
            cancel,
            sandbox: &self.isolation,
            pass_env: &self.config.pass_env,
            lane: self.config.lane,
            build_dir: self.config.build_dir.as_deref(),
        })
    }

    /// Whether a tool runs commands (and so can reach git, the network or anything else the
    /// user can); the file tools cannot leave the worktree or touch `.git`.
    pub fn runs_commands(name: &str) -> bool {
        tools::find(name).is_some_and(|t| t.kind == ToolKind::Shell)
    }

    /// Whether a tool can change the worktree's files: an edit, or a command.
    pub fn changes_files(name: &str) -> bool {
        tools::find(name).is_some_and(|t| matches!(t.kind, ToolKind::Edit | ToolKind::Shell))
    }

    /// The tool schemas to offer the model.
    pub fn schemas() -> Vec<Value> {
        tools::TOOLS.iter().map(tools::ToolSpec::openai_schema).collect()
    }

    /// Calls a tool and logs it: `tool_call`, then `hook_run` for each hook, then
    /// `tool_result` — or `pre_tool_block` when the hook vetoed it. Never fails on what the
    /// model sent; only a failure to write the log is an error.
    pub fn call<S: EventSink>(
        &self,
        scope: &Scope,
        call_id: Option<&str>,
        name: &str,
        args: &Value,
        sink: &mut S,
    ) -> std::io::Result<CallOutcome> {
        self.call_within(scope, call_id, (name, args), None, sink)
    }

    /// [`Hands::call`] for a model whose window is small: an output longer than `cap` bytes
    /// is cut to it with a note saying how to read the rest, and logged as the model saw it.
    pub fn call_within<S: EventSink>(
        &self,
        scope: &Scope,
        call_id: Option<&str>,
        (name, args): (&str, &Value),
        cap: Option<usize>,
        sink: &mut S,
    ) -> std::io::Result<CallOutcome> {
        let started = Instant::now();
        let call_id = call_id.map(str::to_owned);
        sink.emit(&ToolCall {
            scope: scope.clone(),
            tool: Some(name.into()),
            args: Some(args.clone()),
            call_id: call_id.clone(),
            ..ToolCall::default()
        })?;
        let mut outcome = self.run(scope, name, args, sink)?;
        if let Some(cap) = cap {
            outcome.output = tools::shorten::to_window(name, outcome.output, cap);
        }
        let result = ToolResult {
            scope: scope.clone(),
            tool: Some(name.into()),
            result_preview: Some(outcome.output.chars().take(RESULT_PREVIEW_CHARS).collect()),
            result_chars: Some(outcome.output.chars().count() as u64),
            output: Some(outcome.output.clone()),
            call_id,
            is_error: Some(outcome.is_error),
            duration_ms: Some(started.elapsed().as_millis() as u64),
            ..ToolResult::default()
        };
        if outcome.blocked {
            sink.emit(&PreToolBlock(result))?;
        } else {
            sink.emit(&result)?;
        }
        Ok(outcome)
    }

    fn run<S: EventSink>(
        &self,
        scope: &Scope,
        name: &str,
        args: &Value,
        sink: &mut S,
    ) -> std::io::Result<CallOutcome> {
        let error = |text: String| CallOutcome {
            output: format!("ERROR: {text}"),
            is_error: true,
            blocked: false,
        };
        let Some(spec) = tools::find(name) else {
            return Ok(error(format!(
                "unknown tool '{name}'. Available: {}",
                tools::names().join(", ")
            )));
        };
        let args = match Args::new(name, args, spec.usage) {
            Ok(a) => a,
            Err(e) => return Ok(error(e.0)),
        };
        let hook = |outcome: &str, reason: Option<String>| HookRun {
            scope: scope.clone(),
            tool: Some(name.into()),
            hook: Some(crate::session::vocabulary::HookName::PreTool.as_str().to_owned()),
            outcome: Some(outcome.into()),
            reason,
            ..HookRun::default()
        };
        if spec.kind == ToolKind::Shell {
            let command = match args.string("command") {
                Ok(c) => c,
                Err(e) => return Ok(error(e.0)),
            };
            if let Some(block) = self.pre_tool.check_bash(command) {
                sink.emit(&hook("block", Some(block.message())))?;
                return Ok(CallOutcome { output: block.message(), is_error: true, blocked: true });
            }
        }
        sink.emit(&hook("allow", None))?;
        let mut outcome = match (spec.run)(self, &args) {
            Ok(text) => CallOutcome { output: text, is_error: false, blocked: false },
            Err(e) => error(e.0),
        };
        if spec.kind == ToolKind::Edit && !outcome.is_error {
            self.lint_edit(scope, name, &args, &mut outcome, sink)?;
        }
        Ok(outcome)
    }

    fn lint_edit<S: EventSink>(
        &self,
        scope: &Scope,
        name: &str,
        args: &Args<'_>,
        outcome: &mut CallOutcome,
        sink: &mut S,
    ) -> std::io::Result<()> {
        let Ok(checked) = args.string("path").map(|p| self.jail.check(p)) else { return Ok(()) };
        let Ok(checked) = checked else { return Ok(()) };
        let Some(lint) = hooks::post_edit(&self.config.post_edit, &checked.rel, |c, t, cap| {
            self.run_command(c, t, cap, None)
        }) else {
            return Ok(());
        };
        sink.emit(&HookRun {
            scope: scope.clone(),
            tool: Some(name.into()),
            hook: Some(crate::session::vocabulary::HookName::PostEdit.as_str().to_owned()),
            outcome: Some(lint.outcome.into()),
            reason: lint.feedback.clone(),
            ..HookRun::default()
        })?;
        if let Some(feedback) = lint.feedback {
            outcome.output = format!("{}\n{feedback}", outcome.output);
        }
        Ok(())
    }
}
