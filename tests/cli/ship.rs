//! Shipping: `harrow push` to real bare repositories over file:// and smart HTTP (the real
//! `git http-backend` behind basic auth), and `harrow pr` against a scripted forge API for
//! GitHub, GitLab and Gitea — with canary tokens that must appear nowhere harrow writes.

// A test whose setup fails should panic there.
#![allow(clippy::unwrap_used)]

use crate::{forge, git_http, loop_fixture, support, tmux};

use loop_fixture::{Outcome, Setup, accept, write_and_submit};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::git;

const GIT_TOKEN: &str = "canary-git-token-90210";
const FORGE_TOKEN: &str = "canary-forge-token-31337";

/// A session whose two tasks were accepted.
fn finished(tmp: &Path) -> Outcome {
    let script = json!({
        "worker": {"T-001": {"*": write_and_submit(1)}, "T-002": {"*": write_and_submit(2)}},
        "evaluator": {"*": {"*": [accept()]}}
    });
    loop_fixture::run(tmp, Setup { tasks: 2, script, ..Setup::default() })
}

/// The binary with nothing of the machine's: an empty home (no keys, no git config), no
/// agent, no tokens.
fn harrow(tmp: &Path) -> Command {
    let home = tmp.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mut c = support::harrow_in(tmp);
    c.env("HOME", &home).env_remove("SSH_AUTH_SOCK").env("GIT_CONFIG_NOSYSTEM", "1");
    for var in ["HARROW_GIT_TOKEN", "GITHUB_TOKEN", "GITLAB_TOKEN", "GITEA_TOKEN"] {
        c.env_remove(var);
    }
    c
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn branch_of(o: &Outcome) -> String {
    format!("session/{}", o.dir.file_name().unwrap().to_str().unwrap())
}

fn sha(repo: &Path, rev: &str) -> String {
    git(repo, &["rev-parse", rev]).trim().to_owned()
}

fn events_of(o: &Outcome, kind: &str) -> Vec<Value> {
    support::strict_events(&o.dir)
        .into_iter()
        .filter(|e| e["type"] == kind)
        .map(|e| e["payload"].clone())
        .collect()
}

/// One line on stderr, naming the cause; nothing on stdout.
fn one_line_failure(out: &Output, code: i32) -> String {
    let (stdout, stderr) = text(out);
    assert_eq!(out.status.code(), Some(code), "stdout: {stdout}\nstderr: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    stderr
}

#[test]
fn a_session_is_pushed_over_file_url_and_a_remote_that_moved_is_never_overwritten() {
    let tmp = tempfile::tempdir().unwrap();
    let o = finished(tmp.path());
    let bare = tmp.path().join("remote.git");
    git(tmp.path(), &["init", "-q", "--bare", bare.to_str().unwrap()]);
    let url = format!("file://{}", bare.display());
    let branch = branch_of(&o);
    let push = |extra: &[&str]| {
        let mut c = harrow(tmp.path());
        c.args(["push", o.dir.to_str().unwrap(), "--remote", &url]).args(extra);
        c.output().unwrap()
    };

    let out = push(&[]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let a = sha(&o.repo, &branch);
    assert_eq!(sha(&bare, &branch), a);
    assert!(stdout.contains(&format!("to {branch} on {url}")), "says where it went: {stdout}");
    assert_eq!(events_of(&o, "push")[0]["sha"], a.as_str());

    // Pushed again with nothing new: said so, logged so, and replayed so (not "pushed").
    let again = push(&[]);
    assert!(again.status.success(), "{}", text(&again).1);
    assert!(text(&again).0.contains("nothing to push"), "{}", text(&again).0);
    assert_eq!(events_of(&o, "push")[1]["already_there"], true);
    let replayed = harrow(tmp.path())
        .args(["replay", o.dir.to_str().unwrap(), "--headless", "--speed", "max"])
        .output()
        .unwrap();
    let lines = text(&replayed).0;
    assert!(lines.contains("was already at") && lines.contains("nothing to push"), "{lines}");
    assert_eq!(lines.matches("⇡ pushed").count(), 1, "one push sent something: {lines}");

    // The session branch is rewound: a plain push would lose the remote's commit.
    let worktree = o.dir.join("workspace");
    git(&worktree, &["reset", "-q", "--hard", "HEAD~1"]);
    let stderr = one_line_failure(&push(&[]), 1);
    assert!(
        stderr.contains("not a fast-forward") && stderr.contains("--force-with-lease"),
        "{stderr}"
    );
    assert_eq!(sha(&bare, &branch), a, "nothing was overwritten");

    // With the lease: the remote is where harrow last pushed it, so it is overwritten.
    let out = push(&["--force-with-lease"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("over what was there"), "{stdout}");
    let b = sha(&o.repo, &branch);
    assert_eq!(sha(&bare, &branch), b);
    assert_eq!(events_of(&o, "push").last().unwrap()["forced"], true);

    // Someone else pushes on top: the lease no longer holds, and nothing is overwritten.
    let other = tmp.path().join("other");
    git(tmp.path(), &["clone", "-q", "-b", &branch, &url, other.to_str().unwrap()]);
    std::fs::write(other.join("theirs.txt"), "theirs\n").unwrap();
    git(&other, &["add", "-A"]);
    git(&other, &["commit", "-qm", "theirs"]);
    git(&other, &["push", "-q", "origin", &branch]);
    let theirs = sha(&other, "HEAD");
    git(&worktree, &["commit", "--allow-empty", "-qm", "ours"]);
    let stderr = one_line_failure(&push(&["--force-with-lease"]), 1);
    assert!(
        stderr.contains("not where harrow last saw it") && stderr.contains("--branch"),
        "{stderr}"
    );
    let stderr = one_line_failure(&push(&[]), 1);
    assert!(stderr.contains("not a fast-forward"), "{stderr}");
    assert_eq!(sha(&bare, &branch), theirs, "their commit is still there");
    let failed = events_of(&o, "push").into_iter().filter(|p| p["error"].is_string()).count();
    assert_eq!(failed, 3, "every failed push is logged");

    // Under another name it goes.
    let out = push(&["--branch", "feature/counting"]);
    assert!(out.status.success(), "{}", text(&out).1);
    assert_eq!(sha(&bare, "feature/counting"), sha(&o.repo, &branch));
}

#[test]
fn an_unfinished_session_is_pushed_only_with_partial() {
    let tmp = tempfile::tempdir().unwrap();
    let o = loop_fixture::run(
        tmp.path(),
        Setup { tasks: 2, script: loop_fixture::first_of_two_refused_once(), ..Setup::default() },
    );
    let bare = tmp.path().join("remote.git");
    git(tmp.path(), &["init", "-q", "--bare", bare.to_str().unwrap()]);
    let push = |extra: &[&str]| {
        let mut c = harrow(tmp.path());
        c.args(["push", o.dir.to_str().unwrap(), "--remote", bare.to_str().unwrap()]).args(extra);
        c.output().unwrap()
    };
    let stderr = one_line_failure(&push(&[]), 2);
    assert!(stderr.contains("T-001") && stderr.contains("--partial"), "{stderr}");
    assert!(events_of(&o, "push").is_empty(), "a refused session logs no push");
    let out = push(&["--partial"]);
    assert!(out.status.success(), "{}", text(&out).1);
    assert_eq!(events_of(&o, "push")[0]["partial"], true);
}

#[test]
fn a_push_over_smart_http_sends_the_token_and_a_wrong_or_missing_one_is_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let o = finished(tmp.path());
    let root = tmp.path().join("srv");
    let server = git_http::GitHttp::start(&root, GIT_TOKEN);
    let bare = git_http::bare_with_main(&root, "acme/widgets.git", &o.repo);
    let url = server.url("acme/widgets.git");
    let branch = branch_of(&o);
    let push = |token: Option<&str>| {
        let mut c = harrow(tmp.path());
        c.args(["push", o.dir.to_str().unwrap(), "--remote", &url]);
        if let Some(t) = token {
            c.env("HARROW_GIT_TOKEN", t);
        }
        c.output().unwrap()
    };

    let stderr = one_line_failure(&push(None), 1);
    assert!(
        stderr.contains("no credentials were found") && stderr.contains("HARROW_GIT_TOKEN"),
        "{stderr}"
    );
    let wrong = "canary-wrong-token-4242";
    let out = push(Some(wrong));
    let stderr = one_line_failure(&out, 1);
    assert!(stderr.contains("refused the credentials (tried $HARROW_GIT_TOKEN)"), "{stderr}");
    assert!(!git(&bare, &["branch", "--list"]).contains("session/"), "nothing was pushed");

    let out = push(Some(GIT_TOKEN));
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains(&url), "{stdout}");
    assert_eq!(sha(&bare, &branch), sha(&o.repo, &branch));
    let seen = server.seen();
    assert!(
        seen.iter().any(|s| s.method == "POST"
            && s.path.ends_with("git-receive-pack")
            && s.status == 200
            && s.credentials.as_deref() == Some(&format!("x-access-token:{GIT_TOKEN}"))),
        "{seen:?}"
    );

    // Someone else pushes over HTTP too: a plain push is refused, in one line.
    let other = tmp.path().join("other");
    git(
        tmp.path(),
        &["clone", "-q", "-b", &branch, bare.to_str().unwrap(), other.to_str().unwrap()],
    );
    git(&other, &["commit", "--allow-empty", "-qm", "theirs"]);
    git(&other, &["push", "-q", "origin", &branch]);
    git(&o.dir.join("workspace"), &["commit", "--allow-empty", "-qm", "ours"]);
    let refused = push(Some(GIT_TOKEN));
    let said = one_line_failure(&refused, 1);
    assert!(said.contains("not a fast-forward") && said.contains(&url), "{said}");

    // git's credential helper, configured as a user would, is asked when no token is set.
    let helper = format!("!f() {{ echo username=helper; echo password={GIT_TOKEN}; }}; f");
    git(&o.repo, &["config", "credential.helper", &helper]);
    let mut c = harrow(tmp.path());
    c.args(["push", o.dir.to_str().unwrap(), "--remote", &url, "--branch", "via-helper"]);
    let by_helper = c.output().unwrap();
    assert!(by_helper.status.success(), "{}", text(&by_helper).1);
    let helped = format!("helper:{GIT_TOKEN}");
    assert!(server.seen().iter().any(|s| s.credentials.as_deref() == Some(helped.as_str())));
    assert_eq!(sha(&bare, "via-helper"), sha(&o.repo, &branch));

    let export = harrow(tmp.path()).args(["export", o.dir.to_str().unwrap()]).output().unwrap();
    let everything = format!(
        "{}{}{stdout}{stderr}{}{}",
        loop_fixture::all_text(&o.dir),
        text(&export).0,
        said,
        text(&by_helper).0
    );
    for token in [GIT_TOKEN, wrong] {
        assert!(!everything.contains(token), "{token} leaked");
    }
}

/// A finished session, and a smart-HTTP server taking [`GIT_TOKEN`] that holds its repository's
/// `main` as `acme/widgets.git`: the session, the server, the bare repository, the session's
/// branch.
fn finished_beside_http(tmp: &Path) -> (Outcome, git_http::GitHttp, PathBuf, String) {
    let o = finished(tmp);
    let root = tmp.join("srv");
    let server = git_http::GitHttp::start(&root, GIT_TOKEN);
    let bare = git_http::bare_with_main(&root, "acme/widgets.git", &o.repo);
    let branch = branch_of(&o);
    (o, server, bare, branch)
}

/// A repository that moved on its server (a rename) is followed there for the refs, and the
/// pack goes where the refs came from; one that moved to another host is not followed, so the
/// token never goes anywhere but the address's host.
#[test]
fn a_push_follows_a_repository_moved_on_its_host_and_never_to_another_host() {
    let tmp = tempfile::tempdir().unwrap();
    let (o, server, bare, branch) = finished_beside_http(tmp.path());
    let push = |url: &str| {
        let mut c = harrow(tmp.path());
        c.args(["push", o.dir.to_str().unwrap(), "--remote", url])
            .env("HARROW_GIT_TOKEN", GIT_TOKEN);
        c.output().unwrap()
    };

    let away = server.url("elsewhere/acme/widgets.git");
    let said = one_line_failure(&push(&away), 1);
    assert!(said.contains("redirects to http://other.invalid/"), "{said}");
    assert!(!git(&bare, &["branch", "--list"]).contains("session/"), "nothing was pushed");

    let out = push(&server.url("moved/acme/widgets.git"));
    assert!(out.status.success(), "{}", text(&out).1);
    assert_eq!(sha(&bare, &branch), sha(&o.repo, &branch));
    let seen = server.seen();
    assert!(
        seen.iter().any(|s| s.path == "/moved/acme/widgets.git/info/refs" && s.status == 301),
        "{seen:?}"
    );
    assert!(
        seen.iter().any(|s| s.method == "POST"
            && s.path == "/acme/widgets.git/git-receive-pack"
            && s.status == 200),
        "{seen:?}"
    );
    assert!(!seen.iter().any(|s| s.method == "POST" && s.path.starts_with("/moved/")), "{seen:?}");
}

/// A server that answers the refs as a web page (a sign-in page, a proxy's notice) is named in
/// one line, and nothing it sent reaches the terminal: not its page, not the escape bytes in
/// its header.
#[test]
fn a_server_that_answers_with_a_web_page_is_named_and_its_bytes_stay_out_of_the_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let (o, server, bare, _) = finished_beside_http(tmp.path());
    let push = |path: &str| {
        harrow(tmp.path())
            .args(["push", o.dir.to_str().unwrap(), "--remote", &server.url(path)])
            .env("HARROW_GIT_TOKEN", GIT_TOKEN)
            .output()
            .unwrap()
    };
    for path in ["login/acme/widgets.git", "garbled/acme/widgets.git"] {
        let said = one_line_failure(&push(path), 1);
        if path.starts_with("login/") {
            assert!(said.contains("\"text/html\", not git's smart HTTP protocol"), "{said}");
        }
        assert!(!said.contains('\x1b') && !said.contains('\x07'), "{path}: {said:?}");
        assert!(!said.contains("sign in") && !said.contains("pwned"), "{path}: {said}");
    }
    assert!(!git(&bare, &["branch", "--list"]).contains("session/"), "nothing was pushed");
}

/// A pack larger than harrow keeps in memory for a request (8 MiB: a push of a long history)
/// is sent from a temporary file, whole: the remote ends up with the session's commit.
#[test]
fn a_push_of_a_pack_larger_than_memory_keeps_arrives_whole_over_http() {
    let tmp = tempfile::tempdir().unwrap();
    let (o, server, bare, branch) = finished_beside_http(tmp.path());
    // 12 MiB that zlib cannot shrink.
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let noise: Vec<u8> = (0..12 << 20)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 32) as u8
        })
        .collect();
    let workspace = o.dir.join("workspace");
    std::fs::write(workspace.join("noise.bin"), &noise).unwrap();
    git(&workspace, &["add", "noise.bin"]);
    git(&workspace, &["commit", "-qm", "noise"]);
    let out = harrow(tmp.path())
        .args(["push", o.dir.to_str().unwrap(), "--remote", &server.url("acme/widgets.git")])
        .env("HARROW_GIT_TOKEN", GIT_TOKEN)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out).1);
    assert_eq!(sha(&bare, &branch), sha(&o.repo, &branch));
    let there = git(&bare, &["cat-file", "-s", &format!("{branch}:noise.bin")]);
    assert_eq!(there.trim(), (12 << 20).to_string());
}

