//! Fails when a method of a forwarded trait, in the Burn version this crate builds against, is
//! not forwarded explicitly. A missing method would compile (most have default bodies) but
//! silently replace `B`'s kernel with Burn's generic fallback.
//!
//! The trait definitions are read from burn-backend's own source, located through
//! `cargo metadata`; the impls from this crate's source files.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// (file under burn-backend/src, trait, file under this crate's src, impl header fragment)
const TRAITS: &[(&str, &str, &str, &str)] = &[
    (
        "backend/ops/tensor.rs",
        "FloatTensorOps",
        "ops/float_tensor.rs",
        "impl<B: Backend> FloatTensorOps<Self>",
    ),
    (
        "backend/ops/int_tensor.rs",
        "IntTensorOps",
        "ops/int_tensor.rs",
        "impl<B: Backend> IntTensorOps<Self>",
    ),
    (
        "backend/ops/bool_tensor.rs",
        "BoolTensorOps",
        "ops/bool_tensor.rs",
        "impl<B: Backend> BoolTensorOps<Self>",
    ),
    (
        "backend/ops/modules/base.rs",
        "ModuleOps",
        "ops/module.rs",
        "impl<B: Backend> ModuleOps<Self>",
    ),
    (
        "backend/ops/activation.rs",
        "ActivationOps",
        "ops/activation.rs",
        "impl<B: Backend> ActivationOps<Self>",
    ),
    (
        "backend/ops/qtensor.rs",
        "QTensorOps",
        "ops/qtensor.rs",
        "impl<B: Backend> QTensorOps<Self>",
    ),
    (
        "backend/ops/transaction.rs",
        "TransactionOps",
        "ops/transaction.rs",
        "impl<B: Backend> TransactionOps<Self>",
    ),
    (
        "backend/base.rs",
        "Backend",
        "backend.rs",
        "impl<B: Backend> Backend for",
    ),
    (
        "backend/base.rs",
        "AutodiffBackend",
        "backend.rs",
        "impl<B: AutodiffBackend> AutodiffBackend for",
    ),
    (
        "backend/distributed/ops.rs",
        "DistributedBackend",
        "distributed.rs",
        "impl<B: DistributedBackend> DistributedBackend for",
    ),
];

/// burn-backend's `src/`: the copy cargo unpacked into its registry for the build (version from
/// the workspace's Cargo.lock), else wherever `cargo metadata` says. The registry comes first
/// because `cargo metadata --offline` needs every package of the lock file downloaded, including
/// other platforms' dependencies that a Linux build never fetches (e.g. clap's anstyle-wincon).
fn burn_backend_src() -> PathBuf {
    registry_copy().unwrap_or_else(metadata_copy)
}

fn registry_copy() -> Option<PathBuf> {
    let lock = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.lock");
    let lock = std::fs::read_to_string(lock).ok()?;
    let version = lock
        .split("[[package]]")
        .find(|p| p.contains("name = \"burn-backend\"\n"))?
        .lines()
        .find_map(|l| l.strip_prefix("version = \""))?
        .trim_end_matches('"')
        .to_string();
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    std::fs::read_dir(home.join("registry/src"))
        .ok()?
        .flatten()
        .map(|index| index.path().join(format!("burn-backend-{version}/src")))
        .find(|src| src.is_dir())
}

fn metadata_copy() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--offline",
            "--manifest-path",
        ])
        .arg(&manifest)
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("cargo metadata JSON");
    let burn = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "burn" && p["version"] == "0.21.0")
        .expect("burn 0.21.0 in the dependency graph");
    let _ = burn;
    let backend = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "burn-backend")
        .expect("burn-backend in the dependency graph");
    Path::new(backend["manifest_path"].as_str().unwrap())
        .parent()
        .unwrap()
        .join("src")
}

/// Names of the `fn`s declared directly inside the block that starts at the first line
/// containing `header` (rustfmt layout: items at 4 spaces, block closed by `}` at column 0).
fn block_fns(text: &str, header: &str) -> BTreeSet<String> {
    let mut lines = text.lines().skip_while(|l| !l.contains(header));
    assert!(lines.next().is_some(), "block `{header}` not found");
    let mut names = BTreeSet::new();
    for line in lines {
        if line == "}" {
            break;
        }
        let Some(rest) = line.strip_prefix("    ") else {
            continue;
        };
        let rest = rest
            .trim_start_matches("async ")
            .trim_start_matches("unsafe ");
        if let Some(sig) = rest.strip_prefix("fn ") {
            let name: String = sig
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            names.insert(name);
        }
    }
    names
}

#[test]
fn every_method_of_every_forwarded_trait_is_implemented() {
    let src = burn_backend_src();
    let ours = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut report = Vec::new();
    let mut total = 0;
    for (theirs, trait_name, mine, impl_header) in TRAITS {
        let trait_text = std::fs::read_to_string(src.join(theirs)).unwrap();
        let header = match *trait_name {
            "Backend" => "pub trait Backend:".to_string(),
            "AutodiffBackend" => "pub trait AutodiffBackend: Backend".to_string(),
            "DistributedBackend" => "pub trait DistributedBackend: Backend".to_string(),
            generic => format!("pub trait {generic}<B: Backend>"),
        };
        let required = block_fns(&trait_text, &header);
        let impl_text = std::fs::read_to_string(ours.join(mine)).unwrap();
        let implemented = block_fns(&impl_text, impl_header);
        assert!(
            !required.is_empty(),
            "no methods parsed from trait {trait_name}"
        );
        total += required.len();
        for missing in required.difference(&implemented) {
            report.push(format!(
                "{trait_name}::{missing} is not forwarded (src/{mine})"
            ));
        }
        for extra in implemented.difference(&required) {
            report.push(format!(
                "{trait_name}::{extra} is implemented but not in the trait"
            ));
        }
    }
    assert!(
        report.is_empty(),
        "forwarding incomplete:\n{}",
        report.join("\n")
    );
    // Burn 0.21.0 has 124 + 104 + 39 + 56 + 14 + 80 + 1 ops methods, plus Backend's own.
    assert!(
        total >= 418,
        "parsed only {total} methods: the parser lost track of the source"
    );
}

#[test]
fn block_parser_sees_a_missing_method() {
    let trait_text = "pub trait T<B: Backend> {\n    fn a();\n    fn b() {\n        x\n    }\n}\n";
    let impl_text = "impl<B: Backend> T<Self> for D<B> {\n    fn a() {}\n}\n";
    let required = block_fns(trait_text, "pub trait T");
    let implemented = block_fns(impl_text, "impl<B: Backend> T<Self>");
    let missing: Vec<_> = required.difference(&implemented).collect();
    assert_eq!(missing, vec!["b"]);
}
