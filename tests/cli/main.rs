//! The real binary, verb by verb: runs, resumes, control, decisions, lanes, the fleet's data,
//! export and shipping to real bare repositories and scripted forges.

// A test whose setup fails should panic there, helpers included.
#![allow(clippy::unwrap_used)]

#[path = "../support/acp.rs"]
mod acp;
#[path = "../support/forge.rs"]
mod forge;
#[path = "../support/git_http.rs"]
mod git_http;
#[path = "../support/loop_fixture.rs"]
mod loop_fixture;
#[path = "../support/responses.rs"]
mod responses;
#[path = "../support/summary.rs"]
mod summary;
#[path = "../support/mod.rs"]
mod support;
#[path = "../support/tmux.rs"]
mod tmux;
#[path = "../support/tools.rs"]
mod tools;

mod agents;
mod best_of;
mod cli_control;
mod cli_resume;
mod cli_run;
mod cli_sessions;
mod cli_workspace;
mod compaction;
mod decisions;
mod demo;
mod evidence;
mod export;
mod fallback;
mod fleet;
mod lanes;
mod lanes_operator;
mod local_server;
mod rejudge;
mod review;
mod rewind;
mod scale_out;
mod ship;
mod ship_ssh;
mod small_window;
mod stats;
mod steer;
mod window;
