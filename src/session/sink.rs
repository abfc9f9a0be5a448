//! Where the hands and the loop send events: the session writer in a run, a vector in a test
//! that inspects what would have been written.

use super::event::Record;
use super::writer::SessionWriter;
use std::io;

/// Something that records events in order.
pub trait EventSink {
    fn emit<P: Record>(&mut self, payload: &P) -> io::Result<()>;
}

impl EventSink for SessionWriter {
    fn emit<P: Record>(&mut self, payload: &P) -> io::Result<()> {
        self.append(payload).map(|_| ())
    }
}

/// Events kept in memory as `(type, payload)`.
impl EventSink for Vec<(String, serde_json::Value)> {
    fn emit<P: Record>(&mut self, payload: &P) -> io::Result<()> {
        let value = serde_json::to_value(payload).map_err(io::Error::from)?;
        self.push((P::KIND.name().to_owned(), value));
        Ok(())
    }
}
