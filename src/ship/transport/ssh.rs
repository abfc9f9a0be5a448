//! git over SSH through the system's `ssh`, as git itself does it: `ssh [-p PORT] [USER@]HOST
//! "git-receive-pack 'PATH'"`, the pack protocol over its standard input and output. The user's
//! keys, agent, `~/.ssh/config` and `known_hosts` are the ones their git uses; `GIT_SSH_COMMAND`
//! (run by the shell, as git runs it) or `GIT_SSH` (a program) replace `ssh` as they do for git.
//! `ssh` is started in batch mode: it never asks on the terminal (the console owns it) for a
//! passphrase or whether to trust a new host — an unknown host is refused.
//!
//! The host and user come from a remote's address, which a configuration file can hold: one
//! that starts with `-` would be read by `ssh` as an option (`-oProxyCommand=…`) and is refused;
//! so is any character outside the allow-list of a host name or user name.

use crate::agent::stderr_tail::StderrTail;
use git2::transport::{Service, SmartSubtransport, SmartSubtransportStream, Transport};
use git2::{ErrorClass, ErrorCode};
use std::io::{self, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long `ssh` is given to end once its connection is closed, before it is killed.
const END_WAIT: Duration = Duration::from_secs(10);

pub(super) fn transport(remote: &git2::Remote<'_>) -> Result<Transport, git2::Error> {
    Transport::smart(remote, false, Ssh { running: Mutex::new(None) })
}

struct Ssh {
    running: Mutex<Option<Arc<Mutex<Running>>>>,
}

/// Where to connect and what to ask for there.
#[derive(Debug, PartialEq, Eq)]
struct Target {
    user: Option<String>,
    host: String,
    port: Option<u16>,
    path: String,
}

/// A host name, an IP address (IPv6 without its brackets) or a user name: letters, digits and
/// `. _ - :`, never starting with `-`.
fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('-')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-:".contains(&b))
}

impl Target {
    /// Reads `ssh://[user@]host[:port]/path` (and its `ssh+git`, `git+ssh` spellings) or git's
    /// `[user@]host:path`.
    fn parse(url: &str) -> Result<Target, String> {
        let shown = crate::ship::secret::display_url(url);
        let target = if let Some((host_part, path)) = crate::ship::remote::scp_like(url) {
            let user = url.split_once(':').and_then(|(before, _)| before.rsplit_once('@'));
            Target {
                user: user.map(|(u, _)| u.to_owned()),
                host: host_part.to_owned(),
                port: None,
                path: path.to_owned(),
            }
        } else {
            let parsed =
                url::Url::parse(url).map_err(|e| format!("{shown} is not an address: {e}"))?;
            let decode = |s: &str| {
                percent_decoded(s).ok_or_else(|| format!("{shown} has a part that is not UTF-8"))
            };
            let path = decode(parsed.path())?;
            Target {
                user: (!parsed.username().is_empty())
                    .then(|| decode(parsed.username()))
                    .transpose()?,
                host: parsed
                    .host_str()
                    .unwrap_or_default()
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_owned(),
                port: parsed.port(),
                // `ssh://host/~user/x` names a path in a home folder, as git reads it.
                path: path
                    .strip_prefix('/')
                    .filter(|p| p.starts_with('~'))
                    .map_or(path.clone(), str::to_owned),
            }
        };
        if !plain_name(&target.host) || !target.user.as_deref().is_none_or(plain_name) {
            return Err(format!(
                "{shown} names a host or user ssh could read as an option or that holds characters a name does not; fix the remote's address"
            ));
        }
        if target.path.trim_matches('/').is_empty() || target.path.contains(['\0', '\n']) {
            return Err(format!("{shown} names no repository path ssh could ask for"));
        }
        Ok(target)
    }

    fn destination(&self) -> String {
        match &self.user {
            Some(user) => format!("{user}@{}", self.host),
            None => self.host.clone(),
        }
    }
}

fn percent_decoded(s: &str) -> Option<String> {
    percent_encoding::percent_decode_str(s).decode_utf8().ok().map(std::borrow::Cow::into_owned)
}

