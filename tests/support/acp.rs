//! The scripted ACP agent of `tests/fixtures/acp/scripted_agent.py`, configured as a run's
//! worker the way an operator would: `[agent]` in `<home>/harrow/config.toml`.

use serde_json::{Value, json};
use std::path::Path;

/// Writes `<home>/harrow/config.toml`: the scripted agent with `script`, the sandbox
/// `sandbox`, `extra` TOML lines for `[agent]` after.
pub fn configure(home: &Path, script: &Value, sandbox: &str, extra: &str) {
    // The folder in the agent's arguments tells its processes from other tests' agents.
    let mut script = script.clone();
    script["marker"] = json!(home.display().to_string());
    let program =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/acp/scripted_agent.py");
    let command = toml::Value::Array(
        // The program's text itself, not its path: a checkout under /tmp is out of sight in
        // bubblewrap's private /tmp.
        [
            "python3".to_owned(),
            "-c".to_owned(),
            std::fs::read_to_string(program).unwrap(),
            script.to_string(),
        ]
        .into_iter()
        .map(toml::Value::String)
        .collect(),
    );
    let dir = home.join("harrow");
    std::fs::create_dir_all(&dir).unwrap();
    let text =
        format!("[hands]\nsandbox = \"{sandbox}\"\n\n[agent]\ncommand = {command}\n{extra}\n");
    std::fs::write(dir.join("config.toml"), text).unwrap();
}
