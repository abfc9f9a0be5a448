//! The crate's top-level modules, read from the real source as Rust: no cycle, and no edge that
//! runs up the layers (DESIGN.md §2). The crate is walked from `src/lib.rs` the way the
//! compiler walks it (`mod x;` → `x.rs` or `x/mod.rs`, `#[path]` honoured), every file parsed
//! whole with `syn`; what sits under `#[cfg(test)]` is left out by its attribute, not by where it
//! stands. Every way code names another module counts: `use` trees however grouped, nested or
//! re-exported, paths in types and expressions, `crate::`, `self::`, `super::super::`, and paths
//! inside macro bodies (`$crate::` included). The self-test plants each form in a file's text
//! and holds the check to finding it.

// A test whose setup fails should panic there.
#![allow(clippy::unwrap_used)]

use proc_macro2::{TokenStream, TokenTree};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// Each top-level module's layer: a module may use its own layer and those below.
const LAYERS: &[(&str, u8)] = &[
    ("keys", 0),
    ("printable", 0),
    ("remembered", 0),
    ("safe_io", 0),
    ("signals", 0),
    ("session", 1),
    ("hands", 2),
    ("brain", 2),
    ("agent", 2),
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

/// Top-level module → the top-level modules it names, each with the first place it does.
type Graph = BTreeMap<String, BTreeMap<String, String>>;

/// Whether an item's attributes make it test-only: `#[cfg(test)]`, or `test` among the
/// conditions of `all(…)`. `cfg(not(test))` and `cfg(any(test, …))` code is compiled outside
/// tests, so it counts.
fn test_only(attrs: &[syn::Attribute]) -> bool {
    fn needs_test(meta: &syn::Meta) -> bool {
        match meta {
            syn::Meta::Path(p) => p.is_ident("test"),
            syn::Meta::List(list) if list.path.is_ident("all") => list
                .parse_args_with(
                    syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated,
                )
                .is_ok_and(|inner| inner.iter().any(needs_test)),
            _ => false,
        }
    }
    attrs
        .iter()
        .filter(|a| a.path().is_ident("cfg"))
        .any(|a| a.parse_args::<syn::Meta>().is_ok_and(|m| needs_test(&m)))
}

/// The `#[path = "…"]` of a `mod x;`, if any.
fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find(|a| a.path().is_ident("path")).and_then(|a| match &a.meta {
        syn::Meta::NameValue(nv) => match &nv.value {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

/// What one file says: the crate-relative paths it names (resolved to absolute module paths)
/// and the `mod x;` declarations whose files the walk reads next.
struct FileReader {
    /// The module the code being read is in (grows inside inline `mod x { … }`).
    module: Vec<String>,
    named: Vec<(Vec<String>, usize)>,
    children: Vec<(Vec<String>, Option<String>)>,
}

impl FileReader {
    /// Resolves a path that starts at `crate`, `self` or `super` to one from the crate root;
    /// any other path (a local name, an outside crate) is not a module edge.
    fn resolve(&self, segments: &[String]) -> Option<Vec<String>> {
        let mut at = self.module.clone();
        let mut rest = segments;
        match rest.first().map(String::as_str) {
            Some("crate") => {
                at.clear();
                rest = &rest[1..];
            }
            Some("self") => rest = &rest[1..],
            Some("super") => {}
            _ => return None,
        }
        while rest.first().is_some_and(|s| s == "super") {
            at.pop();
            rest = &rest[1..];
        }
        at.extend(rest.iter().cloned());
        Some(at)
    }

    fn name(&mut self, segments: &[String], line: usize) {
        if let Some(path) = self.resolve(segments) {
            self.named.push((path, line));
        }
    }

    /// Every leaf of a `use` tree, as the full path it imports.
    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => self.leaf(prefix, &n.ident),
            syn::UseTree::Rename(r) => self.leaf(prefix, &r.ident),
            syn::UseTree::Glob(g) => {
                let line = g.star_token.spans[0].start().line;
                let path = prefix.clone();
                self.name(&path, line);
            }
            syn::UseTree::Group(g) => {
                for item in &g.items {
                    self.use_tree(prefix, item);
                }
            }
        }
    }

    fn leaf(&mut self, prefix: &[String], ident: &syn::Ident) {
        let mut path = prefix.to_vec();
        if ident != "self" {
            path.push(ident.to_string());
        }
        self.name(&path, ident.span().start().line);
    }

    /// Paths in a macro's tokens: `crate :: a`, `$crate :: a`, `super :: super :: a`, at any
    /// depth of brackets.
    fn tokens(&mut self, stream: TokenStream) {
        let tokens: Vec<TokenTree> = stream.into_iter().collect();
        let mut i = 0;
        while i < tokens.len() {
            if let TokenTree::Group(g) = &tokens[i] {
                self.tokens(g.stream());
                i += 1;
                continue;
            }
            let starts = matches!(&tokens[i], TokenTree::Ident(id) if id == "crate" || id == "super" || id == "self");
            if !starts {
                i += 1;
                continue;
            }
            let line = tokens[i].span().start().line;
            let mut path = Vec::new();
            let mut j = i;
            while let Some(TokenTree::Ident(id)) = tokens.get(j) {
                path.push(id.to_string());
                let colons = matches!(
                    (tokens.get(j + 1), tokens.get(j + 2)),
                    (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b))) if a.as_char() == ':' && b.as_char() == ':'
                );
                if !colons {
                    break;
                }
                j += 3;
            }
            if path.len() > 1 {
                self.name(&path, line);
            }
            i = j.max(i + 1);
        }
    }
}