/// `text` quoted for the remote's shell, as git quotes the path: in single quotes, each single
/// quote written `'\''`.
fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The command that starts the connection: the user's `GIT_SSH_COMMAND` or `GIT_SSH`, else
/// `ssh`, with the options git gives it. OpenSSH (by its program's name, as git tells it) is
/// also put in batch mode.
fn ssh_command(target: &Target, remote_command: &str) -> Command {
    let (line, program) = (std::env::var("GIT_SSH_COMMAND").ok(), std::env::var_os("GIT_SSH"));
    command_with(line, program, target, remote_command)
}

/// [`ssh_command`] with the two variables given.
fn command_with(
    git_ssh_command: Option<String>,
    git_ssh: Option<std::ffi::OsString>,
    target: &Target,
    remote_command: &str,
) -> Command {
    let (mut cmd, program) = if let Some(line) = git_ssh_command.filter(|v| !v.trim().is_empty()) {
        let first = shlex::split(&line).and_then(|w| w.into_iter().next()).unwrap_or_default();
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(format!("{line} \"$@\"")).arg(&first);
        (cmd, first)
    } else if let Some(program) = git_ssh.filter(|v| !v.is_empty()) {
        let name = program.to_string_lossy().into_owned();
        (Command::new(program), name)
    } else {
        (Command::new("ssh"), "ssh".to_owned())
    };
    let name = std::path::Path::new(&program).file_name().and_then(|n| n.to_str());
    if matches!(name, Some("ssh" | "ssh.exe")) {
        cmd.args(["-o", "BatchMode=yes"]);
    }
    if let Some(port) = target.port {
        cmd.arg("-p").arg(port.to_string());
    }
    cmd.arg(target.destination()).arg(remote_command);
    cmd
}

/// The `ssh` of one connection.
struct Running {
    child: Child,
    stdin: Option<ChildStdin>,
    said: Option<StderrTail>,
    /// The exit was already waited for and looked at.
    ended: bool,
}

impl Running {
    /// Closes the connection and waits for `ssh` to end (killing it after [`END_WAIT`]); what it
    /// said on standard error when it failed.
    fn end(&mut self) -> Option<String> {
        if self.ended {
            return None;
        }
        self.ended = true;
        self.stdin = None;
        let until = Instant::now() + END_WAIT;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(10)),
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break None;
                }
            }
        };
        // What it said, read to the end (a flood included), its last lines kept.
        let said = self.said.as_mut().map(|s| s.lines_at_end(END_WAIT)).unwrap_or_default();
        match status {
            Some(s) if s.success() => None,
            Some(s) => Some(format!(
                "ssh: {}",
                if said.is_empty() { s.to_string() } else { said.join("; ") }
            )),
            None => Some("ssh did not end once its connection was closed".to_owned()),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.end();
    }
}

impl SmartSubtransport for Ssh {
    fn action(
        &self,
        url: &str,
        action: Service,
    ) -> Result<Box<dyn SmartSubtransportStream>, git2::Error> {
        let program = match action {
            Service::UploadPackLs | Service::UploadPack => "git-upload-pack",
            Service::ReceivePackLs | Service::ReceivePack => "git-receive-pack",
        };
        let target = Target::parse(url)
            .map_err(|e| git2::Error::new(ErrorCode::Invalid, ErrorClass::Ssh, e))?;
        let mut child = ssh_command(&target, &format!("{program} {}", quoted(&target.path)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                git2::Error::new(
                    ErrorCode::GenericError,
                    ErrorClass::Ssh,
                    format!("cannot start ssh: {e}; install OpenSSH's client, or name another with GIT_SSH_COMMAND"),
                )
            })?;
        let said = child.stderr.take().map(StderrTail::keep);
        let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
        let running = Arc::new(Mutex::new(Running { child, stdin, said, ended: false }));
        *self.running.lock().unwrap_or_else(PoisonError::into_inner) = Some(running.clone());
        Ok(Box::new(SshStream { stdout, running }))
    }

    fn close(&self) -> Result<(), git2::Error> {
        if let Some(running) = self.running.lock().unwrap_or_else(PoisonError::into_inner).take() {
            running.lock().unwrap_or_else(PoisonError::into_inner).end();
        }
        Ok(())
    }
}

struct SshStream {
    stdout: Option<ChildStdout>,
    running: Arc<Mutex<Running>>,
}

