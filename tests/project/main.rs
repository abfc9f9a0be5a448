//! Facts about the project itself: the module layering, the README's commands, the deploy
//! manifests and the install script.

// A test whose setup fails should panic there, helpers included.
#![allow(clippy::unwrap_used)]

#[path = "../support/git_http.rs"]
mod git_http;
#[path = "../support/mod.rs"]
mod support;
#[path = "../support/tools.rs"]
mod tools;

mod deploy;
mod install;
mod log_words;
mod module_graph;
mod readme;
mod sizes;
