//! The body of a request to a git service (the pack of a push, the wants of a fetch): kept in
//! memory while small and in a temporary file past [`IN_MEMORY_MAX`], so a push of a long
//! history never needs its size in memory; either way it can be sent again after a 401.

use bytes::Bytes;
use std::io::{self, Seek, Write};

/// The most of a body kept in memory.
const IN_MEMORY_MAX: usize = 8 << 20;

/// What libgit2 wrote for one request.
#[derive(Debug)]
pub(super) enum RequestBody {
    Writing(Vec<u8>),
    /// In memory and sent at least once: each sending shares it.
    Sent(Bytes),
    Spilled {
        file: tempfile::NamedTempFile,
        len: u64,
    },
}

impl Default for RequestBody {
    fn default() -> RequestBody {
        RequestBody::Writing(Vec::new())
    }
}

impl RequestBody {
    /// Adds `buf`; past [`IN_MEMORY_MAX`] the body moves to a temporary file.
    pub(super) fn write(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            RequestBody::Writing(held) if held.len() + buf.len() <= IN_MEMORY_MAX => {
                held.extend_from_slice(buf);
            }
            RequestBody::Writing(held) => {
                let mut file = tempfile::NamedTempFile::new()?;
                file.write_all(held)?;
                file.write_all(buf)?;
                let len = (held.len() + buf.len()) as u64;
                *self = RequestBody::Spilled { file, len };
            }
            RequestBody::Spilled { file, len } => {
                file.write_all(buf)?;
                *len += buf.len() as u64;
            }
            RequestBody::Sent(_) => {
                return Err(io::Error::other("git wrote to a request already sent"));
            }
        }
        Ok(())
    }

    /// The body to send (again), and its length. A file's body is read from its start by a
    /// handle of its own, inside the runtime that sends it.
    pub(super) fn for_sending(&mut self) -> io::Result<(reqwest::Body, u64)> {
        if let RequestBody::Writing(held) = self {
            *self = RequestBody::Sent(Bytes::from(std::mem::take(held)));
        }
        match self {
            RequestBody::Sent(bytes) => {
                Ok((reqwest::Body::from(bytes.clone()), bytes.len() as u64))
            }
            RequestBody::Spilled { file, len } => {
                file.as_file_mut().flush()?;
                let mut again = file.reopen()?;
                again.rewind()?;
                Ok((reqwest::Body::from(tokio::fs::File::from_std(again)), *len))
            }
            RequestBody::Writing(_) => Err(io::Error::other("the body was not kept")),
        }
    }

    #[cfg(test)]
    fn spilled(&self) -> bool {
        matches!(self, RequestBody::Spilled { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(body: &mut RequestBody) -> Vec<u8> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let (body, len) = body.for_sending().unwrap();
            let mut out = Vec::new();
            let mut stream = http_body_util::BodyDataStream::new(body);
            while let Some(chunk) = futures_util::StreamExt::next(&mut stream).await {
                out.extend_from_slice(&chunk.unwrap());
            }
            assert_eq!(out.len() as u64, len);
            out
        })
    }

    #[test]
    fn a_small_body_stays_in_memory_and_a_large_one_goes_to_a_file_and_both_send_twice() {
        let mut small = RequestBody::default();
        small.write(b"0032want ").unwrap();
        small.write(b"abc\n").unwrap();
        assert!(!small.spilled());
        assert_eq!(sent(&mut small), b"0032want abc\n");
        assert_eq!(sent(&mut small), b"0032want abc\n", "sent again after a 401");
        assert!(small.write(b"more").is_err());

        let piece: Vec<u8> = (0..=255u8).cycle().take(1 << 20).collect();
        let mut large = RequestBody::default();
        for _ in 0..9 {
            large.write(&piece).unwrap();
        }
        large.write(b"end").unwrap();
        assert!(large.spilled());
        let mut whole = piece.repeat(9);
        whole.extend_from_slice(b"end");
        assert!(sent(&mut large) == whole);
        assert!(sent(&mut large) == whole, "sent again from the file's start");
    }
}
