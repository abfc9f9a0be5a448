//! The console's modules import each other without a cycle, and none reaches into the
//! harness: the console reads the session, nothing more.

// A test whose setup fails should panic there.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};

/// Every file of the console's modules: its module (a file `x.rs`, or a folder `x/`), its text
/// and how deep it sits (0 for `x.rs` and `x/mod.rs`, 1 for `x/y.rs`).
fn console_files() -> Vec<(String, String, usize)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/console");
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            for inner in std::fs::read_dir(&path).unwrap() {
                let inner = inner.unwrap().path();
                // Rust files only: a module's folder may hold its snapshots.
                if inner.extension().is_none_or(|e| e != "rs") {
                    continue;
                }
                let depth = usize::from(inner.file_name().is_some_and(|n| n != "mod.rs"));
                files.push((name.clone(), std::fs::read_to_string(&inner).unwrap(), depth));
            }
        } else if name != "mod" {
            files.push((name, std::fs::read_to_string(&path).unwrap(), 0));
        }
    }
    files
}

fn console_imports() -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (name, text, depth) in console_files() {
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        let deps = graph.entry(name.clone()).or_default();
        // The console's own modules, as a file at this depth names them.
        let prefixes = if depth == 0 {
            ["super::", "crate::console::"]
        } else {
            ["super::super::", "crate::console::"]
        };
        for prefix in prefixes {
            for (i, _) in code.match_indices(prefix) {
                let rest = &code[i + prefix.len()..];
                let module: String =
                    rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if !module.is_empty() && module != name && module != "super" {
                    deps.insert(module);
                } else if let Some(inside) = rest.strip_prefix('{') {
                    let group: String = inside.chars().take_while(|c| *c != '}').collect();
                    for item in group.split(',') {
                        let module = item.trim().split("::").next().unwrap_or("").to_owned();
                        if !module.is_empty() && module != name {
                            deps.insert(module);
                        }
                    }
                }
            }
        }
    }
    graph
}

// Depth-first search with colours; a grey node met again is a cycle.
fn visit(
    node: &str,
    graph: &BTreeMap<String, BTreeSet<String>>,
    state: &mut BTreeMap<String, u8>,
    path: &mut Vec<String>,
) {
    match state.get(node) {
        Some(2) => return,
        Some(1) => {
            panic!("the console's modules import in a cycle: {} → {node}", path.join(" → "))
        }
        _ => {}
    }
    state.insert(node.to_owned(), 1);
    path.push(node.to_owned());
    for dep in graph.get(node).into_iter().flatten() {
        visit(dep, graph, state, path);
    }
    path.pop();
    state.insert(node.to_owned(), 2);
}

#[test]
fn console_modules_form_no_cycle() {
    let graph = console_imports();
    assert!(graph.len() > 10, "read the console's modules: {graph:?}");
    let mut state = BTreeMap::new();
    for node in graph.keys() {
        visit(node, &graph, &mut state, &mut Vec::new());
    }
}

#[test]
fn the_console_imports_nothing_from_the_harness() {
    for (name, text, _) in console_files() {
        assert!(!text.contains("harness::"), "src/console/{name} reaches into the harness");
    }
}

#[test]
fn the_app_stays_small() {
    let app = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/console/app/mod.rs");
    let lines = std::fs::read_to_string(app).unwrap().lines().count();
    assert!(lines < 600, "src/console/app/mod.rs has {lines} lines; give a job its own module");
}
