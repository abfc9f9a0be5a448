//! API keys kept out of every process the worker can inspect, and out of every text harrow
//! writes.
//!
//! The worker runs shell commands as the same user as harrow. Without a sandbox,
//! `cat /proc/$PPID/environ` from a tool's shell shows the environment harrow was started
//! with, so a key left there is a key handed over. [`seal`] runs first thing in `main`: when
//! credentials are in the environment it moves the keys harrow uses into an inherited pipe
//! and re-executes the binary with every credential variable removed, so the environment of
//! the running harrow (what `/proc/PID/environ` shows) holds none; the new image takes the keys
//! from the pipe into memory. The process is also marked non-dumpable, which keeps other
//! processes of the same (non-root) user out of its memory.
//!
//! [`scrub`] replaces every key value harrow knows in a text, for lines written to the log and
//! errors printed to the terminal: a provider error that echoes a request header must not
//! carry the key onward.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::sync::OnceLock;

/// Whether an environment variable may hold a credential the worker must not see.
pub fn is_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper.starts_with("HARROW_")
        || upper.starts_with("TILTH_")
        || ["_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD", "_ACCESS_KEY", "_SECRET_KEY"]
            .iter()
            .any(|s| upper.ends_with(s))
        || matches!(
            upper.as_str(),
            "API_KEY" | "TOKEN" | "GITHUB_TOKEN" | "GH_TOKEN" | "OPENAI_API_KEY"
        )
}

/// The variables harrow reads keys from: the models' keys, and the tokens `push` and `pr`
/// use for a remote and a forge.
pub const KEY_VARS: &[&str] = &[
    "HARROW_API_KEY",
    "HARROW_EVALUATOR_API_KEY",
    "HARROW_PREP_API_KEY",
    "HARROW_GIT_TOKEN",
    "GITHUB_TOKEN",
    "GITLAB_TOKEN",
    "GITEA_TOKEN",
];
/// Whether harrow reads a key from the variable `name`: one of [`KEY_VARS`], or a model key
/// of the form `HARROW_…_API_KEY` (a fallback endpoint's, named in the configuration). Keys
/// are sealed away by name before the configuration is read, so the form is the allow-list.
pub fn is_key_var(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    KEY_VARS.contains(&upper.as_str())
        || (upper.starts_with("HARROW_") && upper.ends_with("_API_KEY") && upper.len() > 15)
}

/// Names the pipe a re-executed harrow reads its keys from.
const FD_VAR: &str = "HARROW_KEYS_FD";
/// What scrubbed text shows in a key's place.
pub const REDACTED: &str = "[redacted]";

static KEYS: OnceLock<BTreeMap<String, String>> = OnceLock::new();

/// Whether an environment variable holds a credential (a key, a token, a password) rather
/// than a setting such as `HARROW_BASE_URL`.
fn is_credential(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    (is_secret(name) && !(upper.starts_with("HARROW_") || upper.starts_with("TILTH_")))
        || is_key_var(&upper)
}

/// Moves credentials out of the environment (see the module docs). Returns only when the
/// environment holds no credential; an error means harrow must not go on, since the keys would
/// stay in reach of every tool.
pub fn seal() -> std::io::Result<()> {
    let _ = nix::sys::prctl::set_dumpable(false);
    if let Some(fd) = std::env::var_os(FD_VAR) {
        let fd = fd.to_string_lossy().into_owned();
        let mut text = String::new();
        std::fs::File::open(format!("/proc/self/fd/{fd}"))?.read_to_string(&mut text)?;
        if let Ok(n) = fd.parse::<i32>() {
            let _ = nix::unistd::close(n);
        }
        let keys = text
            .split('\0')
            .filter_map(|pair| pair.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let _ = KEYS.set(keys);
        return Ok(());
    }
    let credentials: Vec<(OsString, OsString)> =
        std::env::vars_os().filter(|(k, _)| is_credential(&k.to_string_lossy())).collect();
    if credentials.is_empty() {
        let _ = KEYS.set(BTreeMap::new());
        return Ok(());
    }
    let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    nix::fcntl::fcntl(&read, nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty()))?;
    let mut payload = String::new();
    for (k, v) in &credentials {
        let (k, v) = (k.to_string_lossy(), v.to_string_lossy());
        if is_key_var(&k) && !v.trim().is_empty() {
            let _ = write!(payload, "{k}={v}\0");
        }
    }
    std::fs::File::from(write).write_all(payload.as_bytes())?;
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.args(std::env::args_os().skip(1)).env(FD_VAR, read.as_raw_fd().to_string());
    for (k, _) in &credentials {
        cmd.env_remove(k);
    }
    Err(cmd.exec())
}

/// Gives a harrow child process (a resume the console starts) the keys this one holds, the
/// way [`seal`] passes them to itself: through an inherited pipe, never the environment. Keep
/// the returned end until the child is spawned, then drop it.
pub fn hand_to(cmd: &mut std::process::Command) -> std::io::Result<std::os::fd::OwnedFd> {
    let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    nix::fcntl::fcntl(&read, nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::empty()))?;
    let mut payload = String::new();
    let held: Vec<(String, String)> = match KEYS.get() {
        Some(keys) => keys.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        None => std::env::vars().filter(|(k, _)| is_key_var(k)).collect(),
    };
    for (name, value) in held.iter().filter(|(k, v)| is_key_var(k) && !v.trim().is_empty()) {
        let _ = write!(payload, "{name}={value}\0");
        cmd.env_remove(name);
    }
    std::fs::File::from(write).write_all(payload.as_bytes())?;
    cmd.env(FD_VAR, read.as_raw_fd().to_string());
    for name in KEY_VARS {
        cmd.env_remove(name);
    }
    Ok(read)
}

