//! Shared by the end-to-end tests: run the built xtask binary and read its evidence.
#![allow(dead_code)]

use std::path::Path;

pub mod fixture;
use std::process::{Command, Output};

/// Run `xtask args...` (with `NGCC_CACHE` when given), echoing its output for failures.
/// Commands that use the container engine need podman (see [`require_podman`]).
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

/// End-to-end tests need a working podman: say so in one line, naming the doctor.
pub fn require_podman() {
    let ok = Command::new("podman").args(["--runtime", "runc", "info"]).output().is_ok_and(|o| o.status.success());
    assert!(ok, "podman does not work here: `cargo xtask doctor` lists what to install");
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `<out>/local/kat/<id>/summary.json`.
pub fn summary(out: &Path, id: &str) -> serde_json::Value {
    let path = out.join("local/kat").join(id).join("summary.json");
    serde_json::from_str(&std::fs::read_to_string(&path).expect("summary.json")).unwrap()
}

pub fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}
