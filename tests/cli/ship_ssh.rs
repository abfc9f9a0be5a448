//! `harrow push` over SSH to a real `sshd` on 127.0.0.1 (started by the test, with its own
//! host key and authorised keys), through the system's `ssh` as the user's git would start it:
//! a key the user's ssh configuration names, then one held by `ssh-agent` — and a host that is
//! not in `known_hosts` refused. OpenSSH reads the home folder from the user database, not
//! `$HOME`, so the test's `~/.ssh` is named to it with `GIT_SSH_COMMAND="ssh -F …"`, the way a
//! user points git at another configuration.

// A test whose setup fails should panic there.
#![allow(clippy::unwrap_used)]

use crate::tools;
use crate::{loop_fixture, support};

use loop_fixture::{Setup, accept, write_and_submit};
use serde_json::json;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{Reaped, git};

const SSHD: &str = "/usr/sbin/sshd";

fn keygen(path: &Path) -> String {
    let ok = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .status()
        .unwrap();
    assert!(ok.success());
    std::fs::read_to_string(path.with_extension("pub")).unwrap()
}

/// Starts a server in the foreground of its own process and waits until `ready` says it
/// answers; it is killed when the returned guard goes.
fn daemon(cmd: &mut Command, ready: impl Fn() -> bool) -> Reaped {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let started = Reaped(cmd.spawn().unwrap());
    let until = Instant::now() + Duration::from_secs(10);
    while !ready() {
        assert!(Instant::now() < until, "{program} did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    started
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn user() -> String {
    String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout)
        .unwrap()
        .trim()
        .to_owned()
}

#[test]
fn a_push_over_ssh_uses_the_users_ssh_with_its_key_then_the_agent_and_refuses_an_unknown_host() {
    tools::require_sshd(SSHD);
    let tmp = tempfile::tempdir().unwrap();
    let o = one_task_session(tmp.path());
    let bare = tmp.path().join("remote.git");
    git(tmp.path(), &["init", "-q", "--bare", bare.to_str().unwrap()]);

    let home = tmp.path().join("home");
    let ssh_dir = home.join(".ssh");
    std::fs::create_dir_all(&ssh_dir).unwrap();
    let host = keygen(&tmp.path().join("host_key"));
    let in_home = keygen(&ssh_dir.join("id_ed25519"));
    let for_agent = keygen(&tmp.path().join("agent_key"));
    std::fs::write(tmp.path().join("authorized_keys"), format!("{in_home}{for_agent}")).unwrap();
    let port = free_port();
    let config = tmp.path().join("sshd_config");
    std::fs::write(
        &config,
        format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {}\nAuthorizedKeysFile {}\nPidFile {}\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n\
             StrictModes no\nPermitRootLogin prohibit-password\nUsePAM no\n",
            tmp.path().join("host_key").display(),
            tmp.path().join("authorized_keys").display(),
            tmp.path().join("sshd.pid").display()
        ),
    )
    .unwrap();
    let _ = std::fs::create_dir_all("/run/sshd");
    let _sshd = daemon(
        Command::new(SSHD).arg("-D").arg("-e").arg("-f").arg(&config).stderr(Stdio::null()),
        || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(),
    );
    let url = format!("ssh://{}@127.0.0.1:{port}{}", user(), bare.display());
    let ssh_config = ssh_dir.join("config");
    std::fs::write(
        &ssh_config,
        format!(
            "Host *\n  UserKnownHostsFile {}\n  GlobalKnownHostsFile /dev/null\n  IdentityFile {}\n",
            ssh_dir.join("known_hosts").display(),
            ssh_dir.join("id_ed25519").display()
        ),
    )
    .unwrap();
    let push = |branch: &str, agent: Option<&Path>| {
        let mut c = support::harrow_in(tmp.path());
        c.env("HOME", &home).env_remove("SSH_AUTH_SOCK").env_remove("HARROW_GIT_TOKEN");
        c.env("GIT_SSH_COMMAND", format!("ssh -F '{}'", ssh_config.display()));
        if let Some(sock) = agent {
            c.env("SSH_AUTH_SOCK", sock);
        }
        c.args(["push", o.dir.to_str().unwrap(), "--remote", &url, "--branch", branch])
            .output()
            .unwrap()
    };
    let said = |out: &std::process::Output| String::from_utf8_lossy(&out.stderr).into_owned();
    let session_branch = format!("session/{}", o.dir.file_name().unwrap().to_str().unwrap());
    let tip = git(&o.repo, &["rev-parse", &session_branch]);

    // The host is not known yet: nothing is sent to it.
    let out = push("unknown-host", None);
    assert!(!out.status.success(), "a host missing from known_hosts is trusted");
    assert!(said(&out).contains("known_hosts"), "{}", said(&out));
    let host_line = format!(
        "[127.0.0.1]:{port} {}",
        host.split_whitespace().take(2).collect::<Vec<_>>().join(" ")
    );
    std::fs::write(ssh_dir.join("known_hosts"), format!("{host_line}\n")).unwrap();

    let out = push("by-key", None);
    assert!(out.status.success(), "{}", said(&out));
    assert_eq!(git(&bare, &["rev-parse", "by-key"]), tip);

    // The key leaves ~/.ssh (ssh skips a configured key that is not there); the agent holds
    // the other one.
    std::fs::remove_file(ssh_dir.join("id_ed25519")).unwrap();
    let out = push("no-key", None);
    assert!(!out.status.success());
    assert!(
        said(&out).contains("refused the credentials ssh offered")
            && said(&out).contains("Permission denied"),
        "{}",
        said(&out)
    );
    assert_eq!(said(&out).trim().lines().count(), 1, "{}", said(&out));
    let sock = tmp.path().join("agent.sock");
    let _agent = daemon(
        Command::new("ssh-agent").arg("-D").arg("-a").arg(&sock).stdout(Stdio::null()),
        || sock.exists(),
    );
    let added = Command::new("ssh-add")
        .arg(tmp.path().join("agent_key"))
        .env("SSH_AUTH_SOCK", &sock)
        .output()
        .unwrap();
    assert!(added.status.success(), "{}", String::from_utf8_lossy(&added.stderr));
    let out = push("by-agent", Some(&sock));
    assert!(out.status.success(), "{}", said(&out));
    assert_eq!(git(&bare, &["rev-parse", "by-agent"]), tip);
}

/// An address whose host or user ssh would read as an option (`-oProxyCommand=…`), as a
/// repository's configuration can hold one: refused in one line, and nothing is started — a
/// `ssh` first on `PATH` that would leave a mark is never run.
#[test]
fn an_ssh_address_that_would_be_an_option_starts_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let o = one_task_session(tmp.path());
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let mark = tmp.path().join("ssh-ran");
    let fake = bin.join("ssh");
    executable(&fake, &format!("#!/bin/sh\necho \"$@\" > '{}'\nexit 1\n", mark.display()));
    let pwned = tmp.path().join("pwned");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    for url in [
        format!("ssh://-oProxyCommand=touch%20{}/x.git", pwned.display()),
        "-oProxyCommand=touch:x.git".to_owned(),
        "ssh://-lroot@127.0.0.1/x.git".to_owned(),
        "evil;id@127.0.0.1:x.git".to_owned(),
    ] {
        git(&o.repo, &["config", "remote.hostile.url", &url]);
        let out = support::harrow_in(tmp.path())
            .env("PATH", &path)
            .args(["push", o.dir.to_str().unwrap(), "--remote", "hostile"])
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{url}: {said}");
        assert_eq!(said.trim().lines().count(), 1, "{url}: {said}");
        assert!(said.contains("fix the remote's address"), "{url}: {said}");
        assert!(!mark.exists(), "{url}: ssh was started: {:?}", std::fs::read_to_string(&mark));
        assert!(!pwned.exists(), "{url}");
    }
}

