//! harrow: a harness that runs a long coding-agent loop over a feature plan, and the terminal
//! console from which a person watches and steers it.
//!
//! The session folder is the single source of truth ([`session`]); everything a person sees is
//! derived from it.

pub mod agent;
pub mod brain;
pub mod cli;
pub mod config;
pub mod console;
pub mod export;
pub mod hands;
pub mod harness;
pub mod keys;
pub mod prep;
pub mod printable;
pub mod remembered;
pub mod safe_io;
pub mod session;
pub mod ship;
pub mod signals;