fn attrs_of(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::ExternCrate(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::ForeignMod(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::TraitAlias(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Union(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

fn impl_attrs_of(item: &syn::ImplItem) -> &[syn::Attribute] {
    match item {
        syn::ImplItem::Const(i) => &i.attrs,
        syn::ImplItem::Fn(i) => &i.attrs,
        syn::ImplItem::Type(i) => &i.attrs,
        syn::ImplItem::Macro(i) => &i.attrs,
        _ => &[],
    }
}

impl<'ast> Visit<'ast> for FileReader {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !test_only(attrs_of(item)) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        if !test_only(impl_attrs_of(item)) {
            syn::visit::visit_impl_item(self, item);
        }
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        let mut module = self.module.clone();
        module.push(item.ident.to_string());
        match &item.content {
            Some((_, items)) => {
                let outer = std::mem::replace(&mut self.module, module);
                for inner in items {
                    self.visit_item(inner);
                }
                self.module = outer;
            }
            None => self.children.push((module, path_attr(&item.attrs))),
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        if item.leading_colon.is_none() {
            self.use_tree(&mut Vec::new(), &item.tree);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() {
            let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
            let line = path.segments.first().map_or(0, |s| s.ident.span().start().line);
            self.name(&segments, line);
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.tokens(mac.tokens.clone());
        syn::visit::visit_macro(self, mac);
    }
}

/// The file a `mod` declaration in `parent` loads, as rustc finds it.
fn module_file(parent: &Path, module: &[String], path: Option<&str>) -> PathBuf {
    let dir = parent.parent().unwrap();
    let owns_dir = parent.file_name().is_some_and(|n| n == "mod.rs" || n == "lib.rs");
    let base = if owns_dir { dir.to_path_buf() } else { dir.join(parent.file_stem().unwrap()) };
    if let Some(path) = path {
        return base.join(path);
    }
    let name = module.last().unwrap();
    let flat = base.join(format!("{name}.rs"));
    if flat.exists() { flat } else { base.join(name).join("mod.rs") }
}

/// What one file names and which files it declares as modules.
type FileFacts = (Vec<(Vec<String>, usize)>, Vec<(Vec<String>, Option<String>)>);

fn read_file(file: &Path, module: &[String], text: &str) -> FileFacts {
    let ast =
        syn::parse_file(text).unwrap_or_else(|e| panic!("{}: does not parse: {e}", file.display()));
    let mut reader =
        FileReader { module: module.to_vec(), named: Vec::new(), children: Vec::new() };
    reader.visit_file(&ast);
    (reader.named, reader.children)
}

/// A file of the real crate, parsed once for every test of this module.
fn cached(file: &Path, module: &[String]) -> FileFacts {
    static READ: std::sync::Mutex<BTreeMap<PathBuf, FileFacts>> =
        std::sync::Mutex::new(BTreeMap::new());
    if let Some(facts) = READ.lock().unwrap().get(file) {
        return facts.clone();
    }
    let text = std::fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("{}: {e} (a `mod` names a missing file)", file.display()));
    let facts = read_file(file, module, &text);
    READ.lock().unwrap().insert(file.to_path_buf(), facts.clone());
    facts
}

/// Reads the crate under `src` from its `lib.rs`, module by module.
fn graph(src: &Path) -> Graph {
    graph_with(src, &BTreeMap::new())
}

/// [`graph`], with some files' text replaced (a path relative to `src` → the text read).
fn graph_with(src: &Path, planted: &BTreeMap<PathBuf, String>) -> Graph {
    let crate_files = walk(src, planted);
    let roots: BTreeSet<&String> = crate_files.iter().filter_map(|f| f.module.first()).collect();
    let mut graph = Graph::new();
    for file in &crate_files {
        let Some(top) = file.module.first() else { continue };
        graph.entry(top.clone()).or_default();
        for (path, line) in &file.named {
            if let Some(dep) = path.first().filter(|d| roots.contains(d) && *d != top) {
                let at = format!("src/{}:{line}", file.rel);
                graph.get_mut(top).unwrap().entry(dep.clone()).or_insert(at);
            }
        }
    }
    graph
}

/// One file of the crate: its module path, where it is, and every path it names.
struct CrateFile {
    module: Vec<String>,
    rel: String,
    named: Vec<(Vec<String>, usize)>,
}

/// Every file of the crate under `src`, from its `lib.rs`, module by module.
fn walk(src: &Path, planted: &BTreeMap<PathBuf, String>) -> Vec<CrateFile> {
    let mut files = Vec::new();
    let mut queue = vec![(src.join("lib.rs"), Vec::<String>::new())];
    while let Some((file, module)) = queue.pop() {
        let planted_text = file.strip_prefix(src).ok().and_then(|rel| planted.get(rel));
        let (named, children) = match planted_text {
            Some(text) => read_file(&file, &module, text),
            None => cached(&file, &module),
        };
        for (child, path) in children {
            queue.push((module_file(&file, &child, path.as_deref()), child));
        }
        let rel = file.strip_prefix(src).unwrap_or(&file).display().to_string();
        files.push(CrateFile { module, rel, named });
    }
    files
}

/// Which files use which, by the paths they name: an edge from each file to the file that
/// defines the module a path goes through, its own ancestors and descendants left out (a
/// `mod.rs` and its children are one folder's face and rooms, as `farm-studio look` draws
/// them).
fn file_graph(files: &[CrateFile]) -> Graph {
    let by_module: BTreeMap<&[String], &str> =
        files.iter().map(|f| (f.module.as_slice(), f.rel.as_str())).collect();
    let mut graph = Graph::new();
    for file in files {
        let edges = graph.entry(file.rel.clone()).or_default();
        for (path, line) in &file.named {
            let owner =
                (1..=path.len()).rev().find_map(|n| by_module.get(&path[..n]).map(|r| (n, *r)));
            let Some((n, rel)) = owner else { continue };
            let related =
                path[..n].starts_with(&file.module) || file.module.starts_with(&path[..n]);
            if !related {
                edges.entry(rel.to_owned()).or_insert_with(|| format!("src/{}:{line}", file.rel));
            }
        }
    }
    graph
}

/// Every edge that runs up the layers, one line each with where it is.
fn upward_edges(graph: &Graph) -> Vec<String> {
    let mut wrong = Vec::new();
    for (module, deps) in graph {
        for (dep, at) in deps {
            if layer(dep) > layer(module) {
                wrong.push(format!(
                    "{module} (layer {}) uses {dep} (layer {}) at {at}",
                    layer(module),
                    layer(dep)
                ));
            }
        }
    }
    wrong
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn no_module_uses_one_above_its_layer() {
    let graph = graph(&src());
    assert!(graph.len() >= LAYERS.len(), "read the crate: {graph:?}");
    let wrong = upward_edges(&graph);
    assert!(wrong.is_empty(), "edges up the layers:\n{}", wrong.join("\n"));
}

// Depth-first, with colours: a node met again while still open closes a cycle.
fn visit(node: &str, graph: &Graph, open: &mut Vec<String>, done: &mut BTreeSet<String>) {
    if done.contains(node) {
        return;
    }
    if let Some(at) = open.iter().position(|n| n == node) {
        panic!("these use each other in a cycle: {} → {node}", open[at..].join(" → "));
    }
    open.push(node.to_owned());
    for dep in graph.get(node).into_iter().flat_map(BTreeMap::keys) {
        visit(dep, graph, open, done);
    }
    open.pop();
    done.insert(node.to_owned());
}

#[test]
fn the_modules_form_no_cycle() {
    let graph = graph(&src());
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        visit(node, &graph, &mut Vec::new(), &mut done);
    }
}

/// Inside a module too, no two files use each other, however far round: a circle of files is
/// a type or a constant in the wrong one. A circle planted in two files is found.
#[test]
fn the_files_form_no_circle() {
    let src = src();
    let graph = file_graph(&walk(&src, &BTreeMap::new()));
    assert!(graph.len() > 100, "read the crate's files: {}", graph.len());
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        visit(node, &graph, &mut Vec::new(), &mut done);
    }
    let planted = BTreeMap::from([(
        PathBuf::from("brain/estimate.rs"),
        std::fs::read_to_string(src.join("brain/estimate.rs")).unwrap()
            + "\nfn planted() { let _ = super::client::Role::Worker; }\n",
    )]);
    let graph = file_graph(&walk(&src, &planted));
    let found = std::panic::catch_unwind(|| {
        let mut done = BTreeSet::new();
        for node in graph.keys() {
            visit(node, &graph, &mut Vec::new(), &mut done);
        }
    });
    assert!(found.is_err(), "a circle through brain/estimate.rs and brain/client.rs went unseen");
}

/// Each way of naming a module up the layers, planted in the text of a file of `src/`, is found and named
/// with its file; the same forms under `#[cfg(test)]` are not.
#[test]
fn the_check_finds_every_form_of_an_upward_edge() {
    let plants: &[(&str, &str, &str)] = &[
        (
            "after a test module",
            "hands/mod.rs",
            "\n#[cfg(test)]\nmod planted_tests {}\nuse crate::console as planted;\n",
        ),
        ("a grouped use", "session/mod.rs", "\nuse crate::{keys, harness::plan as planted};\n"),
        ("a nested group", "session/mod.rs", "\nuse crate::{keys::{self}, cli::{run::{Start}}};\n"),
        ("super::super", "hands/lanes.rs", "\nuse super::super::cli as planted;\n"),
        ("a pub use", "session/event.rs", "\npub use crate::brain as planted;\n"),
        ("a glob", "brain/mod.rs", "\nuse crate::harness::*;\n"),
        ("a path in code", "hands/mod.rs", "\nfn planted() { let _ = crate::ship::push; }\n"),
        ("a path in a type", "keys.rs", "\nfn planted(_: &crate::session::SessionDir) {}\n"),
        (
            "self:: from the root file of a module",
            "session/mod.rs",
            "\nfn planted() { self::super::hands::x(); }\n",
        ),
        (
            "a macro body",
            "session/mod.rs",
            "\nmacro_rules! planted { () => { $crate::console::x() }; }\n",
        ),
        (
            "an inline module",
            "hands/mod.rs",
            "\nmod planted { use super::super::harness::plan; }\n",
        ),
        ("an impl item", "keys.rs", "\nstruct P;\nimpl P { fn f() { crate::session::x(); } }\n"),
    ];
    let src = src();
    let with = |file: &str, code: &str| {
        let text = std::fs::read_to_string(src.join(file)).unwrap() + code;
        graph_with(&src, &BTreeMap::from([(PathBuf::from(file), text)]))
    };
    assert!(upward_edges(&graph(&src)).is_empty(), "the crate itself is clean");
    for (form, file, code) in plants {
        let wrong = upward_edges(&with(file, code));
        assert!(
            wrong.iter().any(|w| w.contains(&format!("src/{file}:"))),
            "{form} planted in src/{file} went unseen: {wrong:?}"
        );
    }
    let hidden = with(
        "session/mod.rs",
        "\n#[cfg(test)]\nuse crate::cli;\n#[cfg(all(test, unix))]\nmod more { use crate::console; }\n",
    );
    assert!(upward_edges(&hidden).is_empty(), "test-only code may use any layer");
}
