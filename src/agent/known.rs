//! The agents harrow knows how to start over ACP, and how each is installed: what
//! `harrow agents` lists.

/// A known agent.
#[derive(Debug, Clone, Copy)]
pub struct Known {
    pub name: &'static str,
    /// The ACP command: what `--agent` or `[agent] command` takes.
    pub command: &'static [&'static str],
    /// How to install it.
    pub install: &'static str,
    /// What it needs to reach its model.
    pub login: &'static str,
}

/// Every agent harrow has a word for, in the order `harrow agents` lists them.
pub const KNOWN: &[Known] = &[
    Known {
        name: "Codex",
        command: &["codex-acp"],
        install: "npm install -g @zed-industries/codex-acp",
        login: "OPENAI_API_KEY (via [agent] keys), or a ChatGPT login copied in with [agent] home",
    },
    Known {
        name: "Claude Code",
        command: &["claude-code-acp"],
        install: "npm install -g @zed-industries/claude-code-acp",
        login: "ANTHROPIC_API_KEY (via [agent] keys), or a login copied in with [agent] home",
    },
    Known {
        name: "Gemini CLI",
        command: &["gemini", "--experimental-acp"],
        install: "npm install -g @google/gemini-cli",
        login: "GEMINI_API_KEY (via [agent] keys)",
    },
    Known {
        name: "Qwen Code",
        command: &["qwen", "--acp"],
        install: "npm install -g @qwen-code/qwen-code",
        login: "its OpenAI-compatible key (via [agent] keys)",
    },
    Known {
        name: "opencode",
        command: &["opencode", "acp"],
        install: "npm install -g opencode-ai",
        login: "its provider's key (via [agent] keys)",
    },
    Known {
        name: "goose",
        command: &["goose", "acp"],
        install: "see https://block.github.io/goose/docs/getting-started/installation",
        login: "its provider's key (via [agent] keys)",
    },
];

/// Where `program` is on `PATH`, if it is.
pub fn on_path(program: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).map(|d| d.join(program)).find(|p| p.is_file())
}
