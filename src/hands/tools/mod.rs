//! The tool registry: the one place that owns each tool's name, JSON schema, description and
//! handler. The model learns the tools from these schemas; prompts never list them.

pub mod args;
mod bash;
pub mod files;
mod search;
pub mod shorten;

use args::{Args, ToolError};
use serde_json::{Value, json};

/// What kind of thing a tool does, for the hooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    Shell,
    Read,
    Edit,
}

/// One tool the worker can call.
#[derive(Debug)]
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub kind: ToolKind,
    /// The JSON schema of the arguments.
    pub parameters: fn() -> Value,
    /// A one-line reminder of the arguments, used in error messages.
    pub usage: &'static str,
    pub(crate) run: fn(&super::Hands, &Args<'_>) -> Result<String, ToolError>,
}

impl ToolSpec {
    /// The tool in the Chat Completions `tools` format.
    pub fn openai_schema(&self) -> Value {
        json!({"type": "function", "function": {"name": self.name, "description": self.description, "parameters": (self.parameters)()}})
    }
}

fn object(properties: &Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

/// Every tool, in the order the model sees them.
pub static TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "bash",
        description: "Run a shell command in the workspace root and return its combined output and exit code. Use it to build, run tests and inspect git history; prefer the file tools for reading and editing.",
        kind: ToolKind::Shell,
        parameters: || {
            object(
                &json!({
                    "command": {"type": "string", "description": "The command line, run with sh -c."},
                    "timeout_seconds": {"type": "integer", "minimum": 1, "maximum": bash::MAX_TIMEOUT_SECS, "description": "Kill the command after this many seconds (default 120)."}
                }),
                &["command"],
            )
        },
        usage: "{\"command\": string, \"timeout_seconds\"?: integer}",
        run: |h, a| bash::bash(h, a),
    },
    ToolSpec {
        name: "read_file",
        description: "Read a text file in the workspace, whole or a range of lines.",
        kind: ToolKind::Read,
        parameters: || {
            object(
                &json!({
                    "path": {"type": "string", "description": "Path relative to the workspace root."},
                    "start_line": {"type": "integer", "minimum": 1, "description": "First line to return (1-based)."},
                    "end_line": {"type": "integer", "minimum": 1, "description": "Last line to return (inclusive)."}
                }),
                &["path"],
            )
        },
        usage: "{\"path\": string, \"start_line\"?: integer, \"end_line\"?: integer}",
        run: |h, a| files::read_file(&h.jail, a),
    },
    ToolSpec {
        name: "write_file",
        description: "Create or overwrite a file in the workspace with the given content; missing folders are created.",
        kind: ToolKind::Edit,
        parameters: || {
            object(
                &json!({
                    "path": {"type": "string", "description": "Path relative to the workspace root."},
                    "content": {"type": "string", "description": "The whole new content of the file."}
                }),
                &["path", "content"],
            )
        },
        usage: "{\"path\": string, \"content\": string}",
        run: |h, a| files::write_file(&h.jail, a),
    },
    ToolSpec {
        name: "edit_file",
        description: "Replace one exact occurrence of old_string with new_string in a file. Fails if old_string occurs zero or several times; include enough context to make it unique.",
        kind: ToolKind::Edit,
        parameters: || {
            object(
                &json!({
                    "path": {"type": "string", "description": "Path relative to the workspace root."},
                    "old_string": {"type": "string", "description": "The exact text to replace, whitespace included."},
                    "new_string": {"type": "string", "description": "The replacement text."}
                }),
                &["path", "old_string", "new_string"],
            )
        },
        usage: "{\"path\": string, \"old_string\": string, \"new_string\": string}",
        run: |h, a| files::edit_file(&h.jail, a),
    },
    ToolSpec {
        name: "glob",
        description: "List workspace files whose path matches a glob (e.g. **/*.rs, src/*.py), sorted; files ignored by .gitignore are left out.",
        kind: ToolKind::Read,
        parameters: || {
            object(
                &json!({
                    "pattern": {"type": "string", "description": "Glob relative to the workspace root; * stays within a folder, ** crosses folders."},
                    "max_results": {"type": "integer", "minimum": 1, "maximum": 2000, "description": "Most paths to return (default 200)."}
                }),
                &["pattern"],
            )
        },
        usage: "{\"pattern\": string, \"max_results\"?: integer}",
        run: |h, a| search::glob(&h.jail, a),
    },
    ToolSpec {
        name: "grep",
        description: "Search workspace files for a regular expression; returns path:line: text for each matching line. Files ignored by .gitignore and binary files are skipped.",
        kind: ToolKind::Read,
        parameters: || {
            object(
                &json!({
                    "pattern": {"type": "string", "description": "A regular expression (Rust regex syntax)."},
                    "path_glob": {"type": "string", "description": "Only search files matching this glob (default **/*)."},
                    "max_matches": {"type": "integer", "minimum": 1, "maximum": 2000, "description": "Stop after this many matches (default 200)."},
                    "ignore_case": {"type": "boolean", "description": "Match case-insensitively."}
                }),
                &["pattern"],
            )
        },
        usage: "{\"pattern\": string, \"path_glob\"?: string, \"max_matches\"?: integer, \"ignore_case\"?: boolean}",
        run: |h, a| search::grep(&h.jail, a),
    },
    ToolSpec {
        name: "list_dir",
        description: "List a folder of the workspace: sub-folders end in /, files show their size.",
        kind: ToolKind::Read,
        parameters: || {
            object(
                &json!({
                    "path": {"type": "string", "description": "Folder relative to the workspace root (default: the root)."}
                }),
                &[],
            )
        },
        usage: "{\"path\"?: string}",
        run: |h, a| files::list_dir(&h.jail, a),
    },
];

/// Finds a tool by name.
pub fn find(name: &str) -> Option<&'static ToolSpec> {
    TOOLS.iter().find(|t| t.name == name)
}

/// The names of every tool, for the "unknown tool" message.
pub fn names() -> Vec<&'static str> {
    TOOLS.iter().map(|t| t.name).collect()
}
