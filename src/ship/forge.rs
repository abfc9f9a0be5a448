//! The forges harrow opens pull requests on, as their REST APIs document them: GitHub (and
//! GitHub Enterprise), GitLab (a merge request) and Gitea or Forgejo. This file only builds
//! requests and reads answers; [`super::pr`] sends them.

use super::ShipError;
use super::remote::Location;
pub use crate::config::ForgeKind;
use crate::config::ForgeSection;
use serde_json::{Value, json};

/// A repository on a forge: where its API and its pages are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forge {
    pub kind: ForgeKind,
    /// The REST API's root, without a trailing slash.
    pub api: String,
    /// The repository's page (`https://github.com/acme/widgets`).
    pub web: String,
    /// The repository's path on the forge (`acme/widgets`).
    pub project: String,
}

/// One call to a forge's API.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiRequest {
    pub method: &'static str,
    pub url: String,
    pub body: Value,
}

/// A pull request as the forge made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    pub url: String,
    /// GitHub's and Gitea's number, GitLab's `iid`.
    pub number: u64,
}

/// What to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draft {
    pub title: String,
    pub body: String,
    pub head: String,
    pub base: String,
    pub draft: bool,
}

impl Forge {
    /// The forge of a remote address, told by `[forge] kind` or else by its host.
    pub fn for_remote(url: &str, config: &ForgeSection) -> Result<Forge, ShipError> {
        let shown = super::secret::display_url(url);
        let Some(location) = Location::of(url) else {
            return Err(ShipError::new(format!(
                "{shown} is not on a forge (a local path); push to a remote on GitHub, GitLab or Gitea with --remote NAME|URL"
            )));
        };
        let Some(kind) = config.kind.or_else(|| ForgeKind::guess(&location.host)) else {
            return Err(ShipError::new(format!(
                "cannot tell which forge {} is; set [forge] kind = \"github\", \"gitlab\" or \"gitea\" in the configuration",
                location.host
            )));
        };
        let api = match (&config.api_url, kind) {
            (Some(api), _) => api.trim_end_matches('/').to_owned(),
            (None, ForgeKind::Github) if location.host == "github.com" => {
                "https://api.github.com".to_owned()
            }
            (None, ForgeKind::Github) => format!("{}/api/v3", location.web),
            (None, ForgeKind::Gitlab) => format!("{}/api/v4", location.web),
            (None, ForgeKind::Gitea) => format!("{}/api/v1", location.web),
        };
        Ok(Forge {
            kind,
            api,
            web: format!("{}/{}", location.web, location.path),
            project: location.path,
        })
    }

    /// The page where a person opens the pull request by hand.
    pub fn compare_url(&self, base: &str, head: &str) -> String {
        match self.kind {
            ForgeKind::Github => format!("{}/compare/{base}...{head}?expand=1", self.web),
            ForgeKind::Gitlab => format!(
                "{}/-/merge_requests/new?merge_request%5Bsource_branch%5D={}&merge_request%5Btarget_branch%5D={}",
                self.web,
                encode(head),
                encode(base)
            ),
            ForgeKind::Gitea => format!("{}/compare/{base}...{head}", self.web),
        }
    }

    fn repo_api(&self) -> String {
        match self.kind {
            ForgeKind::Gitlab => format!("{}/projects/{}", self.api, encode(&self.project)),
            ForgeKind::Github | ForgeKind::Gitea => format!("{}/repos/{}", self.api, self.project),
        }
    }

    /// The call that opens the pull request. A draft is a flag on GitHub and a title prefix
    /// on GitLab (`Draft:`) and Gitea (`WIP:`), as each documents.
    pub fn open_request(&self, d: &Draft, labels: &[String]) -> ApiRequest {
        let body = match self.kind {
            ForgeKind::Github => json!({
                "title": d.title, "head": d.head, "base": d.base, "body": d.body, "draft": d.draft,
            }),
            ForgeKind::Gitlab => {
                let title = if d.draft { format!("Draft: {}", d.title) } else { d.title.clone() };
                let mut b = json!({
                    "source_branch": d.head, "target_branch": d.base, "title": title,
                    "description": d.body,
                });
                if !labels.is_empty() {
                    b["labels"] = json!(labels.join(","));
                }
                b
            }
            ForgeKind::Gitea => {
                let title = if d.draft { format!("WIP: {}", d.title) } else { d.title.clone() };
                json!({"title": title, "head": d.head, "base": d.base, "body": d.body})
            }
        };
        let path = match self.kind {
            ForgeKind::Gitlab => "merge_requests",
            ForgeKind::Github | ForgeKind::Gitea => "pulls",
        };
        ApiRequest { method: "POST", url: format!("{}/{path}", self.repo_api()), body }
    }

    /// The call that labels an opened pull request, where labels are not part of opening it.
    pub fn labels_request(&self, opened: &Opened, labels: &[String]) -> Option<ApiRequest> {
        if labels.is_empty() || self.kind == ForgeKind::Gitlab {
            return None;
        }
        Some(ApiRequest {
            method: "POST",
            url: format!("{}/issues/{}/labels", self.repo_api(), opened.number),
            body: json!({ "labels": labels }),
        })
    }

