//! Sizes a newcomer can read: no file in `src/` over 1,000 lines and no function (free, in an
//! `impl` or a trait, tests included) over 150, measured on the parsed source from the
//! function's first line (its attributes and doc comment left out) to its closing brace.

// A test whose setup fails should panic there.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use syn::spanned::Spanned;
use syn::visit::Visit;

const MAX_FILE_LINES: usize = 1_000;
const MAX_FN_LINES: usize = 150;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every function of one file longer than the limit, as `name (N lines) at FILE:LINE`.
struct LongFunctions<'a> {
    file: &'a str,
    long: Vec<String>,
}

impl LongFunctions<'_> {
    fn measure(&mut self, name: &syn::Ident, sig: &syn::Signature, block: &syn::Block) {
        let first = sig.span().start().line;
        let last = block.span().end().line;
        let lines = last + 1 - first;
        if lines > MAX_FN_LINES {
            self.long.push(format!("{name} ({lines} lines) at {}:{first}", self.file));
        }
    }
}

impl<'ast> Visit<'ast> for LongFunctions<'_> {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.measure(&f.sig.ident, &f.sig, &f.block);
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.measure(&f.sig.ident, &f.sig, &f.block);
        syn::visit::visit_impl_item_fn(self, f);
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(block) = &f.default {
            self.measure(&f.sig.ident, &f.sig, block);
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}

fn src_files() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files.sort();
    assert!(files.len() > 50, "read the crate: {files:?}");
    files
        .into_iter()
        .map(|f| {
            let rel = f.strip_prefix(root).unwrap().display().to_string();
            (rel, std::fs::read_to_string(&f).unwrap())
        })
        .collect()
}

#[test]
fn no_file_in_src_is_over_a_thousand_lines() {
    let long: Vec<String> = src_files()
        .into_iter()
        .filter(|(_, text)| text.lines().count() > MAX_FILE_LINES)
        .map(|(file, text)| format!("{file}: {} lines", text.lines().count()))
        .collect();
    assert!(long.is_empty(), "files over {MAX_FILE_LINES} lines:\n{}", long.join("\n"));
}

#[test]
fn no_function_in_src_is_over_150_lines() {
    let mut long = Vec::new();
    for (file, text) in src_files() {
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        let mut reader = LongFunctions { file: &file, long: Vec::new() };
        reader.visit_file(&ast);
        long.extend(reader.long);
    }
    assert!(long.is_empty(), "functions over {MAX_FN_LINES} lines:\n{}", long.join("\n"));
}

/// The measure itself: a function one line over the limit is caught, one at it is not.
#[test]
fn the_measure_counts_from_the_signature_to_the_closing_brace() {
    let body = |n: usize| "    let _ = 1;\n".repeat(n);
    for (inner, caught) in [(MAX_FN_LINES - 2, false), (MAX_FN_LINES - 1, true)] {
        let text = format!("/// doc\n#[inline]\nfn f() {{\n{}}}\n", body(inner));
        let ast = syn::parse_file(&text).unwrap();
        let mut reader = LongFunctions { file: "x.rs", long: Vec::new() };
        reader.visit_file(&ast);
        assert_eq!(!reader.long.is_empty(), caught, "{inner} body lines: {:?}", reader.long);
    }
}
