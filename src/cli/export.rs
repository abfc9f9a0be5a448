//! `harrow export`: a session as Markdown (for a pull request or an issue), a standalone HTML
//! page, or JSON for tools.

use super::SessionArg;
use crate::export::{Format, render_to};
use color_eyre::eyre::{Result, WrapErr};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub target: SessionArg,
    /// What to write.
    #[arg(long, value_enum, default_value = "md")]
    pub format: Format,
    /// Write to FILE instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Renders the session into the file or onto standard output as it is read. A file is written
/// beside its final name and renamed there when whole, so a failed export leaves no half file.
pub fn run(args: &Args) -> Result<ExitCode> {
    let found = args.target.resolve()?;
    let read_err = || format!("cannot read session {}", found.dir.display());
    if let Some(path) = &args.output {
        let write_err = || format!("cannot write {}", path.display());
        let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let file = tempfile::NamedTempFile::new_in(folder).wrap_err_with(write_err)?;
        let mut out = Noting { inner: std::io::BufWriter::new(file), failed: false };
        match render_to(&found.dir, &found.id, args.format, &mut out, &mut |_| {
            std::ops::ControlFlow::Continue(())
        }) {
            Err(e) if out.failed => return Err(e).wrap_err_with(write_err),
            Err(e) => return Err(e).wrap_err_with(read_err),
            Ok(()) => {}
        }
        let file = out
            .inner
            .into_inner()
            .map_err(std::io::IntoInnerError::into_error)
            .wrap_err_with(write_err)?;
        file.persist(path).map_err(|e| e.error).wrap_err_with(write_err)?;
        // The document went to the file: what was done is the command's output, on stdout.
        println!("Wrote {}", crate::printable::line(&path.display().to_string()));
    } else {
        let mut out = Noting { inner: super::out::stdout(), failed: false };
        match render_to(&found.dir, &found.id, args.format, &mut out, &mut |_| {
            std::ops::ControlFlow::Continue(())
        }) {
            Err(e) if out.failed => return Err(e).wrap_err("cannot write to standard output"),
            Err(e) => return Err(e).wrap_err_with(read_err),
            Ok(()) => {}
        }
        out.flush()?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A writer that remembers whether it failed, so an error is blamed on the output or the log.
struct Noting<W> {
    inner: W,
    failed: bool,
}

impl<W: Write> Write for Noting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.inner.write(buf).inspect_err(|_| self.failed = true)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush().inspect_err(|_| self.failed = true)
    }
}
