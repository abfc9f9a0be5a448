//! The configuration file: `config.toml` in the platform config dir (`~/.config/harrow/` on
//! Linux), or the file named by `--config` or `$HARROW_CONFIG`. Every key is optional.

use crate::brain::client::Price;
use crate::hands::HandsConfig;
use crate::hands::hooks::{DenyRule, PostEditLinter};
use crate::hands::isolation::SandboxMode;
use crate::hands::validators::ValidatorSpec;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The file as written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub hands: HandsSection,
    #[serde(default)]
    pub models: ModelsSection,
    /// Dollars per million tokens by model, for providers that do not report cost.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub prices: BTreeMap<String, Price>,
    /// Validators to run on every case. Absent: presets detected from the repository. An empty
    /// list: none (the evaluator is the only gate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validators: Option<Vec<ValidatorSpec>>,
    #[serde(default)]
    pub console: ConsoleSection,
    #[serde(default)]
    pub run: RunSection,
    /// `[loop]`: when a worker repeating itself is nudged, then held.
    #[serde(default, rename = "loop")]
    pub repeats: LoopSection,
    #[serde(default)]
    pub sessions: SessionsSection,
    #[serde(default)]
    pub notify: NotifySection,
    #[serde(default)]
    pub forge: ForgeSection,
    /// `[agent]`: an ACP agent that works the tasks instead of harrow's own worker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<crate::agent::AgentSpec>,
    #[serde(default)]
    pub gate: GateSection,
}

/// `[gate]`: what the gate asks of a verdict.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateSection {
    /// `required` (the default), `warn` or `off`: see `--evidence`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<crate::harness::evidence::EvidenceMode>,
    /// How long a cited test may run on each tree, in seconds (default 120): a witness whose
    /// test runs longer is not seen, and says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_secs: Option<u64>,
}

/// Which forge a remote is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ForgeKind {
    Github,
    Gitlab,
    /// Gitea and Forgejo, which share an API.
    Gitea,
}

impl ForgeKind {
    pub fn name(self) -> &'static str {
        match self {
            ForgeKind::Github => "github",
            ForgeKind::Gitlab => "gitlab",
            ForgeKind::Gitea => "gitea",
        }
    }

    /// The variable its token comes from.
    pub fn token_var(self) -> &'static str {
        match self {
            ForgeKind::Github => "GITHUB_TOKEN",
            ForgeKind::Gitlab => "GITLAB_TOKEN",
            ForgeKind::Gitea => "GITEA_TOKEN",
        }
    }

    /// The longest description it takes, in characters: GitHub's documented 65,536; GitLab's
    /// 1,048,576 (kept under); Gitea stores it in a column that may hold 65,535 bytes on `MySQL`.
    pub fn body_limit(self) -> usize {
        match self {
            ForgeKind::Github => 65_536,
            ForgeKind::Gitlab => 1_000_000,
            ForgeKind::Gitea => 65_000,
        }
    }

    /// What the forge calls the thing.
    pub fn noun(self) -> &'static str {
        match self {
            ForgeKind::Gitlab => "merge request",
            ForgeKind::Github | ForgeKind::Gitea => "pull request",
        }
    }

    /// The forge a host name suggests.
    pub(crate) fn guess(host: &str) -> Option<ForgeKind> {
        let host = host.to_ascii_lowercase();
        if host == "github.com" || host.contains("github") {
            Some(ForgeKind::Github)
        } else if host == "gitlab.com" || host.contains("gitlab") {
            Some(ForgeKind::Gitlab)
        } else if host == "codeberg.org" || host.contains("gitea") || host.contains("forgejo") {
            Some(ForgeKind::Gitea)
        } else {
            None
        }
    }
}

/// `[forge]`: where `harrow pr` opens pull requests when the remote's address does not say.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForgeSection {
    /// `github`, `gitlab` or `gitea` (Forgejo too); absent: told from the remote's host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<ForgeKind>,
    /// The forge's REST API, for GitHub Enterprise or a self-hosted GitLab or Gitea
    /// (`https://github.example.com/api/v3`); absent: the usual one for the remote's host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_url: Option<String>,
    /// Labels put on every pull request harrow opens.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
}

