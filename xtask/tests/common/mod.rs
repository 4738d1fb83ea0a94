//! Shared by the end-to-end tests: run the built xtask binary and read its evidence.
#![allow(dead_code)]

use std::path::Path;

use camino::Utf8Path;
use xtask::evidence::schema::{self, InstanceResult, Record, Summary};
use xtask::evidence::Layout;

pub mod field;
pub mod fixture;
pub mod golden_set;
pub mod hash_fixture;
pub mod kex_fixture;
pub mod real_tree;
pub mod sig_fixture;
use std::process::{Command, Output};

/// Run `xtask args...` (with `NGCC_CACHE` when given), echoing its output for failures.
/// Commands that use the container engine need podman (see [`require_podman`]).
/// The items of a seed page's section 1, in their order.
#[allow(dead_code)]
pub const SEED_ITEMS: [&str; 6] =
    ["Category", "Algorithm", "Implementation versions measured", "Parameter sets", "Measurement method", "Submission"];

pub fn xtask(args: &[&str], cache: Option<&Path>) -> Output {
    if args.contains(&"podman") {
        require_podman();
    }
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_xtask"));
    cmd.args(args);
    if let Some(c) = cache {
        cmd.env("NGCC_CACHE", c);
    }
    let out = cmd.output().expect("run xtask");
    eprintln!("$ xtask {}\n{}{}", args.join(" "), stdout(&out), String::from_utf8_lossy(&out.stderr));
    out
}

/// The cache the tool uses when a test sets no `NGCC_CACHE` of its own: the tool's own
/// rule (`NGCC_CACHE` when the user set it, else `target/ngcc-repro` of the checkout).
pub fn default_cache() -> std::path::PathBuf {
    xtask::project::cache_dir().into_std_path_buf()
}

/// End-to-end tests need a working podman: say so in one line, naming the doctor.
pub fn require_podman() {
    let ok = Command::new("podman").args(["--runtime", "runc", "info"]).output().is_ok_and(|o| o.status.success());
    assert!(ok, "podman does not work here: `cargo xtask doctor` lists what to install");
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The evidence layout of `<out>` for the `local` system.
pub fn layout(out: &Path) -> Layout {
    Layout::new(Utf8Path::from_path(out).expect("UTF-8 test path"), "local")
}

/// `<out>/local/kat/<id>/summary.json`, through the schema the tool writes it with.
pub fn summary(out: &Path, id: &str) -> Summary {
    schema::read(&layout(out).kat_summary(id)).unwrap().expect("summary.json")
}

/// `<out>/local/records/<id>/<label>__<op>.json`.
pub fn record(out: &Path, id: &str, label: &str, op: &str) -> Record {
    schema::read(&layout(out).record(id, label, op)).unwrap().expect("timing record")
}

/// One instance's entry of a summary.
pub fn entry<'a>(s: &'a Summary, label: &str) -> &'a InstanceResult {
    s.instances.iter().find(|i| i.label == label).unwrap_or_else(|| panic!("no entry {label}"))
}

pub fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}
