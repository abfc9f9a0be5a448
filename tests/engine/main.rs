//! The library's parts against real processes, real git and scripted HTTP model servers: the
//! model client, the worker's hands and their sandbox, the gate, plans, the loop, and hostile input.

// A test whose setup fails should panic there, helpers included.
#![allow(clippy::unwrap_used)]

#[path = "../support/loop_fixture.rs"]
mod loop_fixture;
#[path = "../support/mod.rs"]
mod support;
#[path = "../support/tools.rs"]
mod tools;

mod brain;
mod gate;
mod hands;
mod hostile;
mod hostile_server;
mod moved;
mod parallel_fold;
mod plans;
mod prep;
mod run_loop;
mod tilth_summary;
