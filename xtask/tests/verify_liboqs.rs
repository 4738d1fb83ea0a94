//! The cmake recipe: liboqs 0.13.0 (from the crate oqs-sys) configured and built with the
//! pinned cmake inside the Debian 13 container, checked against liboqs's own kats.json.

mod common;

use std::collections::BTreeMap;
use std::process::Command;

#[test]
fn liboqs_cmake_recipe_passes_against_kats_json() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let run = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["verify", "liboqs", "--engine", "podman", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    eprintln!("{stdout}{}", String::from_utf8_lossy(&run.stderr));
    assert!(run.status.success());
    assert_eq!(stdout.matches(" PASS ").count(), 3);

    let s = common::summary(&out, "liboqs");
    assert_eq!(s.toolchain.cmake_version, "cmake version 3.31.6");
    let first = &s.instances[0];
    assert_eq!(first.commands[0][0], "cmake");
    assert!(first.commands[0].iter().any(|a| a == "-DCMAKE_C_FLAGS=-O2"));

    // The committed expectations are liboqs's published values, read back from the
    // kats.json inside the very crate the run verified.
    let checksum = s.source.digest();
    let kats_path = common::default_cache()
        .join("sources")
        .join(checksum)
        .join("oqs-sys-0.11.0+liboqs-0.13.0/liboqs/tests/KATs/kem/kats.json");
    // kats.json: algorithm → {"single": digest, ...}.
    let kats: BTreeMap<String, BTreeMap<String, String>> =
        serde_json::from_str(&std::fs::read_to_string(kats_path).unwrap()).unwrap();
    for inst in &s.instances {
        let published = kats.get(&inst.label).and_then(|k| k.get("single")).expect("kats.json entry");
        assert_eq!(inst.expected_sha256.as_ref().unwrap().as_str(), published, "{}", inst.label);
        assert_eq!(inst.actual_sha256.as_ref().unwrap().as_str(), published, "{}", inst.label);
    }
}