/// `[sessions]`: where the fleet and `harrow sessions` look for runs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionsSection {
    /// More folders of session folders, beside harrow's and Tilth's: a shared mount where
    /// other machines' runs write theirs is one more entry.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dirs: Vec<PathBuf>,
}

/// `[notify]`: a program of yours told when a run needs a person or is done.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotifySection {
    /// The program and its arguments; it gets the change as one JSON line on its stdin.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// How long it may take before it is stopped (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u64>,
}

/// `[loop]`: the same tool call with the same arguments this many times in a row earns the
/// worker one nudge, and the next repeat holds the task for a person.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoopSection {
    /// 2–100; 0 turns the check off. Unset: 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<u64>,
    /// How many times the worktree may come back to a state an earlier turn left it in, with
    /// no case submitted, before the worker is nudged (one more holds the task): 1–100; 0 turns
    /// the check off. Unset: 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub returns: Option<u64>,
}

/// `[run]`: how runs go when the command line does not say.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSection {
    /// How many ready tasks of a graph plan are worked at once (1–32).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lanes: Option<u64>,
    /// Where runs keep their worktrees and builds (`<work_dir>/<session id>/`), when not in
    /// the session folder: local disk, while the record goes to a shared one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_dir: Option<std::path::PathBuf>,
}

impl RunSection {
    /// The folder of this machine's worktrees: `HARROW_WORK_DIR`, else `[run] work_dir`; `None`
    /// keeps them in each session's folder.
    pub fn work_root(&self) -> Option<std::path::PathBuf> {
        std::env::var_os("HARROW_WORK_DIR")
            .filter(|d| !d.is_empty())
            .map(std::path::PathBuf::from)
            .or_else(|| self.work_dir.clone())
    }
}

/// `[console]`: how the console looks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsoleSection {
    /// The theme to start with: `dark`, `light`, `high-contrast` or the name of one in the
    /// config dir's `themes/` (`$HARROW_THEME` overrides it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<String>,
    /// How the console calls you when a task waits for your decision: `osc9` (a desktop
    /// notification in iTerm2, `WezTerm`, kitty, Windows Terminal), `osc777` (foot, Ghostty,
    /// rxvt), `bell` (the terminal bell only) or `off`. The bell rings with either OSC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notify: Option<Notify>,
}

/// How the console calls a person to a held task.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Notify {
    #[default]
    Osc9,
    Osc777,
    Bell,
    Off,
}

impl Notify {
    /// The bytes that call the person: the bell, and the notification escape with `text`
    /// (control characters taken out, so a task id from a log cannot end the sequence).
    pub fn sequence(self, text: &str) -> String {
        let text: String = text.chars().filter(|c| !c.is_control()).collect();
        match self {
            Notify::Osc9 => format!("\x07\x1b]9;harrow: {text}\x07"),
            Notify::Osc777 => format!("\x07\x1b]777;notify;harrow;{text}\x07"),
            Notify::Bell => "\x07".to_owned(),
            Notify::Off => String::new(),
        }
    }
}

/// `[models.worker]`, `[models.evaluator]`: what a role falls back on when its endpoint keeps
/// failing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleModels {
    /// Endpoints to take the role's calls, in order, once its own has spent its tries on a
    /// rate limit, a server error, a stall or a cut reply.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallback: Vec<FallbackEndpoint>,
    /// `[models.worker]` only: a stronger model for a task its evaluator rejected
    /// `escalate_after_rejects` times; the next task starts on the first model again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalate_to: Option<FallbackEndpoint>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalate_after_rejects: Option<u64>,
    /// `[models.worker]` only: the models a best-of task's attempts are worked by, one each
    /// in turn (the worker's own model when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub best_of: Vec<FallbackEndpoint>,
}

/// One endpoint to fall back on. Its key is read from the environment variable named, never
/// from a file, and goes to that endpoint only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FallbackEndpoint {
    pub base_url: String,
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
}

