//! `cargo xtask cycles`: the import circles between the files of each crate.
//!
//! Every `.rs` file of a crate's `src/` is a module (`a/b.rs` and `a/b/mod.rs` are `a::b`).
//! A file depends on another when it names it: a `use` (groups expanded) or a path in its code
//! that starts with `crate::`, `super::` or `self::` and leads into the other file's module
//! (the longest module the path names; a module's own descendants and ancestors do not count).
//! Test modules (`#[cfg(test)]`) and comments are left out. The strongly connected components
//! of that graph with more than one file are the circles.
//!
//! The files of a circle cannot be read, tested or changed one at a time: shared types belong
//! below their users. The command fails on any circle that [`KNOWN`] does not allow (none), so
//! that none comes back (`cargo xtask test` runs it), and prints which files of a circle import
//! which.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use syn::visit::Visit;

use crate::util::workspace_root;

/// Circles allowed for now, per crate, while one is being taken apart (ARCHITECTURE.md says
/// why each is there): one passes while its files are among these. None is left; a circle
/// that a change must go through in steps is listed here until its last step lands.
const KNOWN: &[(&str, &[&str])] = &[];

/// A crate's files as modules: module path -> file.
fn modules(src: &Path) -> Result<BTreeMap<String, PathBuf>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in
            std::fs::read_dir(&dir).with_context(|| format!("cannot read {}", dir.display()))?
        {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path
                .strip_prefix(src)
                .expect("under src")
                .with_extension("");
            let mut parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(
                parts.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                parts.pop();
            }
            out.insert(parts.join("::"), path);
        }
    }
    Ok(out)
}

/// The paths a file names (`crate::`, `super::`, `self::`), outside test modules.
#[derive(Default)]
struct Paths {
    found: Vec<Vec<String>>,
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let mut path = prefix.clone();
            path.push(n.ident.to_string());
            out.push(path);
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.clone();
            path.push(r.ident.to_string());
            out.push(path);
        }
        syn::UseTree::Glob(_) => out.push(prefix.clone()),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_paths(t, prefix, out);
            }
        }
    }
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_cfg_test(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_cfg_test(&f.attrs) {
            syn::visit::visit_item_fn(self, f);
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        if !is_cfg_test(&u.attrs) {
            use_paths(&u.tree, &mut Vec::new(), &mut self.found);
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        self.found
            .push(p.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, p);
    }
}

/// The module `path` (as written in module `from`) leads into, if it names one of `modules`.
fn target(from: &str, path: &[String], modules: &BTreeMap<String, PathBuf>) -> Option<String> {
    let mut base: Vec<&str> = if from.is_empty() {
        Vec::new()
    } else {
        from.split("::").collect()
    };
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("super" | "self") => {
            while let Some(first) = rest.first() {
                match first.as_str() {
                    "super" => {
                        base.pop();
                    }
                    "self" => {}
                    _ => break,
                }
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    (0..=rest.len()).rev().find_map(|k| {
        let mut candidate: Vec<&str> = base.clone();
        candidate.extend(rest[..k].iter().map(String::as_str));
        let name = candidate.join("::");
        modules.contains_key(&name).then_some(name)
    })
}

fn related(a: &str, b: &str) -> bool {
    a == b
        || a.is_empty()
        || b.is_empty()
        || a.starts_with(&format!("{b}::"))
        || b.starts_with(&format!("{a}::"))
}

/// A crate's circles (each a sorted list of modules) and, for each module, the modules it names.
type Circles = (Vec<Vec<String>>, BTreeMap<String, BTreeSet<String>>);

/// The circles of one crate, with the import graph they were found in.
fn circles(src: &Path) -> Result<Circles> {
    let modules = modules(src)?;
    let mut edges: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for (module, file) in &modules {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        let parsed =
            syn::parse_file(&text).with_context(|| format!("cannot parse {}", file.display()))?;
        let mut paths = Paths::default();
        paths.visit_file(&parsed);
        let out = edges.entry(module).or_default();
        for p in &paths.found {
            if let Some(t) = target(module, p, &modules)
                && !related(module, &t)
            {
                out.insert(t);
            }
        }
    }
    // Tarjan's strongly connected components.
    struct State<'a> {
        edges: &'a BTreeMap<&'a str, BTreeSet<String>>,
        index: BTreeMap<String, usize>,
        low: BTreeMap<String, usize>,
        stack: Vec<String>,
        on: BTreeSet<String>,
        next: usize,
        found: Vec<Vec<String>>,
    }
    fn visit(s: &mut State<'_>, v: &str) {
        s.index.insert(v.to_string(), s.next);
        s.low.insert(v.to_string(), s.next);
        s.next += 1;
        s.stack.push(v.to_string());
        s.on.insert(v.to_string());
        let targets: Vec<String> = s
            .edges
            .get(v)
            .map(|e| e.iter().cloned().collect())
            .unwrap_or_default();
        for w in &targets {
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if s.on.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(&w);
                let done = w == v;
                component.push(w);
                if done {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut state = State {
        edges: &edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        found: Vec::new(),
    };
    for module in modules.keys() {
        if !state.index.contains_key(module) {
            visit(&mut state, module);
        }
    }
    state.found.sort();
    let graph = edges
        .iter()
        .map(|(m, t)| (m.to_string(), t.clone()))
        .collect();
    Ok((state.found, graph))
}

/// Prints every crate's circles; fails on one that [`KNOWN`] does not list, or that grew.
pub fn run() -> Result<()> {
    let crates = workspace_root().join("crates");
    let mut names: Vec<String> = std::fs::read_dir(&crates)?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("src").is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut unknown = Vec::new();
    for name in &names {
        let (found, graph) = circles(&crates.join(name).join("src"))?;
        if found.is_empty() {
            println!("cycles: {name}: none");
        }
        for circle in &found {
            let known = KNOWN.iter().any(|(krate, files)| {
                krate == name && circle.iter().all(|m| files.contains(&m.as_str()))
            });
            println!(
                "cycles: {name}: {} files in a circle{}: {}",
                circle.len(),
                if known { " (known)" } else { "" },
                circle.join(", ")
            );
            // What holds the circle together: each file's imports of the others.
            for module in circle {
                let inside: Vec<&str> = graph[module]
                    .iter()
                    .filter(|t| circle.contains(t))
                    .map(String::as_str)
                    .collect();
                println!("    {module} -> {}", inside.join(", "));
            }
            if !known {
                unknown.push(format!("{name}: {}", circle.join(", ")));
            }
        }
    }
    if !unknown.is_empty() {
        bail!(
            "import circles between files that are not known ones (shared types go below their users):\n  {}",
            unknown.join("\n  ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, file: &str, text: &str) {
        let path = dir.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn a_circle_through_a_grouped_use_or_a_path_is_found_and_tests_are_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path();
        write(src, "lib.rs", "mod a;\nmod b;\nmod c;\nmod d;\n");
        // a -> b through a group, b -> a through a path in code.
        write(src, "a.rs", "use crate::{b::B, c};\npub struct A;\n");
        write(
            src,
            "b/mod.rs",
            "pub struct B;\nfn f() -> super::a::A { crate::a::A }\n",
        );
        // c -> d, and d -> c only in its tests: no circle.
        write(src, "c.rs", "use super::d::D;\n");
        write(
            src,
            "d.rs",
            "pub struct D;\n#[cfg(test)]\nmod tests { use crate::c; }\n",
        );
        let (found, _) = circles(src).unwrap();
        assert_eq!(found, [vec!["a".to_string(), "b".to_string()]]);
    }
}
