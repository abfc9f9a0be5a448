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
    // Only a panic, which is a bug, gets color-eyre's report with its backtrace. An error is
    // printed as one line that names the file and the fix, never with a backtrace, so eyre's
    // own handler keeps it: color-eyre's resolves a backtrace at every error made while
    // `RUST_BACKTRACE` is set, whether or not it is printed (0.5 s of CPU per error in a debug
    // build, 20 ms in a release one; 30 s of the CLI test suite's CPU).
    let (panic_report, _) = HookBuilder::default().theme(theme).into_hooks();
    panic_report.install();
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