    /// Where a record too long for the description is kept whole, before the pull request is
    /// opened: a secret gist on GitHub, a private snippet of the project on GitLab. Gitea has
    /// neither: there the rest follows as comments ([`Forge::comment_request`]).
    pub fn keep_whole_request(&self, name: &str, record: &str) -> Option<ApiRequest> {
        match self.kind {
            ForgeKind::Github => Some(ApiRequest {
                method: "POST",
                url: format!("{}/gists", self.api),
                body: json!({
                    "description": format!("{name}: the whole record"),
                    "public": false,
                    "files": { format!("{name}.md"): { "content": record } },
                }),
            }),
            ForgeKind::Gitlab => Some(ApiRequest {
                method: "POST",
                url: format!("{}/snippets", self.repo_api()),
                body: json!({
                    "title": format!("{name}: the whole record"),
                    "visibility": "private",
                    "files": [{ "file_path": format!("{name}.md"), "content": record }],
                }),
            }),
            ForgeKind::Gitea => None,
        }
    }

    /// The call that finds the open pull request from `head` into `base`, for when the forge
    /// says one exists already.
    pub fn open_one_request(&self, head: &str, base: &str) -> ApiRequest {
        let owner = self.project.split('/').next().unwrap_or("");
        let url = match self.kind {
            ForgeKind::Github => format!(
                "{}/pulls?state=open&head={}:{}&base={}",
                self.repo_api(),
                encode(owner),
                encode(head),
                encode(base)
            ),
            ForgeKind::Gitlab => format!(
                "{}/merge_requests?state=opened&source_branch={}&target_branch={}",
                self.repo_api(),
                encode(head),
                encode(base)
            ),
            ForgeKind::Gitea => format!("{}/pulls?state=open&limit=50", self.repo_api()),
        };
        ApiRequest { method: "GET", url, body: Value::Null }
    }

    /// The call that puts the record as it stands now into an open pull request's description.
    pub fn describe_request(&self, opened: &Opened, body: &str) -> ApiRequest {
        match self.kind {
            ForgeKind::Github | ForgeKind::Gitea => ApiRequest {
                method: "PATCH",
                url: format!("{}/pulls/{}", self.repo_api(), opened.number),
                body: json!({ "body": body }),
            },
            ForgeKind::Gitlab => ApiRequest {
                method: "PUT",
                url: format!("{}/merge_requests/{}", self.repo_api(), opened.number),
                body: json!({ "description": body }),
            },
        }
    }

    /// The open pull request from `head` in the answer to [`Forge::open_one_request`].
    pub fn open_one(&self, status: u16, body: &[u8], head: &str) -> Option<Opened> {
        if !(200..300).contains(&status) {
            return None;
        }
        let value: Value = serde_json::from_slice(body).ok()?;
        let (url_key, number_key, head_of): (_, _, fn(&Value) -> Option<&str>) = match self.kind {
            ForgeKind::Gitlab => ("web_url", "iid", |v| v["source_branch"].as_str()),
            ForgeKind::Github | ForgeKind::Gitea => {
                ("html_url", "number", |v| v["head"]["ref"].as_str())
            }
        };
        value.as_array()?.iter().find_map(|pr| {
            let url = pr[url_key].as_str().filter(|u| web_address(u))?;
            (head_of(pr) == Some(head)).then(|| Opened {
                url: url.to_owned(),
                number: pr[number_key].as_u64().unwrap_or(0),
            })
        })
    }

    /// The address of what [`Forge::keep_whole_request`] made.
    pub fn kept_whole(status: u16, body: &[u8]) -> Option<String> {
        let value: Value = serde_json::from_slice(body).ok()?;
        let url = value["html_url"].as_str().or(value["web_url"].as_str())?;
        ((200..300).contains(&status) && web_address(url)).then(|| url.to_owned())
    }

    /// A comment on an opened pull request (Gitea: the rest of a long record).
    pub fn comment_request(&self, opened: &Opened, text: &str) -> ApiRequest {
        ApiRequest {
            method: "POST",
            url: format!("{}/issues/{}/comments", self.repo_api(), opened.number),
            body: json!({ "body": text }),
        }
    }

    /// Reads the forge's answer to [`Forge::open_request`].
    pub fn opened(&self, status: u16, body: &[u8]) -> Result<Opened, String> {
        let value: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        if !(200..300).contains(&status) {
            return Err(forge_message(&value, body));
        }
        let (url_key, number_key) = match self.kind {
            ForgeKind::Gitlab => ("web_url", "iid"),
            ForgeKind::Github | ForgeKind::Gitea => ("html_url", "number"),
        };
        let url = value[url_key].as_str().filter(|u| web_address(u));
        match (url, value[number_key].as_u64()) {
            (Some(url), Some(number)) => Ok(Opened { url: url.to_owned(), number }),
            _ => Err(format!("the answer has no {url_key} and {number_key}")),
        }
    }