/// A key harrow was started with: from the sealed store, else (a library caller that never
/// sealed, such as a test) from the environment.
pub fn var(name: &str) -> Option<String> {
    let value = match KEYS.get() {
        Some(keys) => keys.get(name).cloned(),
        None => std::env::var(name).ok(),
    };
    value.filter(|v| !v.trim().is_empty())
}

/// Every form a key may be echoed in: as it is, URL-encoded, and base64-encoded behind any
/// prefix (`Basic base64(user:token)`, as a forge's or git's error may quote the header it
/// was sent). Base64 of a key behind a prefix depends on the prefix's length modulo 3 only,
/// except for the characters at either edge, so the three cores cover every user name.
fn forms(key: &str) -> Vec<String> {
    use base64::Engine as _;
    let mut out = vec![key.to_owned()];
    let encoded: String = url::form_urlencoded::byte_serialize(key.as_bytes()).collect();
    out.push(encoded);
    for engine in
        [&base64::engine::general_purpose::STANDARD, &base64::engine::general_purpose::URL_SAFE]
    {
        for shift in 0..3usize {
            let mut bytes = vec![0u8; shift];
            bytes.extend_from_slice(key.as_bytes());
            let text = engine.encode(&bytes);
            // The characters that depend on the filler before, and on what follows after.
            let skip = [0, 2, 3][shift];
            let whole = bytes.len() / 3 * 4;
            if let Some(core) = text.get(skip..whole) {
                out.push(core.to_owned());
            }
        }
    }
    out.retain(|f| f.len() >= 8);
    out.sort();
    out.dedup();
    out
}

/// The forms of the sealed keys, worked out once: every line written is scrubbed.
static FORMS: OnceLock<Vec<String>> = OnceLock::new();

/// `text` with every known key value replaced by [`REDACTED`], in every form a server may echo
/// it ([`forms`]).
pub fn scrub(text: &str) -> std::borrow::Cow<'_, str> {
    let mut out = std::borrow::Cow::Borrowed(text);
    let mut hide = |key: &str| {
        if key.len() >= 8 && out.contains(key) {
            out = std::borrow::Cow::Owned(out.replace(key, REDACTED));
        }
    };
    if let Some(keys) = KEYS.get() {
        FORMS
            .get_or_init(|| keys.values().flat_map(|k| forms(k)).collect())
            .iter()
            .for_each(|k| hide(k));
    } else {
        (std::env::vars().filter(|(k, _)| is_key_var(k)))
            .flat_map(|(_, v)| forms(&v))
            .for_each(|k| hide(&k));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A token echoed raw, as a bearer, URL-encoded, or base64-encoded behind any user name
    /// (what a forge's error may quote of a Basic header) is found in every form.
    #[test]
    fn a_key_is_found_in_every_form_a_server_may_echo() {
        use base64::Engine as _;
        let key = "ghp_T0ken/with+odd=chars_5150";
        let all = forms(key);
        let hidden = |text: &str| all.iter().any(|f| text.contains(f.as_str()));
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        for user in ["x-access-token", "oauth2", "git", "u", "ab", "abc", ""] {
            let basic = format!("Authorization: Basic {}", b64(&format!("{user}:{key}")));
            assert!(hidden(&basic), "{user}: {basic}");
        }
        let bearer = format!("Bearer {key}");
        assert!(hidden(&bearer));
        let query = format!(
            "https://h/x?access_token={}",
            url::form_urlencoded::byte_serialize(key.as_bytes()).collect::<String>()
        );
        assert!(hidden(&query), "{query}");
        assert!(!hidden("Authorization: Basic eC1hY2Nlc3MtdG9rZW46b3RoZXI="), "another token");
    }

    #[test]
    fn secrets_are_recognised() {
        for name in [
            "OPENAI_API_KEY",
            "HARROW_API_KEY",
            "HARROW_EVALUATOR_API_KEY",
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "TILTH_API_KEY",
            "my_service_token",
        ] {
            assert!(is_secret(name), "{name}");
        }
        for name in ["PATH", "HOME", "CARGO_HOME", "TOKENIZERS_PARALLELISM", "LANG"] {
            assert!(!is_secret(name), "{name}");
        }
    }

    #[test]
    fn credentials_are_keys_and_tokens_not_settings() {
        for name in [
            "HARROW_API_KEY",
            "HARROW_EVALUATOR_API_KEY",
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "DB_PASSWORD",
        ] {
            assert!(is_credential(name), "{name}");
        }
        for name in ["HARROW_BASE_URL", "HARROW_SESSIONS_DIR", "PATH", "HOME", "TILTH_SESSIONS_DIR"]
        {
            assert!(!is_credential(name), "{name}");
        }
    }
}
