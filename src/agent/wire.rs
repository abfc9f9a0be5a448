//! The ACP wire: JSON-RPC 2.0 messages, one per line, over the agent's stdio.
//!
//! An agent is a program harrow did not write, so every line it prints is hostile input: a
//! line longer than [`MAX_LINE`] is refused without being held in memory, a line that is not
//! a JSON-RPC message is named (its first bytes, made printable) and the connection ends —
//! an agent that prints its banner on stdout speaks no ACP, and guessing past that would mean
//! acting on text nobody meant as a message.

use serde_json::Value;
use std::io::{BufRead, ErrorKind};

/// The longest line harrow takes from an agent: a file's whole text in a `fs/write_text_file`
/// or a diff in a tool update fits; a flood does not.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// One message from the agent.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request of the agent's, which harrow must answer (`session/request_permission`,
    /// `fs/*`, `terminal/*`).
    Request { id: Value, method: String, params: Value },
    /// A notification (`session/update`).
    Notification { method: String, params: Value },
    /// The answer to one of harrow's requests.
    Response { id: u64, outcome: Result<Value, RpcError> },
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

impl RpcError {
    /// The method is not one harrow serves.
    pub fn method_not_found(method: &str) -> RpcError {
        RpcError {
            code: -32601,
            message: format!("harrow does not offer {}", crate::printable::line(method)),
        }
    }

    /// The parameters do not make a request harrow can serve.
    pub fn invalid_params(why: impl Into<String>) -> RpcError {
        RpcError { code: -32602, message: why.into() }
    }
}

/// Why the agent's output could not be read as ACP.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WireError {
    #[error("the agent printed a line of more than {} MiB; harrow reads no further", MAX_LINE / (1024 * 1024))]
    LineTooLong,
    #[error("the agent printed something that is not an ACP (JSON-RPC) message: {0}")]
    NotAcp(String),
    #[error("reading the agent's output failed: {0}")]
    Read(String),
}

/// Reads the next line, without its newline, holding at most [`MAX_LINE`] bytes of it.
/// `Ok(None)` at the end of the stream; a longer line is read to its end and dropped, and
/// reported.
pub fn read_line(input: &mut impl BufRead) -> Result<Option<Vec<u8>>, WireError> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let chunk = match input.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(WireError::Read(e.to_string())),
        };
        if chunk.is_empty() {
            if too_long {
                return Err(WireError::LineTooLong);
            }
            return Ok(if line.is_empty() { None } else { Some(line) });
        }
        let (take, done) = match memchr::memchr(b'\n', chunk) {
            Some(at) => (at, true),
            None => (chunk.len(), false),
        };
        if !too_long {
            if line.len() + take > MAX_LINE {
                too_long = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(&chunk[..take]);
            }
        }
        input.consume(if done { take + 1 } else { take });
        if done {
            if too_long {
                return Err(WireError::LineTooLong);
            }
            return Ok(Some(line));
        }
    }
}

/// Reads one line as a JSON-RPC message. Blank lines are skipped by the caller.
pub fn parse(line: &[u8]) -> Result<Incoming, WireError> {
    let not_acp = || {
        let head = String::from_utf8_lossy(&line[..line.len().min(120)]);
        WireError::NotAcp(crate::printable::line(&head))
    };
    let value: Value = serde_json::from_slice(line).map_err(|_| not_acp())?;
    let Value::Object(mut map) = value else { return Err(not_acp()) };
    let method = map.get("method").and_then(Value::as_str).map(str::to_owned);
    let params = map.remove("params").unwrap_or(Value::Null);
    match (method, map.remove("id")) {
        (Some(method), Some(id)) if !id.is_null() => Ok(Incoming::Request { id, method, params }),
        (Some(method), _) => Ok(Incoming::Notification { method, params }),
        (None, Some(id)) => {
            let Some(id) = id.as_u64() else { return Err(not_acp()) };
            let outcome = match (map.remove("result"), map.remove("error")) {
                (_, Some(error)) if !error.is_null() => Err(RpcError {
                    code: error["code"].as_i64().unwrap_or(-32603),
                    message: crate::printable::line(error["message"].as_str().unwrap_or("")),
                }),
                (Some(result), _) => Ok(result),
                (None, _) => Ok(Value::Null),
            };
            Ok(Incoming::Response { id, outcome })
        }
        (None, None) => Err(not_acp()),
    }
}

/// A request of harrow's, as a line.
pub fn request(id: u64, method: &str, params: &Value) -> Vec<u8> {
    line(&serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
}

/// A notification of harrow's (`session/cancel`), as a line.
pub fn notification(method: &str, params: &Value) -> Vec<u8> {
    line(&serde_json::json!({"jsonrpc": "2.0", "method": method, "params": params}))
}

/// harrow's answer to a request of the agent's, as a line.
pub fn answer(id: &Value, outcome: &Result<Value, RpcError>) -> Vec<u8> {
    let message = match outcome {
        Ok(result) => serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(e) => serde_json::json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": e.code, "message": e.message}}),
    };
    line(&message)
}

fn line(value: &Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(value).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufReader, Cursor};

    #[test]
    fn lines_are_read_whole_and_an_overlong_one_is_refused_without_being_kept() {
        let mut input = BufReader::with_capacity(7, Cursor::new(b"{\"a\":1}\n\nlast".to_vec()));
        assert_eq!(read_line(&mut input).unwrap().unwrap(), b"{\"a\":1}");
        assert_eq!(read_line(&mut input).unwrap().unwrap(), b"");
        assert_eq!(read_line(&mut input).unwrap().unwrap(), b"last");
        assert_eq!(read_line(&mut input).unwrap(), None);
        let mut flood = vec![b'x'; MAX_LINE + 10];
        flood.extend_from_slice(b"\n{}\n");
        let mut input = BufReader::new(Cursor::new(flood));
        assert_eq!(read_line(&mut input), Err(WireError::LineTooLong));
    }

    #[test]
    fn messages_are_told_apart_and_text_that_is_no_message_is_named_printably() {
        let req = parse(
            br#"{"jsonrpc":"2.0","id":"a","method":"fs/read_text_file","params":{"path":"/x"}}"#,
        );
        assert!(
            matches!(req, Ok(Incoming::Request { method, .. }) if method == "fs/read_text_file")
        );
        let note = parse(br#"{"jsonrpc":"2.0","method":"session/update","params":{}}"#);
        assert!(matches!(note, Ok(Incoming::Notification { .. })));
        let ok = parse(br#"{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}"#);
        assert!(matches!(ok, Ok(Incoming::Response { id: 3, outcome: Ok(_) })));
        let err = parse(
            b"{\"jsonrpc\":\"2.0\",\"id\":4,\"error\":{\"code\":-1,\"message\":\"no\\u001b[2J\"}}",
        );
        let Ok(Incoming::Response { outcome: Err(e), .. }) = err else { panic!("{err:?}") };
        assert!(!e.message.contains('\u{1b}'), "{e:?}");
        let banner = parse(b"Welcome to \x1b[31mAgent\x1b[0m v1");
        let Err(WireError::NotAcp(head)) = banner else { panic!("{banner:?}") };
        assert!(head.contains("Welcome") && !head.contains('\u{1b}'), "{head}");
        assert!(parse(b"[1,2]").is_err() && parse(b"{}").is_err());
    }
}
