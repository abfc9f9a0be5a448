//! Facts about the project itself: the module layering, the README's commands, the deploy
//! manifests and the install script.

mod deploy;
mod install;
mod module_graph;
mod readme;