/// A push over HTTPS goes through harrow's own TLS (libgit2 has none): against a loopback
/// server whose certificate the user's `SSL_CERT_FILE` trusts, the branch arrives with the
/// token; with roots that do not hold it, the handshake fails in one line and nothing is sent,
/// not even the token.
#[test]
fn a_push_over_https_trusts_the_users_roots_and_nothing_else() {
    let tmp = tempfile::tempdir().unwrap();
    let o = finished(tmp.path());
    let root = tmp.path().join("srv");
    let (cert, key) = support::self_signed(tmp.path(), "server");
    let (other, _) = support::self_signed(tmp.path(), "other");
    let server = git_http::GitHttp::start_tls(&root, GIT_TOKEN, &cert, &key);
    let bare = git_http::bare_with_main(&root, "acme/widgets.git", &o.repo);
    let url = server.url("acme/widgets.git");
    assert!(url.starts_with("https://"), "{url}");
    let branch = branch_of(&o);
    let push = |roots: &Path| {
        let mut c = harrow(tmp.path());
        c.args(["push", o.dir.to_str().unwrap(), "--remote", &url])
            .env("HARROW_GIT_TOKEN", GIT_TOKEN)
            .env("SSL_CERT_FILE", roots)
            .env_remove("SSL_CERT_DIR");
        c.output().unwrap()
    };

    let refused = push(&other);
    let said = one_line_failure(&refused, 1);
    assert!(said.contains("cannot reach") && said.contains("certificate"), "{said}");
    assert!(server.seen().is_empty(), "a request got through an untrusted handshake");
    assert!(!said.contains(GIT_TOKEN), "{said}");

    let out = push(&cert);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains(&url), "{stdout}");
    assert_eq!(sha(&bare, &branch), sha(&o.repo, &branch));
    assert!(
        server.seen().iter().any(|s| s.method == "POST"
            && s.path.ends_with("git-receive-pack")
            && s.status == 200
            && s.credentials.as_deref() == Some(&format!("x-access-token:{GIT_TOKEN}"))),
        "{:?}",
        server.seen()
    );
}

