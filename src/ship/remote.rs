//! Which remote a session is pushed to, and where that remote lives on the web.

use super::ShipError;
use super::secret::display_url;
use git2::Repository;
use std::path::Path;

/// A remote: one of the repository's, by name, or an address given on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteTarget {
    pub name: Option<String>,
    pub url: String,
}

impl RemoteTarget {
    /// `spec` is a remote's name or an address; without one, `origin`.
    pub fn resolve(repo: &Repository, spec: Option<&str>) -> Result<RemoteTarget, ShipError> {
        let spec = spec.unwrap_or("origin");
        if repo.find_remote(spec).is_ok() {
            // The address as the configuration writes it: libgit2 hands a loaded remote's
            // address back already rewritten by every `insteadOf` it knows, the user's global
            // ones included, which would hide a planted rewrite from the check before a push.
            let written = |key: &str| {
                repo.config()
                    .and_then(|mut c| c.snapshot())
                    .and_then(|c| c.get_string(&format!("remote.{spec}.{key}")))
                    .ok()
            };
            let Some(url) = written("pushurl").or_else(|| written("url")) else {
                return Err(ShipError::new(format!(
                    "remote '{spec}' has no address that is UTF-8; give one with --remote URL"
                )));
            };
            return Ok(RemoteTarget { name: Some(spec.to_owned()), url });
        }
        if looks_like_address(spec) {
            return Ok(RemoteTarget { name: None, url: spec.to_owned() });
        }
        let names: Vec<String> = repo
            .remotes()
            .map(|r| r.iter().flatten().flatten().map(str::to_owned).collect())
            .unwrap_or_default();
        let have = if names.is_empty() {
            "it has no remotes".to_owned()
        } else {
            format!("it has {}", names.join(", "))
        };
        let workdir = repo.workdir().unwrap_or_else(|| repo.path());
        Err(ShipError::new(format!(
            "no remote named '{spec}' in {} ({have}); add one (git remote add {spec} URL) or pass --remote NAME|URL",
            workdir.display()
        )))
    }

    /// What to call the remote in messages and the log: its name, or its address without
    /// credentials.
    pub fn label(&self) -> String {
        self.name.clone().unwrap_or_else(|| display_url(&self.url))
    }

    pub fn git_remote<'r>(&self, repo: &'r Repository) -> Result<git2::Remote<'r>, git2::Error> {
        match &self.name {
            Some(name) => repo.find_remote(name),
            None => repo.remote_anonymous(&self.url),
        }
    }
}

/// Refuses a push whose address a git configuration outside the repository rewrites
/// (`url.<base>.insteadOf` / `pushInsteadOf` in `~/.gitconfig`, the XDG or the system file):
/// libgit2 applies those as git does, so a rewrite planted there — by any process of the user's,
/// a worker run without a sandbox included — would send the token to its own host. The
/// repository's own configuration is the user's to set and is followed.
pub fn refuse_outside_rewrites(repo: &Repository, url: &str) -> Result<(), ShipError> {
    let Ok(config) = repo.config().and_then(|mut c| c.snapshot()) else { return Ok(()) };
    let Ok(entries) = config.entries(Some(r"^url\..*\.(pushinsteadof|insteadof)$")) else {
        return Ok(());
    };
    let mut found = Vec::new();
    let mut entries = entries;
    while let Some(Ok(entry)) = entries.next() {
        if matches!(
            entry.level(),
            git2::ConfigLevel::Local | git2::ConfigLevel::Worktree | git2::ConfigLevel::App
        ) {
            continue;
        }
        let (Ok(name), Ok(prefix)) = (entry.name(), entry.value()) else { continue };
        if url.starts_with(prefix) {
            let level = match entry.level() {
                git2::ConfigLevel::Global => "your global git configuration (~/.gitconfig)",
                git2::ConfigLevel::XDG => "your git configuration (~/.config/git/config)",
                _ => "the system's git configuration",
            };
            found.push(format!("{name} = {prefix} in {level}"));
        }
    }
    if found.is_empty() {
        return Ok(());
    }
    Err(ShipError::new(format!(
        "the address {} is rewritten by {}; harrow does not send a token where a configuration outside the repository points it. Remove that setting (git config --global --unset …), or set the rewrite in the repository itself",
        display_url(url),
        found.join("; ")
    )))
}

fn looks_like_address(spec: &str) -> bool {
    spec.contains("://") || scp_like(spec).is_some() || Path::new(spec).is_absolute()
}

/// `user@host:path` (git's short form of an SSH address): host and path.
pub(super) fn scp_like(spec: &str) -> Option<(&str, &str)> {
    if spec.contains("://") {
        return None;
    }
    let (before, path) = spec.split_once(':')?;
    let host = before.rsplit_once('@').map_or(before, |(_, h)| h);
    let plausible = !host.is_empty() && !host.contains('/') && !path.is_empty();
    plausible.then_some((host, path))
}

/// Where a remote lives on the web: its site (`https://host[:port]`), its host, and the
/// repository's path there (`owner/repo`, or `group/subgroup/project` on GitLab).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub web: String,
    pub host: String,
    pub path: String,
}

impl Location {
    /// Reads a remote address; `None` for a local path or `file://` address.
    pub fn of(url: &str) -> Option<Location> {
        let (web, host, path) = if let Some((host, path)) = scp_like(url) {
            (format!("https://{host}"), host.to_owned(), path.to_owned())
        } else {
            let parsed = url::Url::parse(url).ok()?;
            let host = parsed.host_str()?.to_owned();
            let web = match parsed.scheme() {
                "http" | "https" => match parsed.port() {
                    Some(port) => format!("{}://{host}:{port}", parsed.scheme()),
                    None => format!("{}://{host}", parsed.scheme()),
                },
                "ssh" | "git" | "git+ssh" | "ssh+git" => format!("https://{host}"),
                _ => return None,
            };
            (web, host, parsed.path().to_owned())
        };
        let path = path.trim_matches('/');
        let path = path.strip_suffix(".git").unwrap_or(path).trim_end_matches('/').to_owned();
        (path.contains('/')).then_some(Location { web, host, path })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_of_every_address_form() {
        let l = Location::of("git@github.com:acme/widgets.git").unwrap();
        assert_eq!(
            (l.web.as_str(), l.host.as_str(), l.path.as_str()),
            ("https://github.com", "github.com", "acme/widgets")
        );
        let l = Location::of("ssh://git@gitlab.example.com:2222/group/sub/proj.git").unwrap();
        assert_eq!(
            (l.web.as_str(), l.path.as_str()),
            ("https://gitlab.example.com", "group/sub/proj")
        );
        let l = Location::of("http://127.0.0.1:8080/acme/widgets").unwrap();
        assert_eq!((l.web.as_str(), l.path.as_str()), ("http://127.0.0.1:8080", "acme/widgets"));
        let l = Location::of("https://user:pw@codeberg.org/acme/widgets.git/").unwrap();
        assert_eq!((l.web.as_str(), l.path.as_str()), ("https://codeberg.org", "acme/widgets"));
        assert_eq!(Location::of("/srv/git/widgets.git"), None);
        assert_eq!(Location::of("file:///srv/git/widgets.git"), None);
        assert_eq!(Location::of("https://example.com/lonely"), None);
    }

    #[test]
    fn addresses_and_names_are_told_apart() {
        assert!(looks_like_address("git@github.com:a/b.git"));
        assert!(looks_like_address("https://x/a/b"));
        assert!(looks_like_address("/srv/git/b.git"));
        assert!(!looks_like_address("origin"));
        assert!(!looks_like_address("up/stream"));
    }
}
