//! The harness: the Ralph loop over a plan's tasks, the worker's inner tool loop, the
//! case → validators → verdict exchange, the gate that owns every task state transition,
//! memory across attempts, caps, and resume.

pub mod case;
pub mod gate;
pub mod learnings;
pub mod memory;
pub mod plan;
pub mod record;
pub mod resume;
pub mod run;
pub mod turns;
pub mod urgent;
pub mod verdict;
