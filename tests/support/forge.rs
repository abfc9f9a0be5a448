//! A scripted forge API on 127.0.0.1: answers the routes a test gives it, 404 otherwise, and
//! keeps every request (method, path, headers, JSON body) for the test to check.

// Compiled into each test crate that includes it; each uses part of it.
#![allow(dead_code)]
// A test whose setup fails should panic there.
#![allow(clippy::unwrap_used)]

use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// Header names in lower case.
    pub headers: BTreeMap<String, String>,
    pub body: Value,
    /// The body as it came, for "this string never appears" checks.
    pub raw: String,
}

/// `(method, path) → (status, body)`.
pub type Routes = Vec<((&'static str, String), (u16, String))>;

pub struct Forge {
    pub port: u16,
    pub requests: Arc<Mutex<Vec<Request>>>,
}

impl Forge {
    pub fn start(routes: Routes) -> Forge {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (log, routes) = (requests.clone(), Arc::new(routes));
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (log, routes) = (log.clone(), routes.clone());
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut out = stream;
                    let mut line = String::new();
                    if reader.read_line(&mut line).is_err() {
                        return;
                    }
                    let mut parts = line.split_whitespace();
                    let method = parts.next().unwrap_or("").to_owned();
                    let path = parts.next().unwrap_or("").to_owned();
                    let mut headers = BTreeMap::new();
                    loop {
                        let mut h = String::new();
                        if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                            break;
                        }
                        if let Some((k, v)) = h.split_once(':') {
                            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
                        }
                    }
                    let n = headers.get("content-length").and_then(|l| l.parse().ok()).unwrap_or(0);
                    let mut body = vec![0; n];
                    let _ = reader.read_exact(&mut body);
                    let raw = String::from_utf8_lossy(&body).into_owned();
                    let json = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    log.lock().unwrap().push(Request {
                        method: method.clone(),
                        path: path.clone(),
                        headers,
                        body: json,
                        raw,
                    });
                    let (status, answer) =
                        routes.iter().find(|((m, p), _)| *m == method && *p == path).map_or_else(
                            || (404, r#"{"message":"Not Found"}"#.to_owned()),
                            |(_, a)| a.clone(),
                        );
                    let _ = write!(
                        out,
                        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                        answer.len()
                    );
                });
            }
        });
        Forge { port, requests }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}
