//! Standard output for the verbs: buffered, and every byte through [`crate::printable`], so
//! model and tool text printed by `show`, `export`, `replay --headless`, a headless run or
//! `prep` can never carry an escape sequence to the operator's terminal.

use crate::printable;
use std::io::{self, BufWriter, StdoutLock};

/// What a verb writes to.
pub type Out = printable::Writer<BufWriter<StdoutLock<'static>>>;

/// Standard output, locked for the verb. Flush it before anything else writes to the terminal
/// (an error report, a prompt read from standard input).
pub fn stdout() -> Out {
    printable::Writer::new(BufWriter::with_capacity(64 * 1024, io::stdout().lock()))
}