/// A finished session whose repository's `origin` is `acme/widgets` on a smart-HTTP server
/// that takes [`GIT_TOKEN`], and a configuration that points `[forge]` at `forge`.
struct Shop {
    tmp: tempfile::TempDir,
    o: Outcome,
    git: git_http::GitHttp,
    bare: std::path::PathBuf,
}

fn shop(kind: &str, forge: &forge::Forge, api: &str, setup: Option<Setup>) -> Shop {
    let tmp = tempfile::tempdir().unwrap();
    let o = match setup {
        Some(setup) => loop_fixture::run(tmp.path(), setup),
        None => finished(tmp.path()),
    };
    let root = tmp.path().join("srv");
    let git_server = git_http::GitHttp::start(&root, GIT_TOKEN);
    let bare = git_http::bare_with_main(&root, "acme/widgets.git", &o.repo);
    git(&o.repo, &["remote", "add", "origin", &git_server.url("acme/widgets.git")]);
    forge_config(tmp.path(), kind, &forge.url(api), &["harrow", "needs-review"]);
    Shop { tmp, o, git: git_server, bare }
}

/// `[forge]` in the configuration under `home` (as `harrow_in` reads it).
fn forge_config(home: &Path, kind: &str, api_url: &str, labels: &[&str]) {
    std::fs::create_dir_all(home.join("harrow")).unwrap();
    let labels = serde_json::to_string(labels).unwrap();
    let text = format!("[forge]\nkind = \"{kind}\"\napi_url = \"{api_url}\"\nlabels = {labels}\n");
    std::fs::write(home.join("harrow/config.toml"), text).unwrap();
}

