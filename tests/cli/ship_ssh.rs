//! `harrow push` over SSH to a real `sshd` on 127.0.0.1 (started by the test, with its own
//! host key and authorised keys), with the credentials the user's git would use: a key in
//! `~/.ssh`, then one held by `ssh-agent` — and a host that is not in `known_hosts` refused.

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
fn a_push_over_ssh_uses_a_key_in_home_then_the_agent_and_refuses_an_unknown_host() {
    tools::require_sshd(SSHD);
    let tmp = tempfile::tempdir().unwrap();
    let script = json!({
        "worker": {"T-001": {"*": write_and_submit(1)}},
        "evaluator": {"*": {"*": [accept()]}}
    });
    let o = loop_fixture::run(tmp.path(), Setup { tasks: 1, script, ..Setup::default() });
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
    let push = |branch: &str, agent: Option<&Path>| {
        let mut c = support::harrow_in(tmp.path());
        c.env("HOME", &home).env_remove("SSH_AUTH_SOCK").env_remove("HARROW_GIT_TOKEN");
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

    // The key leaves ~/.ssh; the agent holds the other one.
    std::fs::remove_file(ssh_dir.join("id_ed25519")).unwrap();
    let out = push("no-key", None);
    assert!(!out.status.success());
    assert!(
        said(&out).contains("refused the credentials") || said(&out).contains("no credentials"),
        "{}",
        said(&out)
    );
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
