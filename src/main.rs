//! The `harrow` binary: parse the command line and hand over to [`harrow::cli`].

use std::process::ExitCode;

fn main() -> ExitCode {
    if let Err(e) = color_eyre::install() {
        eprintln!("harrow: cannot install the error reporter: {e}");
    }
    harrow::cli::main()
}