impl Shop {
    fn pr(&self, forge_var: &str, args: &[&str]) -> Output {
        let mut c = harrow(self.tmp.path());
        c.args(["pr", self.o.dir.to_str().unwrap()])
            .args(args)
            .env("HARROW_GIT_TOKEN", GIT_TOKEN)
            .env(forge_var, FORGE_TOKEN);
        c.output().unwrap()
    }

    /// Nothing harrow wrote or printed holds a token.
    fn assert_no_token_in(&self, printed: &[&Output]) {
        let export = harrow(self.tmp.path())
            .args(["export", self.o.dir.to_str().unwrap()])
            .output()
            .unwrap();
        let mut everything = loop_fixture::all_text(&self.o.dir) + &text(&export).0;
        for out in printed {
            let (a, b) = text(out);
            everything.push_str(&a);
            everything.push_str(&b);
        }
        for token in [GIT_TOKEN, FORGE_TOKEN] {
            assert!(!everything.contains(token), "{token} leaked");
        }
    }
}

/// The pull request's title: the plan overview's heading (`# Demo` in the fixture).
fn feature_title(o: &Outcome) -> String {
    let start =
        support::strict_events(&o.dir).into_iter().find(|e| e["type"] == "session_start").unwrap();
    let title = start["payload"]["title"].as_str().unwrap().to_owned();
    assert_eq!(title, "Demo", "the overview's heading, not the folder's name");
    title
}

