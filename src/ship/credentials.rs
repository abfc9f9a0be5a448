//! The credentials a push offers, in the order the user's git would find them: a token from
//! `HARROW_GIT_TOKEN`, then the configured credential helper, for HTTPS; the SSH agent, then
//! the keys in `~/.ssh`, for SSH. Each is offered once, so a refused one ends the push with a
//! list of what was tried instead of a loop.

use super::secret::Token;
use git2::{Cred, CredentialType};
use std::path::PathBuf;

/// The variable a push token comes from.
pub const GIT_TOKEN_VAR: &str = "HARROW_GIT_TOKEN";

/// The user name sent with a token: forges take any name with a token as the password, and
/// this one is what GitHub documents.
const TOKEN_USER: &str = "x-access-token";

/// What a push may offer, and what it has offered so far.
pub struct Credentials {
    token: Option<Token>,
    config: Option<git2::Config>,
    ssh_keys: Vec<PathBuf>,
    agent: bool,
    tried: Vec<String>,
    offered: Offered,
}

/// What was offered on the current connection.
#[derive(Debug, Default)]
struct Offered {
    token: bool,
    helper: bool,
    agent: bool,
    keys: usize,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("token", &self.token)
            .field("tried", &self.tried)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// Reads the token variable, the git configuration (for its credential helper) and which
    /// SSH keys exist.
    pub fn for_repo(repo: &git2::Repository) -> Credentials {
        Credentials {
            // The repository's own credential helper only: the user's and the system's git
            // configuration is writable by any process of theirs (a worker run without a
            // sandbox included), and a helper planted there would be handed the token.
            config: repo.config().ok().and_then(|c| c.open_level(git2::ConfigLevel::Local).ok()),
            ..Credentials::from_env()
        }
    }

    fn from_env() -> Credentials {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let ssh_keys = home
            .map(|h| {
                ["id_ed25519", "id_ecdsa", "id_rsa"]
                    .iter()
                    .map(|k| h.join(".ssh").join(k))
                    .filter(|p| p.is_file())
                    .collect()
            })
            .unwrap_or_default();
        Credentials {
            token: Token::from_var(GIT_TOKEN_VAR),
            config: None,
            ssh_keys,
            agent: std::env::var_os("SSH_AUTH_SOCK").is_some(),
            tried: Vec::new(),
            offered: Offered::default(),
        }
    }

    /// For a clone, before there is a repository: the token, the SSH agent and keys, and no
    /// credential helper (only a repository's own is ever asked).
    pub fn without_repo() -> Credentials {
        Credentials { config: None, ..Credentials::from_env() }
    }

    /// What was offered, in order, for an error message (`$HARROW_GIT_TOKEN`, `the
    /// credential helper`, `ssh-agent`, a key's path).
    pub fn tried(&self) -> &[String] {
        &self.tried
    }

    /// Starts a new connection: what was accepted on the last one may be offered again.
    pub fn new_connection(&mut self) {
        self.offered = Offered::default();
        self.tried.clear();
    }

    /// libgit2's credential callback: the next credential not yet offered.
    pub fn next(
        &mut self,
        url: &str,
        username: Option<&str>,
        allowed: CredentialType,
    ) -> Result<Cred, git2::Error> {
        if allowed.contains(CredentialType::USERNAME) {
            return Cred::username(username.unwrap_or("git"));
        }
        if allowed.contains(CredentialType::SSH_KEY) {
            let user = username.unwrap_or("git");
            if self.agent && !self.offered.agent {
                self.offered.agent = true;
                self.tried.push("ssh-agent".to_owned());
                return Cred::ssh_key_from_agent(user);
            }
            if let Some(key) = self.ssh_keys.get(self.offered.keys).cloned() {
                self.offered.keys += 1;
                self.tried.push(key.display().to_string());
                return Cred::ssh_key(user, None, &key, None);
            }
        }
        if allowed.contains(CredentialType::USER_PASS_PLAINTEXT) {
            if let Some(token) = self.token.as_ref().filter(|_| !self.offered.token) {
                self.offered.token = true;
                self.tried.push(format!("${GIT_TOKEN_VAR}"));
                let user = username.filter(|u| !u.is_empty()).unwrap_or(TOKEN_USER);
                return Cred::userpass_plaintext(user, token.reveal());
            }
            if let Some(config) = self.config.as_ref().filter(|_| !self.offered.helper) {
                self.offered.helper = true;
                if let Ok(cred) = Cred::credential_helper(config, url, username) {
                    self.tried.push("the credential helper".to_owned());
                    return Ok(cred);
                }
            }
        }
        Err(git2::Error::from_str("no more credentials to offer"))
    }
}
