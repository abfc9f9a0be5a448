//! The `harrow` binary: parse the command line and hand over to [`harrow::cli`].

use color_eyre::config::{HookBuilder, Theme};
use std::io::IsTerminal;
use std::process::ExitCode;

fn main() -> ExitCode {
    if let Err(e) = harrow::keys::seal() {
        eprintln!(
            "harrow: cannot move the API keys out of the environment before starting ({e}); nothing was run"
        );
        return ExitCode::from(2);
    }
    harrow::hands::process::adopt_orphans();
    // Reports that land in a log file or a CI transcript stay free of colour escapes.
    let theme = if std::io::stderr().is_terminal() { Theme::dark() } else { Theme::new() };
    if let Err(e) = HookBuilder::default().theme(theme).install() {
        eprintln!("harrow: cannot install the error reporter: {e}");
    }
    // Printing to a closed pipe (`harrow demo --headless | head`) ends quietly, as Unix tools
    // do, rather than as a crash.
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.contains("Broken pipe") {
            std::process::exit(0);
        }
        report(info);
    }));
    let code = harrow::cli::main();
    // Stopped by SIGTERM or SIGHUP (the work saved, the terminal given back): say so in the
    // status, as a shell would.
    match harrow::signals::received() {
        Some(number) => ExitCode::from(harrow::signals::exit_status(number)),
        None => code,
    }
}