/// Pushes `o` to `remote` with `GIT_SSH_COMMAND` at `fake`: harrow's stderr, once it ended
/// (at most 60 s).
fn push_through(tmp: &Path, o: &loop_fixture::Outcome, fake: &Path, remote: &str) -> String {
    let child = support::harrow_in(tmp)
        .env("GIT_SSH_COMMAND", fake)
        .args(["push", o.dir.to_str().unwrap(), "--remote", remote])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = support::ends_within(child, 60, "a push through a failing ssh");
    assert!(!out.status.success());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// What `ssh` says on failing (a server's banner or refusal, which the remote host chooses)
/// becomes the one-line error with its control bytes escaped: none reaches the terminal raw.
#[test]
fn what_a_failing_ssh_says_reaches_the_terminal_escaped_in_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let o = one_task_session(tmp.path());
    let fake = tmp.path().join("fake-ssh");
    executable(
        &fake,
        "#!/bin/sh\nprintf 'banner \\033[2J\\033]0;pwned\\007\\nPermission denied (publickey).\\r\\n' >&2\nexit 255\n",
    );
    let said = push_through(tmp.path(), &o, &fake, "git@127.0.0.1:x.git");
    assert_eq!(said.trim_end().lines().count(), 1, "{said:?}");
    assert!(said.contains("refused the credentials ssh offered"), "{said}");
    assert!(!said.contains('\x1b') && !said.contains('\x07') && !said.contains('\r'), "{said:?}");
}

/// An `ssh` that floods its standard error (a server's endless banner) before it fails is read
/// to its end, never left blocked on a full pipe: the push ends, in one line, with its last
/// words.
#[test]
fn an_ssh_that_floods_its_standard_error_never_holds_the_push() {
    let tmp = tempfile::tempdir().unwrap();
    let o = one_task_session(tmp.path());
    let fake = tmp.path().join("fake-ssh");
    executable(
        &fake,
        "#!/bin/sh\nhead -c 4194304 /dev/zero | tr '\\0' 'x' >&2\necho >&2\necho 'Permission denied (publickey).' >&2\nexit 255\n",
    );
    let said = push_through(tmp.path(), &o, &fake, "git@127.0.0.1:x.git");
    assert_eq!(said.trim_end().lines().count(), 1, "{said:?}");
    assert!(said.contains("Permission denied (publickey)"), "{said}");
    assert!(said.len() < 8 << 10, "{} bytes", said.len());
}

fn one_task_session(tmp: &Path) -> loop_fixture::Outcome {
    let script = json!({
        "worker": {"T-001": {"*": write_and_submit(1)}},
        "evaluator": {"*": {"*": [accept()]}}
    });
    loop_fixture::run(tmp, Setup { tasks: 1, script, ..Setup::default() })
}

fn executable(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}
