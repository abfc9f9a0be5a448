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

    #[cfg(test)]
    pub fn for_test(value: &str) -> Token {
        Token { var: "HARROW_GIT_TOKEN", value: value.to_owned() }
    }
}

/// `text` with every key and token this process holds replaced.
pub fn redact(text: &str) -> String {
    crate::keys::scrub(text).into_owned()
}

/// `text` with every address's query (`?access_token=…`), and any fragment after it, taken
/// out: git and forges quote the address they were given in their errors, and a query may
/// carry a token harrow does not know as one.
pub fn strip_queries(text: &str) -> String {
    static QUERY: std::sync::OnceLock<Option<regex::Regex>> = std::sync::OnceLock::new();
    let query = QUERY.get_or_init(|| regex::Regex::new(r#"([^\s'"?])\?[^\s'"]*=[^\s'"]*"#).ok());
    match query {
        Some(q) => q.replace_all(text, "$1").into_owned(),
        None => text.to_owned(),
    }
}

/// An address with its user, password, query and fragment taken out:
/// `https://user:pw@host/x?access_token=t#y` is shown as `https://host/x`. Addresses git writes
/// as `user@host:path` keep the user (it is not a secret, and it tells which account SSH
/// uses). Whatever is left is scrubbed of known keys too.
pub fn display_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.has_host() => {
            if parsed.scheme() != "ssh" {
                let _ = parsed.set_username("");
            }
            let _ = parsed.set_password(None);
            parsed.set_query(None);
            parsed.set_fragment(None);
            redact(parsed.as_str())
        }
        _ => redact(url.split(['?', '#']).next().unwrap_or(url)),
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
        assert_eq!(
            display_url("https://example.com/a/b.git?access_token=s3cr3t-value#frag"),
            "https://example.com/a/b.git",
            "a token in the query or fragment is never shown"
        );
        assert_eq!(
            display_url("git@example.com:a/b.git?private_token=x"),
            "git@example.com:a/b.git"
        );
        assert_eq!(
            strip_queries("failed to resolve path '/srv/b.git?access_token=t0k#f': gone? yes"),
            "failed to resolve path '/srv/b.git': gone? yes"
        );
        assert_eq!(display_url("/srv/git/b.git"), "/srv/git/b.git");
    }

    #[test]
    fn a_token_is_not_shown_by_debug() {
        let t = Token { var: "GITHUB_TOKEN", value: "ghp_canary".into() };
        assert_eq!(format!("{t:?}"), "Token($GITHUB_TOKEN)");
    }
}