/// `[models]`: endpoints and models per role. Keys are never read from here: they come from
/// the environment (`HARROW_API_KEY`, `HARROW_EVALUATOR_API_KEY`) so they stay out of files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelsSection {
    /// `[models.worker]`: the worker's endpoints to fall back on.
    #[serde(default)]
    pub worker: RoleModels,
    /// `[models.evaluator]`: the evaluator's.
    #[serde(default)]
    pub evaluator: RoleModels,
    #[serde(default)]
    pub base_url: Option<String>,
    #[serde(default)]
    pub worker_model: Option<String>,
    #[serde(default)]
    pub evaluator_model: Option<String>,
    #[serde(default)]
    pub evaluator_base_url: Option<String>,
    #[serde(default = "default_connect_timeout")]
    pub connect_timeout_secs: u64,
    /// Longest silence while waiting for a reply: before its first chunk, or between two.
    #[serde(default = "default_read_timeout")]
    pub read_timeout_secs: u64,
    /// The most tokens one reply may have, sent as `max_tokens`: bounds a runaway generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
    /// The worker's model's context window in tokens, when the server does not say it
    /// (llama.cpp's `/props`, vLLM's models list do).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// The evaluator's, when its model is another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluator_context_window: Option<u64>,
    /// The share of the worker's window (0.3 to 0.95) a request may fill before its
    /// conversation is compacted (default 0.8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compact_at: Option<f64>,
    /// Ask for replies as a stream (default); `false` asks for whole replies only.
    #[serde(default = "default_stream")]
    pub stream: bool,
    /// The most bytes one reply may have; past it the reply is cut and the call fails.
    #[serde(default = "default_max_reply_bytes")]
    pub max_reply_bytes: u64,
    /// The most tool calls one reply may make; past it the reply is cut and the call fails.
    #[serde(default = "default_max_tool_calls")]
    pub max_tool_calls: usize,
    /// The longest one reply may take, first byte to last.
    #[serde(default = "default_max_reply_secs")]
    pub max_reply_secs: u64,
    /// Tries per call when the server is busy (429, 5xx), unreachable, silent or unusable.
    #[serde(default = "default_max_tries")]
    pub max_tries: u32,
    /// The first wait between two tries; each later one doubles (with jitter), unless the
    /// server says how long to wait (`Retry-After`).
    #[serde(default = "default_retry_base_ms")]
    pub retry_base_ms: u64,
}

fn default_max_reply_bytes() -> u64 {
    crate::brain::client::DEFAULT_MAX_REPLY_BYTES
}

fn default_max_tool_calls() -> usize {
    crate::brain::stream::MAX_TOOL_CALLS
}

fn default_max_reply_secs() -> u64 {
    crate::brain::client::DEFAULT_MAX_REPLY_SECS
}

fn default_max_tries() -> u32 {
    4
}

fn default_retry_base_ms() -> u64 {
    2_000
}

fn default_stream() -> bool {
    true
}

fn default_connect_timeout() -> u64 {
    10
}

fn default_read_timeout() -> u64 {
    300
}

impl Default for ModelsSection {
    fn default() -> Self {
        ModelsSection {
            worker: RoleModels::default(),
            evaluator: RoleModels::default(),
            base_url: None,
            worker_model: None,
            evaluator_model: None,
            evaluator_base_url: None,
            connect_timeout_secs: default_connect_timeout(),
            read_timeout_secs: default_read_timeout(),
            max_output_tokens: None,
            context_window: None,
            evaluator_context_window: None,
            compact_at: None,
            max_reply_bytes: default_max_reply_bytes(),
            max_tool_calls: default_max_tool_calls(),
            max_reply_secs: default_max_reply_secs(),
            max_tries: default_max_tries(),
            retry_base_ms: default_retry_base_ms(),
            stream: default_stream(),
        }
    }
}

/// `[hands]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandsSection {
    #[serde(default = "default_bash_timeout")]
    pub bash_timeout_secs: u64,
    #[serde(default)]
    pub sandbox: SandboxMode,
    /// Extra `pre_tool` rules, on top of the built-in ones.
    #[serde(default)]
    pub deny: Vec<DenyRule>,
    /// Linters run after an edit, by extension.
    #[serde(default)]
    pub post_edit: Vec<PostEditLinter>,
    /// Environment variables the worker's commands may see besides the built-in allow-list
    /// (credentials never pass).
    #[serde(default)]
    pub pass_env: Vec<String>,
}

fn default_bash_timeout() -> u64 {
    120
}

