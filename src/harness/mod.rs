//! The harness: the Ralph loop over a plan's tasks, the worker's inner tool loop, the
//! case → validators → verdict exchange, the gate that owns every task state transition,
//! memory across attempts, caps, and resume.

pub mod case;
pub(crate) mod choice;
pub mod compact;
pub(crate) mod conversation;
pub mod evidence;
pub(crate) mod gate;
pub(crate) mod graph;
pub(crate) mod learnings;
pub(crate) mod memory;
pub mod operator_review;
pub mod plan;
pub mod plan_copy;
pub(crate) mod record;
pub(crate) mod rejudge;
pub(crate) mod resume;
pub mod rewind;
pub mod run;
pub(crate) mod task_record;
pub(crate) mod turns;
pub mod verdict;
