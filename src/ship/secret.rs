//! Tokens for remotes and forges: read from their variables only, and kept out of every line
//! harrow writes. An error from git or a forge may quote what it was sent; before any such text
//! reaches the terminal, the log or a file, every token value this process can read is
//! replaced by `***`.

/// The variables a token for a push or a forge comes from.
pub const TOKEN_VARS: &[&str] =
    &["HARROW_GIT_TOKEN", "GITHUB_TOKEN", "GITLAB_TOKEN", "GITEA_TOKEN"];

/// A token read from a variable. `Debug` does not show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Token {
    pub var: &'static str,
    value: String,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Token(${})", self.var)
    }
}

impl Token {
    /// The token in `var`, when it is set to something other than blanks.
    pub fn from_var(var: &'static str) -> Option<Token> {
        let value = crate::keys::var(var)?;
        let value = value.trim();
        (!value.is_empty()).then(|| Token { var, value: value.to_owned() })
    }

    /// The secret itself, for the one header or credential that carries it.
    pub fn reveal(&self) -> &str {
        &self.value
    }
}

/// `text` with every key and token this process holds replaced.
pub fn redact(text: &str) -> String {
    crate::keys::scrub(text).into_owned()
}

/// An address with its user and password taken out: `https://user:pw@host/x` is shown as
/// `https://host/x`. Addresses git writes as `user@host:path` keep the user (it is not a
/// secret, and it tells which account SSH uses).
pub fn display_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed)
            if parsed.has_host()
                && (parsed.password().is_some() || !parsed.username().is_empty()) =>
        {
            let ssh = parsed.scheme() == "ssh";
            if !ssh {
                let _ = parsed.set_username("");
            }
            let _ = parsed.set_password(None);
            redact(parsed.as_str())
        }
        _ => redact(url),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_loses_its_password_and_its_https_user() {
        assert_eq!(
            display_url("https://bob:hunter2@example.com/a/b.git"),
            "https://example.com/a/b.git"
        );
        assert_eq!(display_url("https://tok3n@example.com/a/b.git"), "https://example.com/a/b.git");
        assert_eq!(
            display_url("ssh://git:pw@example.com/a/b.git"),
            "ssh://git@example.com/a/b.git"
        );
        assert_eq!(display_url("git@example.com:a/b.git"), "git@example.com:a/b.git");
        assert_eq!(display_url("/srv/git/b.git"), "/srv/git/b.git");
    }

    #[test]
    fn a_token_is_not_shown_by_debug() {
        let t = Token { var: "GITHUB_TOKEN", value: "ghp_canary".into() };
        assert_eq!(format!("{t:?}"), "Token($GITHUB_TOKEN)");
    }
}