impl Default for HandsSection {
    fn default() -> Self {
        HandsSection {
            bash_timeout_secs: default_bash_timeout(),
            sandbox: SandboxMode::Auto,
            deny: Vec::new(),
            post_edit: Vec::new(),
            pass_env: Vec::new(),
        }
    }
}

impl HandsSection {
    pub fn to_hands_config(&self) -> HandsConfig {
        HandsConfig {
            bash_timeout: Duration::from_secs(self.bash_timeout_secs.max(1)),
            sandbox: self.sandbox,
            deny: self.deny.clone(),
            post_edit: self.post_edit.clone(),
            pass_env: self.pass_env.clone(),
            lane: None,
            build_dir: None,
        }
    }
}

/// Why the configuration could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error(
        "{path}: {message}; fix the file or move it aside (see the README's Configuration section)"
    )]
    Parse { path: PathBuf, message: String },
}

/// The most of a configuration file harrow reads.
const CONFIG_MAX: u64 = 1 << 20;

/// Where the configuration is read from: the explicit path, `$HARROW_CONFIG`, or the default.
pub fn config_path(explicit: Option<&Path>) -> Option<PathBuf> {
    explicit
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("HARROW_CONFIG").filter(|v| !v.is_empty()).map(PathBuf::from))
        .or_else(|| {
            directories::ProjectDirs::from("", "", "harrow")
                .map(|d| d.config_dir().join("config.toml"))
        })
}

