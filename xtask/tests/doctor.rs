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

/// Doctor's timing lines on this machine (no engine needed): the counter bench will read,
/// never "cycles" beside a TSC, and whether bench's host gate lets it time here, with the
/// flag that overrides it; the last line says both again.
#[test]
fn doctor_says_what_bench_reads_and_whether_this_host_is_fixed() {
    use camino::Utf8Path;
    use xtask::flags::Arch;
    let (ok, text) = doctor(None, &["--engine", "host"]);
    assert!(ok, "neither timing line is required: {text}");
    assert!(!text.contains("bench reads cycles"), "{text}");
    let counter = text.lines().find(|l| l.contains(" counter ")).expect("a counter line");
    let reads = ["CPU cycles (perf_event_open)", "the TSC (ticks", "CNTVCT_EL0 (the generic timer"]
        .into_iter()
        .filter(|r| counter.contains(&format!("bench reads {r}")))
        .count();
    assert_eq!(reads, 1, "one counter named: {counter}");
    assert_eq!(counter.starts_with("ok   "), counter.contains("CPU cycles"), "{counter}");
    let gate = xtask::measure::hostgate::check(Utf8Path::new("/"), None, Arch::host());
    let host = text.lines().find(|l| l.contains(" timing host ")).expect("a timing host line");
    let ready = text.lines().find(|l| l.starts_with("ready: ")).unwrap();
    if gate.failed().is_empty() {
        assert!(host.starts_with("ok   ") && host.contains("fixed: bench's host gate passes"), "{host}");
        assert!(ready.ends_with("times on this host as it is (fixed)"), "{ready}");
    } else {
        assert!(host.starts_with("warn ") && host.contains("unless you pass --allow-unfixed-host"), "{host}");
        for c in gate.failed() {
            assert!(host.contains(&c.detail), "every failed check is named: {}\n{host}", c.detail);
        }
        assert!(ready.ends_with("times on this unfixed host only with --allow-unfixed-host"), "{ready}");
    }
    let said = counter.split("bench reads ").nth(1).unwrap().split(": ").next().unwrap();
    assert!(ready.contains(&format!("bench reads {said}")), "{said} / {ready}");

    // A missing prerequisite is the doctor's finding: exit 1, as documented.
    let empty = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["doctor", "--engine", "host"])
        .env("PATH", empty.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(common::stdout(&out).contains("MISS patch"), "{}", common::stdout(&out));
}
