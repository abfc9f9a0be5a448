//! The crate's top-level modules, read from the real source: no cycle, and no edge that runs up
//! the layers (DESIGN.md §2). A new `use crate::…` that breaks either fails here, naming it.

// A test whose setup fails should panic there.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each top-level module's layer: a module may use its own layer and those below.
const LAYERS: &[(&str, u8)] = &[
    ("keys", 0),
    ("printable", 0),
    ("signals", 0),
    ("session", 1),
    ("hands", 2),
    ("brain", 2),
    ("harness", 3),
    ("config", 3),
    ("prep", 4),
    ("export", 4),
    ("ship", 4),
    ("console", 4),
    ("cli", 5),
];

fn layer(module: &str) -> u8 {
    LAYERS.iter().find(|(m, _)| *m == module).map_or_else(
        || panic!("src/{module} is not placed in a layer: add it to LAYERS (and DESIGN.md)"),
        |(_, l)| *l,
    )
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module → the top-level modules its code (tests and comments left out) names
/// through `crate::`.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap();
        let top = rel.components().next().unwrap().as_os_str().to_string_lossy();
        let top = top.trim_end_matches(".rs").to_owned();
        if top == "main" || top == "lib" {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        let deps = graph.entry(top.clone()).or_default();
        for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
            for (i, _) in line.match_indices("crate::") {
                let rest = &line[i + "crate::".len()..];
                let module: String =
                    rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if !module.is_empty() && module != top {
                    deps.insert(module);
                }
            }
        }
    }
    graph
}

#[test]
fn no_module_uses_one_above_its_layer() {
    let graph = graph();
    assert!(graph.len() >= LAYERS.len(), "read the crate: {graph:?}");
    let mut wrong = Vec::new();
    for (module, deps) in &graph {
        for dep in deps {
            if layer(dep) > layer(module) {
                wrong.push(format!(
                    "{module} (layer {}) uses {dep} (layer {})",
                    layer(module),
                    layer(dep)
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "edges up the layers:\n{}", wrong.join("\n"));
}

// Depth-first, with colours: a node met again while still open closes a cycle.
fn visit(
    node: &str,
    graph: &BTreeMap<String, BTreeSet<String>>,
    open: &mut Vec<String>,
    done: &mut BTreeSet<String>,
) {
    if done.contains(node) {
        return;
    }
    if let Some(at) = open.iter().position(|n| n == node) {
        panic!("the modules use each other in a cycle: {} → {node}", open[at..].join(" → "));
    }
    open.push(node.to_owned());
    for dep in graph.get(node).into_iter().flatten() {
        visit(dep, graph, open, done);
    }
    open.pop();
    done.insert(node.to_owned());
}

#[test]
fn the_modules_form_no_cycle() {
    let graph = graph();
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        visit(node, &graph, &mut Vec::new(), &mut done);
    }
}
