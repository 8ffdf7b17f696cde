//! The layer rule of `src/` (CONTRIBUTING.md): the library's top-level modules form a stack, and
//! a module's code may name (`crate::…`) only the modules below it. That rules out import cycles
//! between them and upward imports. Unit tests (`#[cfg(test)] mod tests` and `tests.rs`) and
//! comments are not counted: a test may build its fixtures with anything.
//!
//! Within a folder, the files may not import each other in a cycle either
//! ([`no_cycles_between_files`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The library's top-level modules, lowest first. A new module must be placed here.
const LAYERS: &[&str] = &[
    "math",
    "mesh",
    "file",
    "body",
    "constraints",
    "collide",
    "garment",
    "neural",
    "solver",
    "paint",
    "io",
    "preset",
    "scene",
    "bake",
    "train",
    "sew",
    "cusick",
    "app",
];

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The code of a file without its comments and its unit tests: lines from a top-level
/// `#[cfg(test)]` on are dropped (the crate keeps its tests at the end of each file).
fn code_of(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        if line.starts_with("#[cfg(test)]") {
            break;
        }
        let code = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// The `crate::` paths a piece of code names, each as its segments (`crate::a::b::C` gives
/// `["a", "b", "C"]`), including those inside `use crate::{a::x, b}` groups.
fn crate_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().next_back();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // `my_crate::`, not this crate
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let segs = segments(item.trim());
                if !segs.is_empty() {
                    out.push(segs);
                }
            }
        } else {
            out.push(segments(rest));
        }
    }
    out
}

/// The leading `a::b::c` identifiers of `s`.
fn segments(s: &str) -> Vec<String> {
    let mut segs = Vec::new();
    let mut rest = s;
    loop {
        let len = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if len == 0 {
            break;
        }
        segs.push(rest[..len].to_string());
        match rest[len..].strip_prefix("::") {
            Some(r) if !r.starts_with('{') => rest = r,
            _ => break,
        }
    }
    segs
}

/// The module path of a source file relative to `src/` (`solver/levels.rs` is
/// `["solver", "levels"]`, `solver/mod.rs` is `["solver"]`).
fn module_of(rel: &Path) -> Vec<String> {
    let mut segs: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if segs.last().is_some_and(|s| s == "mod") {
        segs.pop();
    }
    segs
}

/// The library's files (not the binary's `main.rs` and `cli/`, not `lib.rs`, not unit-test
/// files) with their module paths and code.
fn library_sources() -> Vec<(Vec<String>, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    rust_files(&src)
        .into_iter()
        .filter_map(|p| {
            let rel = p.strip_prefix(&src).unwrap().to_path_buf();
            let module = module_of(&rel);
            let skip = matches!(module[0].as_str(), "main" | "lib" | "cli")
                || module.last().is_some_and(|m| m == "tests");
            (!skip).then(|| (module, code_of(&std::fs::read_to_string(&p).unwrap())))
        })
        .collect()
}

/// Every import of a top-level module from another that breaks the layer order, as
/// `"file module -> used module (crate::path)"`; also every top-level module missing from
/// `layers`.
fn layer_violations(sources: &[(Vec<String>, String)], layers: &[&str]) -> Vec<String> {
    let rank = |m: &str| layers.iter().position(|l| *l == m);
    let mut out = BTreeSet::new();
    for (module, code) in sources {
        let Some(own) = rank(&module[0]) else {
            out.insert(format!("{}: not in LAYERS", module[0]));
            continue;
        };
        for path in crate_paths(code) {
            let used = &path[0];
            if used == &module[0] || used == "VERSION" {
                continue;
            }
            match rank(used) {
                Some(r) if r < own => {}
                _ => {
                    out.insert(format!(
                        "{} -> {} (crate::{})",
                        module.join("::"),
                        used,
                        path.join("::")
                    ));
                }
            }
        }
    }
    out.into_iter().collect()
}

#[test]
fn top_level_modules_import_only_lower_layers() {
    let violations = layer_violations(&library_sources(), LAYERS);
    assert!(
        violations.is_empty(),
        "imports that break the layer order (lowest first: {}):\n  {}",
        LAYERS.join(" < "),
        violations.join("\n  ")
    );
}

/// The checker itself: an upward import and an unplaced module are found, a downward one is not.
#[test]
fn the_layer_check_finds_an_upward_import() {
    let sources = vec![
        (
            vec!["mesh".to_string()],
            "use crate::math::Vec3;".to_string(),
        ),
        (
            vec!["math".to_string()],
            code_of("fn f() { crate::mesh::shapes::grid(); } // crate::solver in a comment"),
        ),
        (
            vec!["extra".to_string()],
            "use crate::{math::Real, mesh};".to_string(),
        ),
    ];
    let v = layer_violations(&sources, &["math", "mesh"]);
    assert_eq!(
        v,
        vec![
            "extra: not in LAYERS".to_string(),
            "math -> mesh (crate::mesh::shapes::grid)".to_string()
        ]
    );
    assert_eq!(
        crate_paths("use crate::{a::b, c};"),
        vec![
            vec!["a".to_string(), "b".to_string()],
            vec!["c".to_string()]
        ]
    );
}

/// The file-level import graph: module path → the module paths (files) its code names.
fn file_graph(sources: &[(Vec<String>, String)]) -> BTreeMap<String, BTreeSet<String>> {
    let files: BTreeSet<String> = sources.iter().map(|(m, _)| m.join("::")).collect();
    let mut graph = BTreeMap::new();
    for (module, code) in sources {
        let me = module.join("::");
        let mut deps = BTreeSet::new();
        for path in crate_paths(code) {
            // The longest prefix of the path that is a file.
            if let Some(file) = (1..=path.len())
                .rev()
                .map(|n| path[..n].join("::"))
                .find(|p| files.contains(p))
            {
                if file != me {
                    deps.insert(file);
                }
            }
        }
        // `super::x` names a sibling (or the parent) file.
        if module.len() > 1 {
            let parent = module[..module.len() - 1].join("::");
            let mut rest = code.as_str();
            while let Some(i) = rest.find("super::") {
                rest = &rest[i + "super::".len()..];
                let segs = segments(rest);
                let sibling = segs.first().map(|s| format!("{parent}::{s}"));
                match sibling {
                    Some(s) if files.contains(&s) && s != me => deps.insert(s),
                    _ if parent != me => deps.insert(parent.clone()),
                    _ => false,
                };
            }
        }
        graph.insert(me, deps);
    }
    graph
}

/// A cycle of the graph, if it has one.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    // 0 unvisited, 1 on the stack, 2 done.
    fn visit(
        n: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for d in graph.get(n).into_iter().flatten() {
            match state.get(d.as_str()).copied().unwrap_or(0) {
                1 => {
                    let start = stack.iter().position(|s| s == d).unwrap();
                    let mut cycle = stack[start..].to_vec();
                    cycle.push(d.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(d, graph, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in graph.keys() {
        if state.get(n.as_str()).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(n, graph, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

/// No two files import each other, directly or around a loop (a folder's `mod.rs` may re-export
/// its children, so an edge from a parent to its own child is not counted).
#[test]
fn no_cycles_between_files() {
    let mut graph = file_graph(&library_sources());
    for (file, deps) in graph.iter_mut() {
        deps.retain(|d| !d.starts_with(&format!("{file}::")));
    }
    if let Some(cycle) = find_cycle(&graph) {
        panic!("import cycle between files: {}", cycle.join(" -> "));
    }
}
