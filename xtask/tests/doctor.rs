//! `cargo xtask doctor` on this machine (which .ci/run set up), and with one
//! prerequisite hidden from PATH: it names the item and the command that installs it.

use std::path::Path;
use std::process::Command;

mod common;

fn doctor(path: Option<&Path>, args: &[&str]) -> (bool, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_xtask"));
    cmd.arg("doctor").args(args);
    if let Some(p) = path {
        cmd.env("PATH", p);
    }
    let out = cmd.output().unwrap();
    let text = format!("{}{}", common::stdout(&out), String::from_utf8_lossy(&out.stderr));
    eprintln!("{text}");
    (out.status.success(), text)
}

/// A PATH with every program of the real one except `hidden`.
fn path_without(hidden: &str, dir: &Path) {
    for entry in std::env::split_paths(&std::env::var_os("PATH").unwrap()) {
        let Ok(list) = std::fs::read_dir(&entry) else { continue };
        for f in list.flatten() {
            let link = dir.join(f.file_name());
            if f.file_name() != hidden && !link.exists() {
                std::os::unix::fs::symlink(f.path(), link).unwrap();
            }
        }
    }
}

#[test]
fn doctor_passes_here_and_names_the_fix_for_a_hidden_prerequisite() {
    common::require_podman();
    let (ok, text) = doctor(None, &[]);
    assert!(ok, "{text}");
    assert!(text.contains("ok   engine") && text.contains("ready:"), "{text}");
    let seccomp = text.lines().find(|l| l.starts_with("ok   seccomp profile")).expect("the seccomp profile is checked");
    assert!(seccomp.contains("/usr/share/containers/seccomp.json"), "{seccomp}");

    let tmp = tempfile::tempdir().unwrap();
    path_without("mmdebstrap", tmp.path());
    let (ok, text) = doctor(Some(tmp.path()), &[]);
    assert!(!ok);
    let line = text.lines().position(|l| l.starts_with("MISS mmdebstrap")).expect("mmdebstrap is reported missing");
    assert!(text.lines().nth(line + 1).unwrap().contains("fix: apt-get install --no-install-recommends mmdebstrap"));
    assert!(text.contains("1 prerequisite(s) missing"), "{text}");

    // The foreign architecture adds its own prerequisites.
    let tmp = tempfile::tempdir().unwrap();
    path_without("arch-test", tmp.path());
    let (ok, text) = doctor(Some(tmp.path()), &["--arch", "aarch64"]);
    assert!(!ok);
    assert!(text.contains("fix: apt-get install --no-install-recommends arch-test"), "{text}");
}
