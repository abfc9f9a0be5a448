//! The environment every command the worker can influence starts with: `bash`, the hooks and
//! the validators (which run the worker's tests).
//!
//! It is an allow-list. A variable that is not named here never reaches the command, so a
//! handle the operator's session holds — `TMUX`, `SSH_AUTH_SOCK`, `DBUS_SESSION_BUS_ADDRESS`,
//! `XDG_RUNTIME_DIR`, `DISPLAY`, any `*_SOCK` — cannot be used to act outside the sandbox, and
//! a credential with a name nobody thought of is not handed over either. The user extends it
//! with `[hands] pass_env`; a credential stays out even then.

use crate::keys::is_secret;
use std::ffi::OsString;
use std::path::Path;

/// Variables passed through by name: the basics of a shell and what common toolchains read.
const NAMES: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TZ",
    "NO_COLOR",
    "CI",
    "CARGO_HOME",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_JOBS",
    "CARGO_INCREMENTAL",
    "CARGO_NET_OFFLINE",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "RUSTFLAGS",
    "RUST_BACKTRACE",
    "GOPATH",
    "GOROOT",
    "GOCACHE",
    "GOMODCACHE",
    "GOFLAGS",
    "GOTOOLCHAIN",
    "PYTHONPATH",
    "PYTHONDONTWRITEBYTECODE",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "PYENV_ROOT",
    "PYENV_VERSION",
    "JAVA_HOME",
    "NODE_PATH",
    "CC",
    "CXX",
    "CFLAGS",
    "CXXFLAGS",
    "LDFLAGS",
    "PKG_CONFIG_PATH",
    "LD_LIBRARY_PATH",
    "LIBRARY_PATH",
    "CPATH",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// Variables passed through by prefix (locale settings).
const PREFIXES: &[&str] = &["LC_"];

/// Whether `name` may reach a command: on the list (or the user's `extra`), and no credential.
pub fn passes(name: &str, extra: &[String]) -> bool {
    let listed = NAMES.contains(&name)
        || PREFIXES.iter().any(|p| name.starts_with(p))
        || extra.iter().any(|e| e == name);
    listed && !is_secret(name)
}

/// The environment for a command: the allowed variables of `from`, `TERM=dumb` (no terminal is
/// attached), and `TMPDIR` pointing at `tmp` when the sandbox gives the command a temp folder of
/// its own.
pub fn for_command(
    from: impl IntoIterator<Item = (OsString, OsString)>,
    extra: &[String],
    tmp: Option<&Path>,
    lane: Option<u64>,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = from
        .into_iter()
        .filter(|(name, _)| name.to_str().is_some_and(|n| passes(n, extra)))
        .map(|(name, value)| match lane {
            Some(n) if name == "CARGO_TARGET_DIR" => {
                let own = Path::new(&value).join(format!("harrow-lane-{n}"));
                (name, own.into_os_string())
            }
            _ => (name, value),
        })
        .collect();
    env.push(("TERM".into(), "dumb".into()));
    if let Some(tmp) = tmp {
        env.push(("TMPDIR".into(), tmp.as_os_str().to_owned()));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(env: &[(OsString, OsString)]) -> Vec<String> {
        env.iter().map(|(k, _)| k.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn the_users_tls_roots_reach_a_command_as_they_are() {
        let users = [
            ("SSL_CERT_FILE".into(), "/etc/corp.pem".into()),
            ("SSL_CERT_DIR".into(), "/etc/corp".into()),
        ];
        let env = for_command(users, &[], None, None);
        assert_eq!(names(&env), ["SSL_CERT_FILE", "SSL_CERT_DIR", "TERM"]);
        assert_eq!(env[0].1, OsString::from("/etc/corp.pem"));
    }

    #[test]
    fn a_lane_builds_in_its_own_part_of_a_shared_target_folder() {
        let from =
            [("CARGO_TARGET_DIR".into(), "/cache/target".into()), ("PATH".into(), "/bin".into())];
        let env = for_command(from.clone(), &[], None, Some(2));
        let target = env.iter().find(|(k, _)| k == "CARGO_TARGET_DIR").map(|(_, v)| v.clone());
        assert_eq!(target, Some("/cache/target/harrow-lane-2".into()));
        let alone = for_command(from, &[], None, None);
        let target = alone.iter().find(|(k, _)| k == "CARGO_TARGET_DIR").map(|(_, v)| v.clone());
        assert_eq!(target, Some("/cache/target".into()), "without lanes it is left as it is");
    }

    #[test]
    fn only_listed_variables_pass() {
        let from = [
            "PATH",
            "HOME",
            "LC_ALL",
            "TMUX",
            "TMUX_PANE",
            "SSH_AUTH_SOCK",
            "DBUS_SESSION_BUS_ADDRESS",
            "XDG_RUNTIME_DIR",
            "DISPLAY",
            "WAYLAND_DISPLAY",
            "GPG_AGENT_SOCK",
            "SOMETHING_NEW",
            "OPENAI_API_KEY",
            "HARROW_BASE_URL",
            "TMPDIR",
        ]
        .map(|n| (OsString::from(n), OsString::from("v")));
        let env = for_command(from, &[], Some(Path::new("/private/tmp")), None);
        assert_eq!(names(&env), ["PATH", "HOME", "LC_ALL", "TERM", "TMPDIR"]);
        assert_eq!(env.last().map(|(_, v)| v.clone()), Some(OsString::from("/private/tmp")));
    }

    #[test]
    fn the_users_additions_pass_but_never_a_credential() {
        let from = ["MY_TOOL_HOME", "MY_TOKEN"].map(|n| (OsString::from(n), OsString::from("v")));
        let extra = vec!["MY_TOOL_HOME".to_owned(), "MY_TOKEN".to_owned()];
        assert_eq!(names(&for_command(from, &extra, None, None)), ["MY_TOOL_HOME", "TERM"]);
    }
}