#[test]
fn a_pull_request_on_github_is_opened_with_the_record_and_labelled() {
    let forge = forge::Forge::start(vec![
        (
            ("POST", "/api/v3/repos/acme/widgets/pulls".into()),
            (201, r#"{"html_url":"https://github.example/acme/widgets/pull/7","number":7}"#.into()),
        ),
        (("POST", "/api/v3/repos/acme/widgets/issues/7/labels".into()), (200, "[]".into())),
    ]);
    let shop = shop("github", &forge, "/api/v3", None);
    let out = shop.pr("GITHUB_TOKEN", &["--draft"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stdout.lines().last(),
        Some("https://github.example/acme/widgets/pull/7"),
        "{stdout}"
    );
    let branch = branch_of(&shop.o);
    assert_eq!(sha(&shop.bare, &branch), sha(&shop.o.repo, &branch), "pushed first");

    let requests = forge.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    let open = &requests[0];
    assert_eq!(
        (open.method.as_str(), open.path.as_str()),
        ("POST", "/api/v3/repos/acme/widgets/pulls")
    );
    assert_eq!(open.headers["authorization"], format!("Bearer {FORGE_TOKEN}"));
    assert!(open.headers["accept"].contains("application/vnd.github+json"));
    assert_eq!(open.headers["x-github-api-version"], "2022-11-28");
    assert!(open.headers["user-agent"].starts_with("harrow/"));
    assert_eq!(open.body["title"], feature_title(&shop.o).as_str());
    assert_eq!(open.body["head"], branch.as_str());
    assert_eq!(open.body["base"], "main", "the remote's default branch");
    assert_eq!(open.body["draft"], true);
    let body = open.body["body"].as_str().unwrap();
    assert!(body.starts_with("# harrow session"), "{body}");
    assert!(body.contains("T-001") && body.contains("accepted"), "{body}");
    assert!(
        body.contains("| Criterion | Witness | Cited | harrow's check |")
            && body.contains("| 1 | code | f1.txt:1 | ✓ the lines read as quoted |"),
        "the accept's witnesses, as harrow checked them: {body}"
    );
    let labels = &requests[1];
    assert_eq!(labels.path, "/api/v3/repos/acme/widgets/issues/7/labels");
    assert_eq!(labels.body, json!({"labels": ["harrow", "needs-review"]}));

    let logged = events_of(&shop.o, "pull_request");
    assert_eq!(logged[0]["url"], "https://github.example/acme/widgets/pull/7");
    assert_eq!(logged[0]["number"], 7);
    assert_eq!(logged[0]["base"], open.body["base"], "the log names the base the forge was sent");
    let show =
        harrow(shop.tmp.path()).args(["show", shop.o.dir.to_str().unwrap()]).output().unwrap();
    assert!(
        text(&show).0.contains("https://github.example/acme/widgets/pull/7"),
        "{}",
        text(&show).0
    );
    shop.assert_no_token_in(&[&out, &show]);
}

#[test]
fn a_merge_request_on_gitlab_and_a_pull_request_on_gitea_are_opened_as_each_documents() {
    let gitlab = forge::Forge::start(vec![(
        ("POST", "/api/v4/projects/acme%2Fwidgets/merge_requests".into()),
        (
            201,
            r#"{"web_url":"https://gitlab.example/acme/widgets/-/merge_requests/3","iid":3}"#
                .into(),
        ),
    )]);
    let shop_gl = shop("gitlab", &gitlab, "/api/v4", None);
    let out = shop_gl.pr("GITLAB_TOKEN", &["--draft", "--base", "main"]);
    assert!(out.status.success(), "{}", text(&out).1);
    let r = &gitlab.requests()[0];
    assert_eq!(r.headers["private-token"], FORGE_TOKEN);
    assert_eq!(r.body["source_branch"], branch_of(&shop_gl.o).as_str());
    assert_eq!(r.body["target_branch"], "main");
    assert_eq!(r.body["title"], format!("Draft: {}", feature_title(&shop_gl.o)).as_str());
    assert_eq!(r.body["labels"], "harrow,needs-review");
    assert!(r.body["description"].as_str().unwrap().starts_with("# harrow session"));
    assert_eq!(
        text(&out).0.lines().last(),
        Some("https://gitlab.example/acme/widgets/-/merge_requests/3")
    );
    shop_gl.assert_no_token_in(&[&out]);

    let gitea = forge::Forge::start(vec![
        (
            ("POST", "/api/v1/repos/acme/widgets/pulls".into()),
            (201, r#"{"html_url":"https://gitea.example/acme/widgets/pulls/5","number":5}"#.into()),
        ),
        (("POST", "/api/v1/repos/acme/widgets/issues/5/labels".into()), (200, "[]".into())),
    ]);
    let shop_gt = shop("gitea", &gitea, "/api/v1", None);
    // This remote's default branch is `trunk`: the base, sent and logged.
    git(&shop_gt.bare, &["branch", "trunk", "main"]);
    git(&shop_gt.bare, &["symbolic-ref", "HEAD", "refs/heads/trunk"]);
    let out = shop_gt.pr("GITEA_TOKEN", &[]);
    assert!(out.status.success(), "{}", text(&out).1);
    let requests = gitea.requests();
    assert_eq!(requests[0].body["base"], "trunk");
    assert_eq!(events_of(&shop_gt.o, "pull_request")[0]["base"], "trunk");
    assert_eq!(requests[0].headers["authorization"], format!("token {FORGE_TOKEN}"));
    assert_eq!(requests[0].body["title"], feature_title(&shop_gt.o).as_str());
    assert_eq!(requests[0].body["head"], branch_of(&shop_gt.o).as_str());
    assert_eq!(requests[1].path, "/api/v1/repos/acme/widgets/issues/5/labels");
    shop_gt.assert_no_token_in(&[&out]);
}

#[test]
fn without_a_token_the_compare_page_is_printed_and_the_body_written_to_a_file() {
    let forge = forge::Forge::start(vec![]);
    let shop = shop("github", &forge, "/api/v3", None);
    let mut c = harrow(shop.tmp.path());
    c.args(["pr", shop.o.dir.to_str().unwrap()]).env("HARROW_GIT_TOKEN", GIT_TOKEN);
    let out = c.output().unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let branch = branch_of(&shop.o);
    let compare =
        format!("http://127.0.0.1:{}/acme/widgets/compare/main...{branch}?expand=1", shop.git.port);
    assert_eq!(stdout.lines().last(), Some(compare.as_str()), "{stdout}");
    assert!(stdout.contains("$GITHUB_TOKEN is not set"), "{stdout}");
    let file = shop.o.dir.join("pull-request.md");
    assert!(std::fs::read_to_string(&file).unwrap().starts_with("# harrow session"));
    assert!(forge.requests().is_empty(), "no call without a token");
    assert_eq!(events_of(&shop.o, "pull_request")[0]["compare_url"], compare.as_str());
}

#[test]
fn every_failure_of_a_forge_is_one_line_with_the_fix_and_never_the_token() {
    let forge = forge::Forge::start(vec![(
        ("POST", "/api/v3/repos/acme/widgets/pulls".into()),
        (
            422,
            format!(
                r#"{{"message":"Validation Failed \u001b]52;c;aGk=\u0007","errors":[{{"message":"A pull request already exists for acme:x. token {FORGE_TOKEN}"}}]}}"#
            ),
        ),
    )]);
    let shop = shop("github", &forge, "/api/v3", None);
    let out = shop.pr("GITHUB_TOKEN", &[]);
    let stderr = one_line_failure(&out, 1);
    assert!(stderr.contains("already exists") && stderr.contains("compare/main..."), "{stderr}");
    assert!(!support::holds_controls(stderr.as_bytes()), "{stderr:?}");

    for (status, word) in
        [(401, "refused $GITHUB_TOKEN"), (403, "may not open"), (404, "has no repository")]
    {
        let forge = forge::Forge::start(vec![(
            ("POST", "/api/v3/repos/acme/widgets/pulls".into()),
            (status, r#"{"message":"nope"}"#.into()),
        )]);
        forge_config(shop.tmp.path(), "github", &forge.url("/api/v3"), &[]);
        let out = shop.pr("GITHUB_TOKEN", &[]);
        let stderr = one_line_failure(&out, 1);
        assert!(stderr.contains(word), "{status}: {stderr}");
        shop.assert_no_token_in(&[&out]);
    }
    forge_config(shop.tmp.path(), "github", "http://127.0.0.1:9/api/v3", &[]);
    let out = shop.pr("GITHUB_TOKEN", &[]);
    let stderr = one_line_failure(&out, 1);
    assert!(stderr.contains("cannot reach http://127.0.0.1:9/api/v3"), "{stderr}");
    let errors: Vec<Value> = events_of(&shop.o, "pull_request");
    assert_eq!(errors.len(), 5);
    assert!(errors.iter().all(|e| e["error"].is_string()));
    shop.assert_no_token_in(&[&out]);
}

/// A one-task session whose case summary alone is longer than GitHub's and Gitea's limit.
fn long_record(summary: &str) -> Setup {
    let case = json!({"summary": summary, "ac_coverage": [{"criterion": "f1.txt exists and says 1", "addressed_by": "f1.txt:1"}]});
    let script = json!({
        "worker": {"T-001": {"*": [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "f1.txt", "content": "1\n"}}]},
            {"tool_calls": [{"name": "submit_case", "arguments": case}]}
        ]}},
        "evaluator": {"*": {"*": [accept()]}}
    });
    Setup { tasks: 1, script, ..Setup::default() }
}

