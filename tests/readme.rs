//! The README is the crates' front page: short, with the two commands, and every Rust snippet
//! compiled. The crates' own READMEs and `docs/` pages are doctests of their crates
//! (`#[doc = include_str!(..)]`); the repository README's snippets must be copies of those, so
//! that what a reader copies is what CI compiled. Nothing in the documentation cites sessions or
//! issues, which a reader outside this repository cannot look up.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The fenced blocks of `markdown` whose info string starts with `rust`, without the fences.
fn rust_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match (&mut current, line.trim_start().strip_prefix("```")) {
            (None, Some(info)) if info.starts_with("rust") => current = Some(String::new()),
            (None, Some(_)) => current = Some("\u{0}not rust".into()),
            (Some(block), Some(_)) => {
                if !block.starts_with('\u{0}') {
                    blocks.push(block.clone());
                }
                current = None;
            }
            (Some(block), None) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(current.is_none(), "an unclosed code fence");
    blocks
}

#[test]
fn the_readme_is_a_front_page() {
    let readme = read(&root().join("README.md"));
    let lines = readme.lines().count();
    assert!(lines <= 200, "README.md has {lines} lines, more than 200");
    for needle in [
        "cargo add burn-deterministic",
        "cargo run --example segmentation",
        "cargo test --workspace",
        "## License",
    ] {
        assert!(readme.contains(needle), "README.md lacks `{needle}`");
    }
    // `.ci/run` runs the README's test command.
    let command = readme
        .lines()
        .find(|line| line.starts_with("cargo test --workspace"))
        .expect("the test command");
    let ci = read(&root().join(".ci/run"));
    for half in command.split(" && ") {
        assert!(ci.contains(half), ".ci/run does not run `{half}`");
    }
}

#[test]
fn every_readme_snippet_is_a_compiled_doctest() {
    let readme = read(&root().join("README.md"));
    let compiled: String = ["burn-deterministic", "burn-deterministic-tensor"]
        .iter()
        .map(|krate| read(&root().join("crates").join(krate).join("README.md")))
        .collect();
    let blocks = rust_blocks(&readme);
    assert!(blocks.len() >= 3, "found {} Rust snippets", blocks.len());
    for block in blocks {
        assert!(
            compiled.contains(&block),
            "this README snippet is not a crate README's (doctested) snippet:\n{block}"
        );
    }
    // The crate READMEs and docs pages with snippets are included as doctests.
    let includes = [
        ("crates/burn-deterministic/src/lib.rs", "../README.md"),
        (
            "crates/burn-deterministic/src/lib.rs",
            "docs/configuration.md",
        ),
        (
            "crates/burn-deterministic-tensor/src/lib.rs",
            "../README.md",
        ),
        (
            "crates/burn-deterministic-tensor/src/lib.rs",
            "docs/burn-0.22.md",
        ),
    ];
    for (source, page) in includes {
        let source_text = read(&root().join(source));
        assert!(
            source_text.contains(&format!("{page}\")")),
            "{source} does not include {page} as a doctest"
        );
    }
    for page in std::fs::read_dir(root().join("docs")).unwrap() {
        let page = page.unwrap().path();
        if page.extension().is_some_and(|e| e == "md") && !rust_blocks(&read(&page)).is_empty() {
            let name = format!("docs/{}", page.file_name().unwrap().to_string_lossy());
            assert!(
                includes.iter().any(|(_, included)| *included == name),
                "{name} has Rust snippets but is not a doctest of any crate"
            );
        }
    }
}

/// The documentation a user reads: README, CONTRIBUTING, the crates' READMEs, `docs/`,
/// `examples/README.md`, and the library crates' sources (rustdoc).
fn documentation() -> Vec<PathBuf> {
    let mut files = vec![
        root().join("README.md"),
        root().join("CONTRIBUTING.md"),
        root().join("examples/README.md"),
    ];
    let mut dirs = vec![root().join("docs")];
    for krate in [
        "burn-deterministic",
        "burn-deterministic-core",
        "burn-deterministic-tensor",
    ] {
        files.push(root().join("crates").join(krate).join("README.md"));
        dirs.push(root().join("crates").join(krate).join("src"));
    }
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md" || e == "rs") {
                files.push(path);
            }
        }
    }
    files
}

#[test]
fn no_session_or_issue_numbers_in_the_documentation() {
    let files = documentation();
    assert!(files.len() > 20, "found only {} files", files.len());
    for path in files {
        let text = read(&path).to_lowercase();
        for word in ["session", "issue"] {
            for (at, _) in text.match_indices(word) {
                let rest = text[at + word.len()..].trim_start_matches([' ', 's', '#']);
                assert!(
                    !rest.starts_with(|c: char| c.is_ascii_digit()),
                    "{}: cites a{} number: {}",
                    path.display(),
                    if word == "issue" {
                        "n issue"
                    } else {
                        " session"
                    },
                    &text[at..(at + 30).min(text.len())]
                );
            }
        }
    }
}

#[test]
fn local_links_in_the_documentation_resolve() {
    let pages = [
        "README.md",
        "CONTRIBUTING.md",
        "examples/README.md",
        "docs/design.md",
        "docs/determinism.md",
        "docs/accuracy.md",
        "docs/benchmarks.md",
        "docs/burn-0.22.md",
        "docs/configuration.md",
    ];
    for page in pages {
        let path = root().join(page);
        let text = read(&path);
        for (at, _) in text.match_indices("](") {
            let target = &text[at + 2..];
            let target = &target[..target.find(')').expect("a closed link")];
            if target.starts_with("http") || target.starts_with('#') {
                continue;
            }
            let file = target.split('#').next().unwrap();
            let resolved = path.parent().unwrap().join(file);
            assert!(resolved.exists(), "{page}: broken link {target}");
        }
    }
}
