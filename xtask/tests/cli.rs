//! The command line as a user meets it: where the project is found, what relative paths
//! mean, and what runs when no submission is named. No container needed.

use std::process::Command;

mod common;

fn xtask_in(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_xtask")).args(args).current_dir(dir).output().unwrap();
    eprintln!("{}{}", common::stdout(&out), String::from_utf8_lossy(&out.stderr));
    out
}

#[test]
fn a_binary_outside_its_checkout_refuses_to_run() {
    let tmp = tempfile::tempdir().unwrap();
    let moved = tmp.path().join("xtask");
    // The copy is made by a child process: a write descriptor held by this process would
    // be inherited by every child another test thread forks meanwhile, and running the
    // copy would then fail with ETXTBSY ("Text file busy").
    let cp = Command::new("cp").arg("--").arg(env!("CARGO_BIN_EXE_xtask")).arg(&moved).status().unwrap();
    assert!(cp.success(), "cp: {cp}");
    let out = Command::new(&moved).arg("list").env_remove("CARGO_MANIFEST_DIR").output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot find the ngcc-repro checkout"), "{err}");
    // In place (a target folder inside the checkout), the binary finds its checkout by
    // its own location.
    let checkout = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    if std::path::Path::new(env!("CARGO_BIN_EXE_xtask")).starts_with(checkout) {
        let out =
            Command::new(env!("CARGO_BIN_EXE_xtask")).arg("list").env_remove("CARGO_MANIFEST_DIR").output().unwrap();
        assert!(out.status.success());
    }
}

#[test]
fn relative_paths_are_the_callers() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("out/local")).unwrap();
    std::fs::write(tmp.path().join("out/local/a.json"), "{}").unwrap();
    assert!(xtask_in(tmp.path(), &["evidence", "index"]).status.success());
    assert!(tmp.path().join("out/EVIDENCE.sha256").is_file(), "the default `out` is the caller's");
    assert!(xtask_in(tmp.path(), &["evidence", "check", "out"]).status.success());
    std::fs::write(tmp.path().join("out/local/a.json"), "{\"x\":1}").unwrap();
    let changed = xtask_in(tmp.path(), &["evidence", "check", "out"]);
    assert!(!changed.status.success());
    assert!(common::stdout(&changed).contains("changed  local/a.json"));
}

#[test]
fn without_ids_the_system_profiles_campaign_set_is_taken() {
    let tmp = tempfile::tempdir().unwrap();
    // x86_1's set is the three NGCC candidates; their archives are not here, and the
    // first missing one is named before any container work.
    let out = xtask_in(tmp.path(), &["verify", "--system", "x86_1"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("kem-03") && err.contains("BAG-Loong.zip"), "{err}");
    let out = xtask_in(tmp.path(), &["bench", "--arch", "aarch64", "--system", "arm_1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("required"), "the design-card form is accepted as typed: {err}");
}

#[test]
fn campaign_takes_sources_per_submission() {
    let tmp = tempfile::tempdir().unwrap();
    let args = ["campaign", "kem-07", "--system", "x86_1", "--engine", "podman", "--no-bench"];
    let out = xtask_in(tmp.path(), &[&args[..], &["--archive", "kem-07=mine/BRQC.zip"]].concat());
    assert!(!out.status.success());
    let text = format!("{}{}", common::stdout(&out), String::from_utf8_lossy(&out.stderr));
    assert!(text.contains(&format!("not found at {}/mine/BRQC.zip", tmp.path().display())), "{text}");
    let out = xtask_in(tmp.path(), &[&args[..], &["--archive", "kem-03=x.zip"]].concat());
    assert!(String::from_utf8_lossy(&out.stderr).contains("kem-03, which is not selected"));
    // The plain form, as verify takes it, when the campaign has one submission.
    let out = xtask_in(tmp.path(), &[&args[..], &["--archive", "BRQC.zip"]].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("not found at {}/BRQC.zip", tmp.path().display())), "{err}");
    let two = ["campaign", "kem-07", "kem-03", "--system", "x86_1", "--engine", "podman", "--archive", "BRQC.zip"];
    let out = xtask_in(tmp.path(), &two);
    assert!(String::from_utf8_lossy(&out.stderr).contains("write ID="), "several submissions: name which");
}

#[test]
fn kat_files_are_checked_against_the_family_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let kem = xtask_in(tmp.path(), &["verify", "pqclean-ml-kem", "--kat-files", "2_12"]);
    let err = String::from_utf8_lossy(&kem.stderr);
    assert_eq!(kem.status.code(), Some(2), "{err}");
    assert!(err.contains("--kat-files 2_12: a KEM writes one KAT file"), "{err}");
    // A hash function's parts, with the nearest one suggested; refused before the
    // archive (not here) is looked for.
    let hash = xtask_in(tmp.path(), &["verify", "hash-01", "--kat-files", "2_12,2_13"]);
    let err = String::from_utf8_lossy(&hash.stderr);
    assert_eq!(hash.status.code(), Some(2), "{err}");
    assert!(err.contains("--kat-files 2_13: a hash function writes the KAT files 2_12, 2_23, 2_33, Loop"), "{err}");
    assert!(!err.contains("AFS-TrEDM.zip"), "{err}");
    // Without the archive, the hash candidate is named with what to give.
    let missing = xtask_in(tmp.path(), &["verify", "hash-01"]);
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(!missing.status.success() && err.contains("AFS-TrEDM.zip"), "{err}");
}