impl Config {
    /// Reads the configuration. A missing default file is the default configuration; a missing
    /// file that was named explicitly is an error.
    pub fn load(explicit: Option<&Path>) -> Result<(Config, Option<PathBuf>), ConfigError> {
        let Some(path) = config_path(explicit) else { return Ok((Config::default(), None)) };
        let named =
            explicit.is_some() || std::env::var_os("HARROW_CONFIG").is_some_and(|v| !v.is_empty());
        let text = match crate::safe_io::read_named(&path, CONFIG_MAX) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !named => {
                return Ok((Config::default(), None));
            }
            Err(source) => return Err(ConfigError::Read { path, source }),
        };
        let config = Config::parse(&text)
            .map_err(|message| ConfigError::Parse { path: path.clone(), message })?;
        Ok((config, Some(path)))
    }

    /// Parses the text of a configuration file, checking the patterns it holds.
    pub fn parse(text: &str) -> Result<Config, String> {
        let config: Config = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
            let message = e.message().to_owned();
            match line {
                Some(l) => format!("line {l}: {message}"),
                None => message,
            }
        })?;
        crate::hands::hooks::PreTool::new(Path::new("/"), &config.hands.deny)
            .map_err(|e| e.to_string())?;
        if let Some(n) = config.repeats.repeats.filter(|n| *n == 1 || *n > 100) {
            return Err(format!(
                "[loop] repeats = {n}: give 2 to 100 calls in a row, or 0 to turn the check off"
            ));
        }
        for (key, n) in [
            ("context_window", config.models.context_window),
            ("evaluator_context_window", config.models.evaluator_context_window),
        ] {
            if let Some(n) = n.filter(|n| *n == 0 || *n > crate::brain::refusal::MAX_WINDOW) {
                return Err(format!(
                    "[models] {key} = {n}: give the model's context window in tokens (1 to 10,000,000), or leave it out to ask the server"
                ));
            }
        }
        if let Some(f) = config.models.compact_at.filter(|f| !(0.3..=0.95).contains(f)) {
            return Err(format!(
                "[models] compact_at = {f}: give the share of the window a request may fill before its conversation is compacted, 0.3 to 0.95"
            ));
        }
        if let Some(n) = config.repeats.returns.filter(|n| *n > 100) {
            return Err(format!(
                "[loop] returns = {n}: give 1 to 100 returns to an earlier state, or 0 to turn the check off"
            ));
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loop threshold that would call every call a loop, or one past any use, is refused in
    /// one line that says what to give; 0 turns the check off.
    #[test]
    fn a_loop_threshold_of_one_or_past_a_hundred_is_refused() {
        for bad in ["[loop]\nrepeats = 1\n", "[loop]\nrepeats = 101\n"] {
            let e = Config::parse(bad).unwrap_err();
            assert!(
                e.contains("[loop] repeats") && e.contains("2 to 100") && !e.contains('\n'),
                "{e}"
            );
        }
        assert_eq!(Config::parse("[loop]\nrepeats = 0\n").unwrap().repeats.repeats, Some(0));
        for bad in
            ["[models]\ncontext_window = 0\n", "[models]\nevaluator_context_window = 20000000\n"]
        {
            let e = Config::parse(bad).unwrap_err();
            assert!(
                e.contains("context_window") && e.contains("1 to 10,000,000") && !e.contains('\n'),
                "{e}"
            );
        }
        assert_eq!(
            Config::parse("[models]\ncontext_window = 16384\n").unwrap().models.context_window,
            Some(16384)
        );
        let e = Config::parse("[loop]\nreturns = 101\n").unwrap_err();
        assert!(e.contains("[loop] returns") && e.contains("1 to 100") && !e.contains('\n'), "{e}");
        assert_eq!(Config::parse("[loop]\nreturns = 0\n").unwrap().repeats.returns, Some(0));
        assert!(Config::parse("[loop]\nrepeat = 3\n").is_err(), "an unknown key is refused");
    }

    #[test]
    fn a_notification_cannot_be_ended_early_by_the_text_it_carries() {
        assert_eq!(Notify::Osc9.sequence("T-1\x07\x1b]0;x"), "\x07\x1b]9;harrow: T-1]0;x\x07");
        assert_eq!(Notify::Osc777.sequence("T-1"), "\x07\x1b]777;notify;harrow;T-1\x07");
        assert_eq!(Notify::Bell.sequence("T-1"), "\x07");
        assert_eq!(Notify::Off.sequence("T-1"), "");
    }

    #[test]
    fn reads_every_section() {
        let c = Config::parse(
            r#"
[hands]
bash_timeout_secs = 60
sandbox = "off"

[[hands.deny]]
label = "no publishing"
pattern = '\bnpm\s+publish\b'

[[hands.post_edit]]
ext = "py"
command = "ruff check {file}"

[[validators]]
name = "tests"
command = "cargo test"

[models]
base_url = "http://localhost:8000/v1"
worker_model = "local/worker"
read_timeout_secs = 60

[prices."local/worker"]
prompt_per_mtok = 0.5
completion_per_mtok = 1.5
"#,
        )
        .unwrap();
        assert_eq!(c.hands.to_hands_config().bash_timeout, Duration::from_secs(60));
        assert_eq!(c.hands.sandbox, SandboxMode::Off);
        assert_eq!(c.hands.post_edit[0].timeout_secs, 30);
        assert_eq!(c.validators.unwrap()[0].timeout_secs, 600);
        assert_eq!(c.models.worker_model.as_deref(), Some("local/worker"));
        assert_eq!((c.models.connect_timeout_secs, c.models.read_timeout_secs), (10, 60));
        assert!((c.prices["local/worker"].completion_per_mtok - 1.5).abs() < 1e-12);
        assert!(
            Config::parse("[models]\napi_key = \"sk-1\"\n")
                .unwrap_err()
                .contains("unknown field `api_key`"),
            "keys are not read from files"
        );
        assert_eq!(Config::parse("validators = []").unwrap().validators, Some(vec![]));
        assert_eq!(Config::parse("").unwrap(), Config::default());
    }

    #[test]
    fn errors_name_the_line_and_the_problem() {
        let e = Config::parse("[hands]\nbash_timeout_secs = \"soon\"\n").unwrap_err();
        assert!(e.starts_with("line 2:"), "{e}");
        let e = Config::parse("[hand]\n").unwrap_err();
        assert!(e.contains("unknown field"), "{e}");
        let e = Config::parse("[[hands.deny]]\nlabel = \"x\"\npattern = \"(\"\n").unwrap_err();
        assert!(e.contains("hook rule 'x'"), "{e}");
    }

    #[test]
    fn a_named_missing_file_is_an_error_and_a_default_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.toml");
        assert!(matches!(Config::load(Some(&missing)), Err(ConfigError::Read { .. })));
        std::fs::write(&missing, "[hands]\nsandbox = \"bwrap\"\n").unwrap();
        let (c, path) = Config::load(Some(&missing)).unwrap();
        assert_eq!(c.hands.sandbox, SandboxMode::Bwrap);
        assert_eq!(path.as_deref(), Some(missing.as_path()));
    }
}