    /// The headers that carry the token, as each forge documents it.
    pub fn auth_header(&self, token: &str) -> (&'static str, String) {
        match self.kind {
            ForgeKind::Github => ("authorization", format!("Bearer {token}")),
            ForgeKind::Gitlab => ("private-token", token.to_owned()),
            ForgeKind::Gitea => ("authorization", format!("token {token}")),
        }
    }
}

/// An address from a forge's answer that may be shown and logged: http(s), printable ASCII
/// only (no escape sequence, no space to hide a second word behind).
fn web_address(url: &str) -> bool {
    (url.starts_with("https://") || url.starts_with("http://"))
        && url.len() <= 2048
        && url.chars().all(|c| c.is_ascii_graphic())
}

/// What a forge said was wrong: its `message` and any `errors[].message` (GitHub), or
/// `message`/`error` (GitLab, Gitea), cut short.
fn forge_message(value: &Value, raw: &[u8]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for key in ["message", "error"] {
        match &value[key] {
            Value::String(s) => parts.push(s.clone()),
            Value::Array(items) => parts.extend(items.iter().map(Value::to_string)),
            Value::Null => {}
            other => parts.push(other.to_string()),
        }
    }
    if let Some(errors) = value["errors"].as_array() {
        parts.extend(
            errors.iter().filter_map(|e| e["message"].as_str().or(e.as_str()).map(str::to_owned)),
        );
    }
    if parts.is_empty() {
        parts.push(String::from_utf8_lossy(raw).into_owned());
    }
    let text = parts.join("; ");
    let cut: String = text.chars().take(300).collect();
    if cut.len() < text.len() { format!("{cut}…") } else { cut }
}

/// Percent-encodes a path segment or a query value (GitLab's project paths, branch names).
fn encode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect::<String>().replace('+', "%20")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forge(url: &str, kind: Option<ForgeKind>, api: Option<&str>) -> Forge {
        let config = ForgeSection { kind, api_url: api.map(str::to_owned), labels: vec![] };
        Forge::for_remote(url, &config).unwrap()
    }

    #[test]
    fn each_forge_is_told_from_its_address_with_its_api() {
        let gh = forge("git@github.com:acme/widgets.git", None, None);
        assert_eq!(
            (gh.kind, gh.api.as_str(), gh.project.as_str()),
            (ForgeKind::Github, "https://api.github.com", "acme/widgets")
        );
        let ghe = forge("https://code.example.com/acme/widgets.git", Some(ForgeKind::Github), None);
        assert_eq!(ghe.api, "https://code.example.com/api/v3");
        let gl = forge("https://gitlab.com/group/sub/proj.git", None, None);
        assert_eq!((gl.kind, gl.api.as_str()), (ForgeKind::Gitlab, "https://gitlab.com/api/v4"));
        assert_eq!(
            gl.open_request(&draft(), &[]).url,
            "https://gitlab.com/api/v4/projects/group%2Fsub%2Fproj/merge_requests"
        );
        let gt = forge("https://codeberg.org/acme/widgets", None, None);
        assert_eq!((gt.kind, gt.api.as_str()), (ForgeKind::Gitea, "https://codeberg.org/api/v1"));
        let pinned = forge(
            "https://git.example.com/a/b",
            Some(ForgeKind::Gitea),
            Some("http://127.0.0.1:9/api/v1/"),
        );
        assert_eq!(pinned.api, "http://127.0.0.1:9/api/v1");
    }

    #[test]
    fn an_unknown_host_or_a_local_path_is_one_line_with_the_fix() {
        let none = ForgeSection::default();
        let e = Forge::for_remote("https://git.example.com/a/b.git", &none).unwrap_err();
        assert!(e.to_string().contains("[forge] kind"), "{e}");
        let e = Forge::for_remote("/srv/git/b.git", &none).unwrap_err();
        assert!(e.to_string().contains("--remote"), "{e}");
    }

    fn draft() -> Draft {
        Draft {
            title: "T".into(),
            body: "B".into(),
            head: "session/x".into(),
            base: "main".into(),
            draft: true,
        }
    }

    #[test]
    fn a_hostile_answer_is_cut_and_a_page_address_must_be_http() {
        let gh = forge("git@github.com:acme/widgets.git", None, None);
        let long = format!("{{\"message\":\"{}\"}}", "x".repeat(1000));
        assert!(gh.opened(422, long.as_bytes()).unwrap_err().chars().count() <= 301);
        let js = br#"{"html_url":"javascript:alert(1)","number":3}"#;
        assert!(gh.opened(201, js).is_err());
        let escape = br#"{"html_url":"https://x/\u001b]52;c;aGk=\u0007","number":3}"#;
        assert!(gh.opened(201, escape).is_err());
        assert_eq!(Forge::kept_whole(201, br#"{"html_url":"https://g/ a"}"#), None);
    }
}
