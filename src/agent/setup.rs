//! What an agent starts with: a private home of its own in the session folder, the sandbox
//! over the task's worktree with that home writable, and an environment built by allow-list —
//! harrow's basics, the names the operator passes, values the operator sets, and keys mapped
//! from harrow's sealed key variables. harrow's own endpoints' keys never reach it.

use super::AgentSpec;
use crate::hands::Hands;
use crate::hands::isolation::Isolation;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Bytes of the operator's home folder copied into the agent's at most.
const HOME_COPY_BYTES: u64 = 64 * 1024 * 1024;

/// The agent's sandbox, home and environment.
#[derive(Debug)]
pub struct Prepared {
    pub isolation: Isolation,
    pub home: PathBuf,
    pub env: Vec<(OsString, OsString)>,
}

/// Checks a spec before anything starts: a command, names the sandbox can pass, no credential
/// as a plain value, keys only from harrow's sealed variables that are not its own endpoints'
/// and that are set. Each problem is one line naming the setting and the fix.
pub fn check(spec: &AgentSpec) -> Result<(), String> {
    if spec.command.first().is_none_or(|p| p.trim().is_empty()) {
        return Err(
            "[agent] command is empty: name the agent's ACP command, e.g. [\"codex-acp\"]".into()
        );
    }
    for name in spec.env.keys() {
        if crate::keys::is_secret(name) {
            return Err(crate::printable::line(&format!(
                "[agent] env sets {name}, which holds a credential: put it under [agent] keys, mapped from a HARROW_<NAME>_API_KEY variable you export"
            )));
        }
    }
    for name in &spec.pass_env {
        if crate::keys::is_secret(name) {
            return Err(crate::printable::line(&format!(
                "[agent] pass_env names {name}, a credential: credentials are never passed by name; map it under [agent] keys from a HARROW_<NAME>_API_KEY variable"
            )));
        }
    }
    for (agent_var, from) in &spec.keys {
        let own = crate::keys::KEY_VARS.contains(&from.to_ascii_uppercase().as_str());
        if own || !crate::keys::is_key_var(from) {
            return Err(crate::printable::line(&format!(
                "[agent] keys: {agent_var} = {from:?}: take it from a variable of the form HARROW_<NAME>_API_KEY that is not one of harrow's own ({}), e.g. HARROW_AGENT_API_KEY",
                crate::keys::KEY_VARS.join(", ")
            )));
        }
        if crate::keys::var(from).is_none() {
            return Err(crate::printable::line(&format!(
                "[agent] keys: {agent_var} comes from {from}, which is not set: export it before starting harrow"
            )));
        }
    }
    Ok(())
}

/// Makes the agent's home (fresh: whatever an earlier agent left there is removed, since it
/// wrote it), its sandbox and its environment, for lane `lane` of the session in `dir`.
pub fn prepare(spec: &AgentSpec, hands: &Hands, dir: &Path, lane: u64) -> Result<Prepared, String> {
    check(spec)?;
    let home = dir.join("agents").join(format!("lane-{lane}"));
    fresh_home(&home)
        .map_err(|e| format!("cannot make the agent's home {}: {e}", home.display()))?;
    if let Some(from) = &spec.home {
        let mut budget = HOME_COPY_BYTES;
        copy_home(from, &home, &mut budget).map_err(|e| {
            crate::printable::line(&format!(
                "[agent] home {}: cannot copy it into the agent's home: {e}",
                from.display()
            ))
        })?;
    }
    let isolation = hands.agent_isolation(&home)?;
    let mut env = crate::hands::environment::for_command(
        std::env::vars_os(),
        &spec.pass_env,
        isolation.private_tmp(),
        hands.config.lane,
    );
    let set = |env: &mut Vec<(OsString, OsString)>, name: &str, value: OsString| {
        env.retain(|(n, _)| n != name);
        env.push((name.into(), value));
    };
    set(&mut env, "HOME", home.clone().into_os_string());
    for (var, sub) in [
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_CACHE_HOME", ".cache"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_STATE_HOME", ".local/state"),
    ] {
        set(&mut env, var, home.join(sub).into_os_string());
    }
    for (name, value) in &spec.env {
        set(&mut env, name, value.into());
    }
    for (name, from) in &spec.keys {
        if let Some(key) = crate::keys::var(from) {
            set(&mut env, name, key.into());
        }
    }
    Ok(Prepared { isolation, home, env })
}

/// Makes `home` anew. The folder above it (`agents/` in the session folder) must be a real
/// folder: in a session folder someone else could write, a link there would turn the removal
/// of an old home into the removal of a folder harrow never made.
fn fresh_home(home: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    if let Some(parent) = home.parent()
        && std::fs::symlink_metadata(parent).is_ok_and(|m| !m.is_dir())
    {
        return Err(std::io::Error::other(format!(
            "{} is not a folder harrow made (a link or a file); remove it and go on",
            parent.display()
        )));
    }
    match std::fs::symlink_metadata(home) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(home)?,
        Ok(_) => std::fs::remove_file(home)?,
        Err(_) => {}
    }
    if let Some(parent) = home.parent() {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(parent)?;
    }
    std::fs::DirBuilder::new().mode(0o700).create(home)?;
    std::fs::set_permissions(home, std::fs::Permissions::from_mode(0o700))
}

/// Copies folders and regular files (never links, devices or pipes) from `from` into `to`,
/// which harrow just made and nothing else has written.
fn copy_home(from: &Path, to: &Path, budget: &mut u64) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = std::fs::symlink_metadata(entry.path())?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            std::fs::create_dir(&target)?;
            copy_home(&entry.path(), &target, budget)?;
        } else if kind.is_file() {
            *budget = budget.checked_sub(kind.len()).ok_or_else(|| {
                std::io::Error::other(format!("more than {} MiB", HOME_COPY_BYTES >> 20))
            })?;
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_old_home_is_replaced_but_never_through_a_link_above_it() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("session/agents/lane-1");
        fresh_home(&home).unwrap();
        std::fs::write(home.join("left.txt"), "x").unwrap();
        fresh_home(&home).unwrap();
        assert!(!home.join("left.txt").exists(), "what an earlier agent left is gone");
        // A session folder whose `agents` is a link to someone's folder.
        let victim = tmp.path().join("victim");
        std::fs::create_dir_all(victim.join("lane-1")).unwrap();
        std::fs::write(victim.join("lane-1/keep.txt"), "mine").unwrap();
        let carried = tmp.path().join("carried");
        std::fs::create_dir_all(&carried).unwrap();
        std::os::unix::fs::symlink(&victim, carried.join("agents")).unwrap();
        let err = fresh_home(&carried.join("agents/lane-1")).unwrap_err();
        assert!(err.to_string().contains("not a folder harrow made"), "{err}");
        assert!(
            victim.join("lane-1/keep.txt").exists(),
            "nothing of the link's target was removed"
        );
    }
}
