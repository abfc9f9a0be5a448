//! Writes a realistic generated session folder, for benchmarks and for trying the console on a
//! large log: `cargo run --release --example gen-session -- 100000 /tmp/big [tilth|harrow] [SEED]`.

use harrow::session::synth::{Dialect, write_session};
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(n), Some(dir)) = (args.first().and_then(|n| n.parse::<u64>().ok()), args.get(1))
    else {
        eprintln!("usage: gen-session EVENTS DIR [tilth|harrow] [SEED]");
        return ExitCode::from(2);
    };
    let dialect = match args.get(2).map(String::as_str) {
        None | Some("harrow") => Dialect::Harrow,
        Some("tilth") => Dialect::Tilth,
        Some(other) => {
            eprintln!("gen-session: unknown dialect '{other}' (use tilth or harrow)");
            return ExitCode::from(2);
        }
    };
    let seed = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1);
    let dir = PathBuf::from(dir);
    match write_session(&dir, n, dialect, seed) {
        Ok(log) => {
            let bytes = std::fs::metadata(&log).map_or(0, |m| m.len());
            println!("{n} events, {bytes} bytes in {}", log.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gen-session: {}: {e}", dir.display());
            ExitCode::FAILURE
        }
    }
}
