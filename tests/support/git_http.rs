//! A small web server on 127.0.0.1 that serves bare repositories through the real
//! `git http-backend` (smart HTTP), behind basic authentication with one accepted token.

// Compiled into each test crate that includes it; each uses part of it.
#![allow(dead_code)]
// A test whose setup fails should panic there.
#![allow(clippy::unwrap_used)]

use base64::Engine;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    /// The `Authorization` header, decoded: `user:password`.
    pub credentials: Option<String>,
    pub status: u16,
}

pub struct GitHttp {
    pub port: u16,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    /// Served over TLS, at `https://localhost:PORT`.
    pub tls: bool,
}

impl GitHttp {
    /// Serves every bare repository under `root` at `http://127.0.0.1:PORT/<path>`, to
    /// clients whose basic-auth password is `token`.
    pub fn start(root: &Path, token: &str) -> GitHttp {
        GitHttp::serving(root, token, None)
    }

    /// The same over TLS, with the certificate chain and key in the PEM files given.
    pub fn start_tls(root: &Path, token: &str, cert: &Path, key: &Path) -> GitHttp {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let chain: Vec<CertificateDer<'static>> =
            CertificateDer::pem_file_iter(cert).unwrap().map(Result::unwrap).collect();
        let key = PrivateKeyDer::from_pem_file(key).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap();
        GitHttp::serving(root, token, Some(Arc::new(config)))
    }

    fn serving(root: &Path, token: &str, tls: Option<Arc<rustls::ServerConfig>>) -> GitHttp {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (root, token, log) = (root.to_path_buf(), token.to_owned(), seen.clone());
        let is_tls = tls.is_some();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (root, token, log, tls) =
                    (root.clone(), token.clone(), log.clone(), tls.clone());
                std::thread::spawn(move || {
                    let _ = match tls {
                        Some(config) => rustls::ServerConnection::new(config)
                            .map_err(std::io::Error::other)
                            .and_then(|c| {
                                serve(rustls::StreamOwned::new(c, stream), &root, &token, &log)
                            }),
                        None => serve(stream, &root, &token, &log),
                    };
                });
            }
        });
        GitHttp { port, seen, tls: is_tls }
    }

    pub fn url(&self, path: &str) -> String {
        if self.tls {
            format!("https://localhost:{}/{path}", self.port)
        } else {
            format!("http://127.0.0.1:{}/{path}", self.port)
        }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn serve<S: Read + Write>(
    stream: S,
    root: &Path,
    token: &str,
    log: &Mutex<Vec<Seen>>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_owned();
    let target = parts.next().unwrap_or("").to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let header = |name: &str| headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let credentials = header("authorization")
        .and_then(|v| v.strip_prefix("Basic ").map(str::to_owned))
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .map(|b| String::from_utf8_lossy(&b).into_owned());
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let seen = Seen {
        method: method.clone(),
        path: path.to_owned(),
        credentials: credentials.clone(),
        status: 0,
    };
    // `/login/…` answers as a web page would, with a body that would clear a terminal;
    // `/garbled/…` with terminal escapes in a header too.
    let page = if path.starts_with("/login/") {
        Some("text/html")
    } else if path.starts_with("/garbled/") {
        Some("text/html; charset=\x1b[31m")
    } else {
        None
    };
    if let Some(content_type) = page {
        let headers = format!("Content-Type: {content_type}\r\n");
        let body = "<html>\x1b[2J\x1b]0;pwned\x07sign in</html>";
        return answer(&mut reader, seen, log, (200, "OK"), &headers, body);
    }
    // `/moved/…` has moved to `/…` on this server; `/elsewhere/…` to another host.
    let moved = path.strip_prefix("/moved/").map(|rest| format!("/{rest}?{query}"));
    let elsewhere =
        path.strip_prefix("/elsewhere/").map(|rest| format!("http://other.invalid/{rest}?{query}"));
    if let Some(location) = moved.or(elsewhere) {
        let headers = format!("Location: {location}\r\n");
        return answer(&mut reader, seen, log, (301, "Moved Permanently"), &headers, "");
    }
    let password_ok =
        credentials.as_deref().and_then(|c| c.split_once(':')).is_some_and(|(_, p)| p == token);
    if !password_ok {
        let headers = "WWW-Authenticate: Basic realm=\"git\"\r\nContent-Type: text/plain\r\n";
        let body = "authentication required\n";
        return answer(&mut reader, seen, log, (401, "Unauthorized"), headers, body);
    }
    let body = read_body(&mut reader, header("content-length"), header("transfer-encoding"))?;
    let mut child = Command::new("git")
        .arg("http-backend")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REMOTE_USER", "harrow-test")
        .env("REMOTE_ADDR", "127.0.0.1")
        .env("REQUEST_METHOD", &method)
        .env("PATH_INFO", path)
        .env("QUERY_STRING", query)
        .env("CONTENT_TYPE", header("content-type").unwrap_or_default())
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("HTTP_CONTENT_ENCODING", header("content-encoding").unwrap_or_default())
        .env("GIT_HTTP_MAX_REQUEST_BUFFER", "100M")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&body);
    });
    let mut cgi = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut cgi)?;
    let _ = writer.join();
    child.wait()?;
    let split = cgi
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4))
        .or_else(|| cgi.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2)))
        .unwrap_or((0, 0));
    let head = String::from_utf8_lossy(&cgi[..split.0]).into_owned();
    let payload = &cgi[split.0 + split.1..];
    let mut status = "200 OK".to_owned();
    let mut response = Vec::new();
    for h in head.lines() {
        match h.split_once(':') {
            Some((k, v)) if k.eq_ignore_ascii_case("status") => v.trim().clone_into(&mut status),
            Some(_) => response.extend_from_slice(format!("{h}\r\n").as_bytes()),
            None => {}
        }
    }
    let mut seen = seen;
    seen.status = status.split_whitespace().next().and_then(|s| s.parse().ok()).unwrap_or(0);
    log.lock().unwrap().push(seen);
    let out = reader.get_mut();
    write!(out, "HTTP/1.1 {status}\r\n")?;
    out.write_all(&response)?;
    write!(out, "Content-Length: {}\r\nConnection: close\r\n\r\n", payload.len())?;
    out.write_all(payload)?;
    out.flush()
}

