//! The demo's scripted model standing alone on 127.0.0.1, for trying harrow where another
//! process — a container, a second machine played on this one — must reach the model over
//! the network: `deploy/try-image.sh` points its Jobs at it. It answers the demo's plan
//! (`textstats`, models `harrow-demo/worker` and `harrow-demo/evaluator`) with the demo's
//! pauses, prints its base URL as its first line, and serves until it is stopped.
//! `cargo run --example scripted-model [-- --fast]`

use harrow::brain::scripted::{Options, ScriptedServer, parse_script};
use std::io::Write;
use std::process::ExitCode;

/// The demo's own script, as `harrow demo` serves it.
const SCRIPT: &str = include_str!("../assets/demo/script.json");

fn main() -> ExitCode {
    let fast = std::env::args().skip(1).any(|a| a == "--fast");
    let script = match parse_script(SCRIPT) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("scripted-model: assets/demo/script.json: {e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime =
        match tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build() {
            Ok(r) => r,
            Err(e) => {
                eprintln!("scripted-model: cannot start a runtime: {e}");
                return ExitCode::FAILURE;
            }
        };
    // As the demo does: answer `/props` as a llama.cpp server with a 16k window.
    let options = Options {
        fast,
        props: Some(serde_json::json!({"default_generation_settings": {"n_ctx": 16_384}})),
        ..Options::default()
    };
    let server = match runtime.block_on(ScriptedServer::start_with(script, options)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("scripted-model: cannot listen on 127.0.0.1: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("{}", server.base_url());
    let _ = std::io::stdout().flush();
    runtime.block_on(std::future::pending::<()>());
    ExitCode::SUCCESS
}