#[test]
fn on_gitea_a_record_over_the_limit_goes_on_in_comments() {
    let summary = "Counted every word. ".repeat(4000);
    let forge = forge::Forge::start(vec![
        (
            ("POST", "/api/v1/repos/acme/widgets/pulls".into()),
            (201, r#"{"html_url":"https://gitea.example/acme/widgets/pulls/5","number":5}"#.into()),
        ),
        (("POST", "/api/v1/repos/acme/widgets/issues/5/labels".into()), (200, "[]".into())),
        (
            ("POST", "/api/v1/repos/acme/widgets/issues/5/comments".into()),
            (201, r#"{"id":1}"#.into()),
        ),
    ]);
    let shop = shop("gitea", &forge, "/api/v1", Some(long_record(&summary)));
    let out = shop.pr("GITEA_TOKEN", &[]);
    assert!(out.status.success(), "{}", text(&out).1);
    let requests = forge.requests();
    let body = requests[0].body["body"].as_str().unwrap();
    assert!(
        body.chars().count() <= 65_000 && body.contains("the rest follows in the comments"),
        "{}",
        body.len()
    );
    let comments: Vec<&str> = requests
        .iter()
        .filter(|r| r.path.ends_with("/comments"))
        .map(|r| r.body["body"].as_str().unwrap())
        .collect();
    assert!(!comments.is_empty());
    assert!(comments.iter().all(|c| c.chars().count() <= 65_000));
    let kept = |part: &str| part.split("\n\n---\n").next().unwrap().to_owned();
    let told: String = kept(body) + &comments.iter().map(|c| kept(c)).collect::<String>();
    let export =
        harrow(shop.tmp.path()).args(["export", shop.o.dir.to_str().unwrap()]).output().unwrap();
    let squeeze = |t: &str| t.split_whitespace().collect::<String>();
    assert_eq!(squeeze(&told), squeeze(&text(&export).0), "the whole record reaches the forge");
    shop.assert_no_token_in(&[&out]);
}

#[test]
fn a_record_over_the_forges_limit_is_cut_with_a_note_and_kept_whole_in_a_gist() {
    let long_summary = "Counted every word. ".repeat(4000);
    let forge = forge::Forge::start(vec![
        (
            ("POST", "/api/v3/gists".into()),
            (201, r#"{"html_url":"https://gist.example/abc"}"#.into()),
        ),
        (
            ("POST", "/api/v3/repos/acme/widgets/pulls".into()),
            (201, r#"{"html_url":"https://github.example/acme/widgets/pull/8","number":8}"#.into()),
        ),
        (("POST", "/api/v3/repos/acme/widgets/issues/8/labels".into()), (200, "[]".into())),
    ]);
    let shop = shop("github", &forge, "/api/v3", Some(long_record(&long_summary)));
    let out = shop.pr("GITHUB_TOKEN", &[]);
    assert!(out.status.success(), "{}", text(&out).1);
    let requests = forge.requests();
    let gist = &requests[0];
    assert_eq!(gist.path, "/api/v3/gists");
    assert_eq!(gist.body["public"], false);
    let whole = gist.body["files"].as_object().unwrap().values().next().unwrap()["content"]
        .as_str()
        .unwrap();
    assert!(
        whole.chars().count() > 65_536 && whole.contains(long_summary.trim()),
        "the gist holds it all"
    );
    let body = requests[1].body["body"].as_str().unwrap();
    assert!(body.chars().count() <= 65_536, "{}", body.chars().count());
    assert!(
        body.contains("cut to fit github's limit of 65536 characters")
            && body.contains("https://gist.example/abc"),
        "{}",
        &body[body.len() - 400..]
    );
    assert_eq!(events_of(&shop.o, "pull_request")[0]["cut"], true);
    shop.assert_no_token_in(&[&out]);
}

#[test]
fn run_with_pr_opens_it_when_every_task_finished_and_ends_with_its_address() {
    let tmp = tempfile::tempdir().unwrap();
    let (repo, plan) = loop_fixture::repo_and_plan(tmp.path(), 2);
    let root = tmp.path().join("srv");
    let git_server = git_http::GitHttp::start(&root, GIT_TOKEN);
    let bare = git_http::bare_with_main(&root, "acme/widgets.git", &repo);
    git(&repo, &["remote", "add", "origin", &git_server.url("acme/widgets.git")]);
    let forge = forge::Forge::start(vec![(
        ("POST", "/api/v3/repos/acme/widgets/pulls".into()),
        (201, r#"{"html_url":"https://github.example/acme/widgets/pull/9","number":9}"#.into()),
    )]);
    forge_config(tmp.path(), "github", &forge.url("/api/v3"), &[]);
    let script = json!({
        "worker": {"T-001": {"*": write_and_submit(1)}, "T-002": {"*": write_and_submit(2)}},
        "evaluator": {"*": {"*": [accept()]}}
    });
    let (_rt, server) = loop_fixture::serve(&script, true);
    let mut cmd = loop_fixture::harrow_cmd(tmp.path(), &server.base_url());
    cmd.env("HOME", tmp.path().join("home"))
        .env("HARROW_GIT_TOKEN", GIT_TOKEN)
        .env("GITHUB_TOKEN", FORGE_TOKEN);
    let mut cmd = loop_fixture::headless_run(cmd, &plan, &repo);
    let out = cmd.args(["--pr", "--json"]).output().unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[lines.len() - 2], "https://github.example/acme/widgets/pull/9", "{stdout}");
    let last: Value = serde_json::from_str(lines[lines.len() - 1]).unwrap();
    assert_eq!(last["pull_request"]["url"], "https://github.example/acme/widgets/pull/9");
    assert_eq!(last["success"], true);
    let id = last["session"].as_str().unwrap();
    assert_eq!(sha(&bare, &format!("session/{id}")), sha(&repo, &format!("session/{id}")));
    assert!(!stdout.contains(FORGE_TOKEN) && !stderr.contains(FORGE_TOKEN));
    assert!(!loop_fixture::all_text(&tmp.path().join("sessions")).contains(FORGE_TOKEN));
}

#[test]
fn p_in_the_console_shows_what_goes_and_sends_only_after_y() {
    let forge = forge::Forge::start(vec![(
        ("POST", "/api/v3/repos/acme/widgets/pulls".into()),
        (201, r#"{"html_url":"https://github.example/acme/widgets/pull/7","number":7}"#.into()),
    )]);
    let shop = shop("github", &forge, "/api/v3", None);
    let branch = branch_of(&shop.o);
    let home = shop.tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let cmd = format!(
        "HOME={} HARROW_SESSIONS_DIR={} XDG_CONFIG_HOME={} HARROW_GIT_TOKEN={GIT_TOKEN} GITHUB_TOKEN={FORGE_TOKEN} {} watch {}",
        home.display(),
        shop.tmp.path().join("sessions").display(),
        shop.tmp.path().display(),
        env!("CARGO_BIN_EXE_harrow"),
        shop.o.dir.display()
    );
    let t = tmux::Tmux::start(&cmd, 160, 45);
    t.wait_for("DONE");
    t.keys(&["P"]);
    let screen = t.wait_for("Open a pull request");
    assert!(screen.contains(&format!("branch   {branch} → origin (http://127.0.0.1:")), "{screen}");
    assert!(screen.contains(&format!("title    {}", feature_title(&shop.o))), "{screen}");
    assert!(screen.contains("forge    github, with $GITHUB_TOKEN"), "{screen}");
    assert!(screen.contains("│ # harrow session"), "the first lines of the body: {screen}");
    assert!(!screen.contains(FORGE_TOKEN) && !screen.contains(GIT_TOKEN));
    assert!(forge.requests().is_empty(), "nothing is sent before y");
    assert!(
        !git(&shop.bare, &["branch", "--list"]).contains("session/"),
        "nothing is pushed before y"
    );

    // Tab switches to a push only and back; y sends.
    t.keys(&["Tab"]);
    t.wait_for("Push the branch");
    t.keys(&["Tab"]);
    t.wait_for("Open a pull request");
    t.keys(&["y"]);
    let screen = t.wait_for("opened pull request #7: https://github.example/acme/widgets/pull/7");
    assert!(!screen.contains("Open a pull request"), "the offer closed: {screen}");
    assert!(
        screen.contains("the labels were not set (404"),
        "a label the forge refused is said: {screen}"
    );
    t.wait_for("DONE · PR https://github.example/acme/widgets/pull/7");
    assert_eq!(forge.requests().len(), 2, "the pull request, then its labels");
    assert_eq!(sha(&shop.bare, &branch), sha(&shop.o.repo, &branch));
    let kinds: Vec<String> = support::strict_events(&shop.o.dir)
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect();
    assert!(kinds.ends_with(&["push".to_owned(), "pull_request".to_owned()]), "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| *k == "push").count(), 1, "one push, on y: {kinds:?}");
    // P again names the pull request that is open: shipping again updates it.
    t.keys(&["P"]);
    let screen = t.wait_for("Update the pull request");
    assert!(
        screen.contains("open     https://github.example/acme/widgets/pull/7: the push goes to it"),
        "{screen}"
    );
    assert!(screen.contains("y  push, then update the pull request"), "{screen}");
    t.keys(&["Escape"]);
    shop.assert_no_token_in(&[]);
}

/// What GitHub's list of open pull requests from the session's branch asks and answers, with
/// pull request `number` open.
fn open_pull_request_listed(shop: &Shop, number: u64) -> (String, String) {
    let branch = branch_of(&shop.o);
    let query = format!(
        "/api/v3/repos/acme/widgets/pulls?state=open&head=acme:{}&base=main",
        branch.replace('/', "%2F")
    );
    let answer = format!(
        r#"[{{"html_url":"https://github.example/acme/widgets/pull/{number}","number":{number},"head":{{"ref":"{branch}"}}}}]"#
    );
    (query, answer)
}

/// A second `harrow pr` finds the pull request the first opened before asking for one: the
/// forge is asked for the open one from the branch, which gets the record as it stands now;
/// no second pull request is asked for, even from a forge that would open one.
#[test]
fn a_second_pr_updates_the_open_one_and_never_opens_a_twin() {
    let shop = shop("github", &forge::Forge::start(vec![]), "/api/v3", None);
    let (query, answer) = open_pull_request_listed(&shop, 7);
    let forge = forge::Forge::start(vec![
        (
            ("POST", "/api/v3/repos/acme/widgets/pulls".into()),
            (201, r#"{"html_url":"https://github.example/acme/widgets/pull/7","number":7}"#.into()),
        ),
        (("GET", query), (200, answer)),
        (("PATCH", "/api/v3/repos/acme/widgets/pulls/7".into()), (200, "{}".into())),
        (("POST", "/api/v3/repos/acme/widgets/issues/7/labels".into()), (200, "[]".into())),
    ]);
    forge_config(shop.tmp.path(), "github", &forge.url("/api/v3"), &[]);
    let first = shop.pr("GITHUB_TOKEN", &[]);
    assert!(first.status.success(), "{}", text(&first).1);
    let out = shop.pr("GITHUB_TOKEN", &[]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout.lines().last(), Some("https://github.example/acme/widgets/pull/7"));
    assert!(stdout.contains("it was open already"), "{stdout}");
    let opens = forge
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/pulls"))
        .count();
    assert_eq!(opens, 1, "the second pr asked for a twin: {:?}", forge.requests());
    let patch = forge.requests().into_iter().find(|r| r.method == "PATCH").unwrap();
    assert!(patch.body["body"].as_str().unwrap().starts_with("# harrow session"));
    let numbers: Vec<Value> =
        events_of(&shop.o, "pull_request").iter().map(|e| e["number"].clone()).collect();
    assert_eq!(numbers, [json!(7), json!(7)]);
    shop.assert_no_token_in(&[&first, &out]);
}

#[test]
fn a_pull_request_open_already_is_found_and_named_not_failed() {
    // The forge's address is written after the branch's name is known.
    let shop = shop("github", &forge::Forge::start(vec![]), "/api/v3", None);
    let (query, answer) = open_pull_request_listed(&shop, 3);
    let forge = forge::Forge::start(vec![
        (
            ("POST", "/api/v3/repos/acme/widgets/pulls".into()),
            (422, r#"{"message":"Validation Failed","errors":[{"message":"A pull request already exists"}]}"#.into()),
        ),
        (("GET", query), (200, answer)),
        (("PATCH", "/api/v3/repos/acme/widgets/pulls/3".into()), (200, "{}".into())),
        (("POST", "/api/v3/repos/acme/widgets/issues/3/labels".into()), (200, "[]".into())),
    ]);
    forge_config(shop.tmp.path(), "github", &forge.url("/api/v3"), &[]);
    let out = shop.pr("GITHUB_TOKEN", &[]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("it was open already"), "{stdout}");
    assert_eq!(stdout.lines().last(), Some("https://github.example/acme/widgets/pull/3"));
    let get = forge.requests().into_iter().find(|r| r.method == "GET").unwrap();
    assert_eq!(get.headers["authorization"], format!("Bearer {FORGE_TOKEN}"));
    assert!(!get.headers.contains_key("content-type"), "a GET carries no body");
    let patch = forge.requests().into_iter().find(|r| r.method == "PATCH").unwrap();
    assert!(
        patch.body["body"].as_str().unwrap().starts_with("# harrow session"),
        "{:?}",
        patch.body
    );
    assert!(stdout.contains("its description is the record as it stands now"), "{stdout}");
    assert_eq!(events_of(&shop.o, "pull_request")[0]["number"], 3);
    shop.assert_no_token_in(&[&out]);
}

/// Shipping's corners: a `pushInsteadOf` planted in the user's `~/.gitconfig` (what a worker
/// without a sandbox can write) is refused by name and its host gets nothing; a token in an
/// address's query is never printed or logged; a forge error that echoes the token as a Basic
/// header (base64 of `x-access-token:<token>`) or URL-encoded reaches neither the terminal nor
/// the log.
#[test]
fn shipping_leaks_no_token_through_a_planted_rewrite_a_query_or_an_encoded_echo() {
    use base64::Engine as _;
    let tmp = tempfile::tempdir().unwrap();
    let o = finished(tmp.path());
    let (_, evil, url) = remote_and_planted(tmp.path());
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join(".gitconfig"),
        format!("[url \"file://{}\"]\n\tpushInsteadOf = {url}\n", evil.display()),
    )
    .unwrap();
    let out = harrow(tmp.path())
        .args(["push", o.dir.to_str().unwrap(), "--remote", &url])
        .env("HARROW_GIT_TOKEN", GIT_TOKEN)
        .output()
        .unwrap();
    let stderr = one_line_failure(&out, 1);
    assert!(stderr.contains("pushinsteadof") && stderr.contains(".gitconfig"), "{stderr}");
    assert!(git(&evil, &["for-each-ref"]).trim().is_empty(), "the planted host got nothing");
    std::fs::remove_file(home.join(".gitconfig")).unwrap();

    let with_query = format!("{url}?access_token={GIT_TOKEN}-in-query#{FORGE_TOKEN}");
    let out = harrow(tmp.path())
        .args(["push", o.dir.to_str().unwrap(), "--remote", &with_query])
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    let logged = loop_fixture::all_text(&o.dir);
    for text in [&stdout, &stderr, &logged] {
        assert!(!text.contains("access_token") && !text.contains(GIT_TOKEN), "{text}");
        assert!(!text.contains(FORGE_TOKEN));
    }

    let basic =
        base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{FORGE_TOKEN}"));
    let forge = forge::Forge::start(vec![(
        ("POST", "/api/v3/repos/acme/widgets/pulls".into()),
        (
            422,
            format!(
                r#"{{"message":"you sent Authorization: Basic {basic} and token={}"}}"#,
                FORGE_TOKEN.replace('-', "%2D")
            ),
        ),
    )]);
    let shop = shop("github", &forge, "/api/v3", None);
    let out = shop.pr("GITHUB_TOKEN", &[]);
    let (stdout, stderr) = text(&out);
    let logged = loop_fixture::all_text(&shop.o.dir);
    let core = &basic[4..basic.len() - 4];
    for text in [&stdout, &stderr, &logged] {
        assert!(!text.contains(core), "the base64 echo is scrubbed: {text}");
    }
    shop.assert_no_token_in(&[&out]);
}

/// Two bare repositories in `tmp`: the session's remote and a host a planted rewrite would
/// send the push to; and the remote's `file://` address.
fn remote_and_planted(tmp: &Path) -> (PathBuf, PathBuf, String) {
    let bare = tmp.join("remote.git");
    let evil = tmp.join("evil.git");
    for b in [&bare, &evil] {
        git(tmp, &["init", "-q", "--bare", b.to_str().unwrap()]);
    }
    let url = format!("file://{}", bare.display());
    (bare, evil, url)
}

/// A URL rewrite outside the repository — `pushInsteadOf` or `insteadOf` in `~/.gitconfig`,
/// directly or in a file it includes, or in the XDG file — never takes a push to the
/// session's remote (named `origin` in the repository) elsewhere: the push is refused naming
/// the setting, and the rewritten host gets nothing.
#[test]
fn a_rewrite_outside_the_repository_never_takes_the_push_to_its_origin_elsewhere() {
    let tmp = tempfile::tempdir().unwrap();
    let o = finished(tmp.path());
    let (bare, evil, url) = remote_and_planted(tmp.path());
    git(&o.repo, &["remote", "add", "origin", &url]);
    let home = tmp.path().join("home");
    std::fs::create_dir_all(home.join(".config/git")).unwrap();
    let rewrite = |key: &str| format!("[url \"file://{}\"]\n\t{key} = {url}\n", evil.display());
    let included = home.join("included.gitconfig");
    let places: [(&str, std::path::PathBuf, String); 4] = [
        ("pushInsteadOf", home.join(".gitconfig"), rewrite("pushInsteadOf")),
        ("insteadOf", home.join(".gitconfig"), rewrite("insteadOf")),
        (
            "include",
            home.join(".gitconfig"),
            format!("[include]\n\tpath = {}\n", included.display()),
        ),
        ("xdg", home.join(".config/git/config"), rewrite("pushInsteadOf")),
    ];
    for (what, file, setting) in places {
        std::fs::write(&included, rewrite("pushInsteadOf")).unwrap();
        std::fs::write(&file, setting).unwrap();
        let out = harrow(tmp.path())
            .args(["push", o.dir.to_str().unwrap()])
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("HARROW_GIT_TOKEN", GIT_TOKEN)
            .output()
            .unwrap();
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(1), "{what}: {stdout}{stderr}");
        assert!(stderr.contains("insteadof"), "{what}: {stderr}");
        assert!(
            git(&evil, &["for-each-ref"]).trim().is_empty(),
            "{what}: the rewrite's host got a push"
        );
        assert!(git(&bare, &["for-each-ref"]).trim().is_empty(), "{what}: refused, not pushed");
        std::fs::remove_file(&file).unwrap();
    }
}