impl SshStream {
    fn running(&self) -> std::sync::MutexGuard<'_, Running> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Read for SshStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = match self.stdout.as_mut() {
            Some(out) => out.read(buf)?,
            None => 0,
        };
        if n == 0 && !buf.is_empty() {
            // The connection ended: when ssh failed, what it said is the error.
            self.stdout = None;
            if let Some(why) = self.running().end() {
                return Err(io::Error::other(why));
            }
        }
        Ok(n)
    }
}

impl Write for SshStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut running = self.running();
        match running.stdin.as_mut() {
            Some(stdin) => match stdin.write(buf) {
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                    drop(running);
                    self.stdout = None;
                    Err(self.running().end().map_or(e, io::Error::other))
                }
                other => other,
            },
            None => Err(io::Error::from(io::ErrorKind::BrokenPipe)),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.running().stdin.as_mut() {
            Some(stdin) => stdin.flush(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(user: Option<&str>, host: &str, port: Option<u16>, path: &str) -> Target {
        Target { user: user.map(str::to_owned), host: host.to_owned(), port, path: path.to_owned() }
    }

    #[test]
    fn every_address_form_git_takes_is_read() {
        assert_eq!(
            Target::parse("git@github.com:acme/widgets.git"),
            Ok(target(Some("git"), "github.com", None, "acme/widgets.git"))
        );
        assert_eq!(
            Target::parse("github.com:acme/widgets.git"),
            Ok(target(None, "github.com", None, "acme/widgets.git"))
        );
        assert_eq!(
            Target::parse("ssh://git@example.com:2222/srv/a%20b.git"),
            Ok(target(Some("git"), "example.com", Some(2222), "/srv/a b.git"))
        );
        assert_eq!(
            Target::parse("git+ssh://example.com/~alice/x.git"),
            Ok(target(None, "example.com", None, "~alice/x.git"))
        );
        assert_eq!(
            Target::parse("ssh://[::1]:22/srv/x.git"),
            Ok(target(None, "::1", Some(22), "/srv/x.git"))
        );
        assert_eq!(
            Target::parse("ssh://h/a+b&c=d.git").map(|t| t.path),
            Ok("/a+b&c=d.git".to_owned())
        );
    }

    /// Hosts and users a configuration file could hold that ssh would read as an option, or
    /// that carry a shell's or ssh's special characters: refused before anything is started.
    #[test]
    fn a_host_or_user_ssh_could_read_as_an_option_is_refused() {
        for url in [
            "ssh://-oProxyCommand=touch%20pwned/x.git",
            "-oProxyCommand=touch pwned:x.git",
            "ssh://-p22@example.com/x.git",
            "-luser@example.com:x.git",
            "ssh://us%20er@example.com/x.git",
            "ssh://example.com%0A-oX/x.git",
            "user;id@example.com:x.git",
            "ssh://example.com",
        ] {
            assert!(Target::parse(url).is_err(), "taken: {url}");
        }
    }

    #[test]
    fn the_path_reaches_the_remote_shell_as_one_word_and_openssh_never_asks() {
        assert_eq!(quoted("/srv/it's; rm -rf ~"), r"'/srv/it'\''s; rm -rf ~'");
        let t = target(Some("git"), "h", Some(2), "p");
        let argv = |cmd: Command| {
            let mut all = vec![cmd.get_program().to_string_lossy().into_owned()];
            all.extend(cmd.get_args().map(|a| a.to_string_lossy().into_owned()));
            all
        };
        let plain = command_with(None, None, &t, "git-upload-pack 'p'");
        assert_eq!(
            argv(plain),
            ["ssh", "-o", "BatchMode=yes", "-p", "2", "git@h", "git-upload-pack 'p'"]
        );
        let line = Some("/usr/bin/ssh -F '/my config'".to_owned());
        assert_eq!(
            argv(command_with(line, None, &t, "c")),
            [
                "sh",
                "-c",
                "/usr/bin/ssh -F '/my config' \"$@\"",
                "/usr/bin/ssh",
                "-o",
                "BatchMode=yes",
                "-p",
                "2",
                "git@h",
                "c"
            ]
        );
        let plink = Some(std::ffi::OsString::from("/opt/plink"));
        assert_eq!(
            argv(command_with(None, plink, &t, "c")),
            ["/opt/plink", "-p", "2", "git@h", "c"]
        );
    }
}