/// Logs `seen` with `status` and answers with it, `headers` (each ending in CRLF) and `body`.
fn answer<S: Read + Write>(
    reader: &mut BufReader<S>,
    mut seen: Seen,
    log: &Mutex<Vec<Seen>>,
    status: (u16, &str),
    headers: &str,
    body: &str,
) -> std::io::Result<()> {
    seen.status = status.0;
    log.lock().unwrap().push(seen);
    let out = reader.get_mut();
    write!(
        out,
        "HTTP/1.1 {} {}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        status.0,
        status.1,
        body.len()
    )?;
    out.flush()
}

fn read_body<S: Read>(
    reader: &mut BufReader<S>,
    length: Option<String>,
    encoding: Option<String>,
) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    if encoding.is_some_and(|e| e.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size)?;
            let n = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
                .unwrap_or(0);
            let mut chunk = vec![0; n + 2];
            reader.read_exact(&mut chunk)?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
    } else if let Some(n) = length.and_then(|l| l.parse::<usize>().ok()) {
        body.resize(n, 0);
        reader.read_exact(&mut body)?;
    }
    Ok(body)
}

/// A bare repository under `root` at `path`, holding `source`'s `main`.
pub fn bare_with_main(root: &Path, path: &str, source: &Path) -> PathBuf {
    let bare = root.join(path);
    std::fs::create_dir_all(&bare).unwrap();
    super::support::git(&bare, &["init", "-q", "--bare", "-b", "main"]);
    super::support::git(source, &["push", "-q", bare.to_str().unwrap(), "main"]);
    bare
}
