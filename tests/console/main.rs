//! The console: panes snapshot-tested with `TestBackend`, a vt100-parsed terminal, and the real
//! binary in a private tmux.

// A test whose setup fails should panic there, helpers included.
#![allow(clippy::unwrap_used)]

#[path = "../support/acp.rs"]
mod acp;
#[path = "../support/loop_fixture.rs"]
mod loop_fixture;
#[path = "../support/sessions.rs"]
mod sessions;
#[path = "../support/summary.rs"]
mod summary;
#[path = "../support/mod.rs"]
mod support;
#[path = "../support/tmux.rs"]
mod tmux;
#[path = "../support/tools.rs"]
mod tools;

mod console;
mod console_modules;
mod console_tmux;
mod console_vt100;
mod fleet_tmux;
