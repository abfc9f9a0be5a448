//! The console's modules import each other without a cycle, and none reaches into the
//! harness: the console reads the session, nothing more.

// A test whose setup fails should panic there.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};

fn console_imports() -> BTreeMap<String, BTreeSet<String>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/console");
    let mut graph = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if name == "mod" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        let mut deps = BTreeSet::new();
        for (i, _) in code.match_indices("super::") {
            let rest = &code[i + "super::".len()..];
            let module: String =
                rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if !module.is_empty() && module != name {
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
        graph.insert(name, deps);
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
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/console");
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("harness::"), "{} reaches into the harness", path.display());
    }
}

#[test]
fn the_app_stays_small() {
    let app = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/console/app.rs");
    let lines = std::fs::read_to_string(app).unwrap().lines().count();
    assert!(lines < 600, "src/console/app.rs has {lines} lines; give a job its own module");
}
