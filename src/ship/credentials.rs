//! The credentials an HTTP(S) push or clone offers when the server asks for them (401), in the
//! order the user's git would find them: a user and password written in the address, a token
//! from `HARROW_GIT_TOKEN`, then the repository's credential helper. Each is offered once, so a
//! refused one ends the push with a list of what was tried instead of a loop.
//!
//! SSH is not here: the system's `ssh` offers the agent's and `~/.ssh`'s keys and checks
//! `known_hosts` itself ([`super::transport`]).

use super::secret::Token;
use std::fmt;

/// The variable a push token comes from.
pub const GIT_TOKEN_VAR: &str = "HARROW_GIT_TOKEN";

/// The user name sent with a token: forges take any name with a token as the password, and
/// this one is what GitHub documents.
const TOKEN_USER: &str = "x-access-token";

/// What a push may offer, and what it has offered so far. Plain data (the helper's commands
/// are read from the configuration when it is made), so the transport's thread may hold it.
pub struct Credentials {
    token: Option<Token>,
    /// The repository's own credential helper, set up for the address.
    helper: Option<git2::CredentialHelper>,
    /// The user name, and the password if any, written in the address.
    in_address: Option<(String, Option<String>)>,
    tried: Vec<String>,
    offered: Offered,
}

/// What was offered on the current connection.
#[derive(Debug, Default)]
struct Offered {
    in_address: bool,
    token: bool,
    helper: bool,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("token", &self.token)
            .field("tried", &self.tried)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// For a push to `url` from `repo`: the token variable, and the credential helper of the
    /// repository's own configuration. The user's and the system's git configuration is
    /// writable by any process of theirs (a worker run without a sandbox included), and a
    /// helper planted there would be handed the token.
    pub fn for_repo(repo: &git2::Repository, url: &str) -> Credentials {
        let local = repo.config().ok().and_then(|c| c.open_level(git2::ConfigLevel::Local).ok());
        let helper = local.map(|config| {
            let mut helper = git2::CredentialHelper::new(url);
            helper.config(&config);
            helper
        });
        Credentials { helper, ..Credentials::without_repo(url) }
    }

    /// For a clone of `url`, before there is a repository: the address's own user and the
    /// token, and no credential helper (only a repository's own is ever asked).
    pub fn without_repo(url: &str) -> Credentials {
        let in_address = url::Url::parse(url).ok().filter(|u| !u.username().is_empty()).map(|u| {
            let decode =
                |s: &str| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned();
            (decode(u.username()), u.password().map(decode))
        });
        Credentials {
            token: Token::from_var(GIT_TOKEN_VAR),
            helper: None,
            in_address,
            tried: Vec::new(),
            offered: Offered::default(),
        }
    }

    /// What was offered, in order, for an error message (`the address's password`,
    /// `$HARROW_GIT_TOKEN`, `the credential helper`).
    pub fn tried(&self) -> &[String] {
        &self.tried
    }

    /// Starts a new connection: what was accepted on the last one may be offered again.
    pub fn new_connection(&mut self) {
        self.offered = Offered::default();
        self.tried.clear();
    }

    /// The next user name and password not yet offered, after the server refused the last
    /// (or asked for one).
    pub fn next_basic(&mut self) -> Option<(String, String)> {
        let user = self.in_address.as_ref().map(|(u, _)| u.clone());
        if let Some((name, Some(password))) = self.in_address.as_ref()
            && !self.offered.in_address
        {
            self.offered.in_address = true;
            self.tried.push("the address's password".to_owned());
            return Some((name.clone(), password.clone()));
        }
        if let Some(token) = self.token.as_ref().filter(|_| !self.offered.token) {
            self.offered.token = true;
            self.tried.push(format!("${GIT_TOKEN_VAR}"));
            let name = user.filter(|u| !u.is_empty()).unwrap_or_else(|| TOKEN_USER.to_owned());
            return Some((name, token.reveal().to_owned()));
        }
        if let Some(helper) = self.helper.as_mut().filter(|_| !self.offered.helper) {
            self.offered.helper = true;
            if let Some(user) = user {
                helper.username(Some(&user));
            }
            if let Some(found) = helper.execute() {
                self.tried.push("the credential helper".to_owned());
                return Some(found);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_address_then_nothing_more_is_offered_and_each_is_named_once() {
        let mut c = Credentials {
            token: None,
            ..Credentials::without_repo("https://bob:p%40s&s=+@example.com/a/b.git")
        };
        assert_eq!(c.next_basic(), Some(("bob".to_owned(), "p@s&s=+".to_owned())));
        assert_eq!(c.next_basic(), None);
        assert_eq!(c.tried(), ["the address's password"]);
        c.new_connection();
        assert!(c.tried().is_empty());
        assert_eq!(c.next_basic(), Some(("bob".to_owned(), "p@s&s=+".to_owned())));
    }

    #[test]
    fn a_user_without_a_password_goes_with_the_token() {
        let mut c = Credentials {
            token: Some(Token::for_test("t0ken")),
            ..Credentials::without_repo("https://alice@example.com/a/b.git")
        };
        assert_eq!(c.next_basic(), Some(("alice".to_owned(), "t0ken".to_owned())));
        assert_eq!(c.next_basic(), None);
        let mut c = Credentials {
            token: Some(Token::for_test("t0ken")),
            ..Credentials::without_repo("https://example.com/a/b.git")
        };
        assert_eq!(c.next_basic(), Some((TOKEN_USER.to_owned(), "t0ken".to_owned())));
        assert_eq!(c.tried(), ["$HARROW_GIT_TOKEN"]);
    }
}
