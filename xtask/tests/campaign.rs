//! `cargo xtask campaign`: the default submission end to end, progress lines, and
//! --resume skipping exactly the steps whose evidence still matches the index; a key
//! exchange campaign on its fixture.

mod common;

use common::{stdout, xtask};
use xtask::evidence::schema::{CampaignReport, CtRecord, CtStatus};

#[test]
fn campaign_runs_the_default_and_resumes_from_indexed_evidence() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    // Verify steps take three instances at a time (--jobs); timing stays one at a time.
    let o = out.to_str().unwrap();
    let args = ["campaign", "--engine", "podman", "--out", o, "--quick", "--allow-unfixed-host", "--jobs", "3"];
    let first = xtask(&args, None);
    assert!(first.status.success());
    let text = stdout(&first);
    let steps = [
        "[1/6] image",
        "[2/6] verify pqclean-ml-kem",
        "[3/6] bench pqclean-ml-kem",
        "[4/6] profile pqclean-ml-kem",
        "[5/6] ct pqclean-ml-kem",
        "[6/6] sanitize pqclean-ml-kem",
    ];
    for step in steps {
        assert!(text.contains(&format!("{step}: done in")), "{step}\n{text}");
    }
    assert!(text.contains("s left"));
    assert!(out.join("local/records/pqclean-ml-kem/ML-KEM-1024__dec.json").is_file());
    assert!(out.join("local/profile/pqclean-ml-kem/survey.json").is_file());
    assert!(out.join("local/ct/pqclean-ml-kem/ML-KEM-768__dec.json").is_file());
    // ML-KEM's keygen expands ρ (public, in the public key) from the secret DRNG output:
    // its rejection sampling is listed as public by design (the manifest's
    // `ct_public_derived`), not a finding, and the page says so.
    for label in ["ML-KEM-512", "ML-KEM-768", "ML-KEM-1024"] {
        let path = out.join(format!("local/ct/pqclean-ml-kem/{label}__keygen.json"));
        let keygen: CtRecord = xtask::evidence::schema::read(camino::Utf8Path::from_path(&path).unwrap())
            .unwrap()
            .unwrap_or_else(|| panic!("{label}: no keygen ct record"));
        assert_eq!(keygen.status, CtStatus::NoneFound, "{label}: {:?}", keygen.findings);
        assert!(keygen.public_derived.iter().any(|f| f.at.function.contains("rej_uniform")), "{label}");
        assert!(keygen.declassified.iter().any(|d| d.contains("gen_matrix")), "{label}: {:?}", keygen.declassified);
    }

    // One record lost (an interrupted bench): --resume times that one alone and keeps
    // the other eight. Resumed under --json: stdout is the run report alone.
    let records = out.join("local/records/pqclean-ml-kem");
    let started = |name: &str| common::record(&out, "pqclean-ml-kem", "ML-KEM-512", name).started;
    let kept_before = started("keygen");
    std::fs::remove_file(records.join("ML-KEM-768__enc.json")).unwrap();
    let resumed = xtask(&[&args[..], &["--resume", "--json"]].concat(), None);
    assert!(resumed.status.success());
    let text = String::from_utf8_lossy(&resumed.stderr);
    for step in [steps[1], steps[3], steps[4], steps[5]] {
        assert!(text.contains(&format!("{step}: evidence present and indexed, skipped")), "{text}");
    }
    assert_eq!(text.matches("kept (--resume)").count(), 8, "{text}");
    assert_eq!(started("keygen"), kept_before, "a kept record is not timed again");
    assert!(records.join("ML-KEM-768__enc.json").is_file(), "the lost record is timed again");
    let report: CampaignReport = serde_json::from_slice(&resumed.stdout).expect("campaign --json");
    let outcomes: Vec<(&str, &str)> = report.steps.iter().map(|s| (s.step.as_str(), s.outcome.as_str())).collect();
    assert_eq!(
        outcomes,
        [
            ("image", "done"),
            ("verify pqclean-ml-kem", "kept"),
            ("bench pqclean-ml-kem", "done"),
            ("profile pqclean-ml-kem", "kept"),
            ("ct pqclean-ml-kem", "kept"),
            ("sanitize pqclean-ml-kem", "kept")
        ]
    );
    assert!(!report.tool_failure);
    let check = xtask(&["evidence", "check", out.to_str().unwrap()], None);
    assert!(check.status.success(), "the resumed bench re-indexed its evidence");

    // Evidence that no longer matches the index is not trusted: that step runs again.
    let log = out.join("local/kat/pqclean-ml-kem/ML-KEM-512.log");
    let mut bytes = std::fs::read(&log).unwrap();
    bytes[0] ^= 1;
    std::fs::write(&log, bytes).unwrap();
    let again = xtask(&[&args[..], &["--resume", "--no-bench", "--no-ct", "--no-sanitize"]].concat(), None);
    assert!(again.status.success());
    let text = stdout(&again);
    assert!(text.contains("[2/2] verify pqclean-ml-kem: done in"), "{text}");
    let check = xtask(&["evidence", "check", out.to_str().unwrap()], None);
    assert!(check.status.success(), "the re-run restored and re-indexed the evidence");
}

/// A key exchange through every step: each instance is timed over its own passes, and
/// `--resume` knows that a 0-pass instance has no pass to time.
#[test]
fn a_key_exchange_campaign_times_each_instances_passes_and_resumes() {
    use common::kex_fixture as kex;
    let tmp = tempfile::tempdir().unwrap();
    let insts = kex::subset(&["kex-p0", "kex-p4"]);
    let (_, zip) = kex::write_archive(tmp.path(), &insts);
    let m = kex::manifest_dir(&tmp.path().join("m"), &zip, &insts);
    let out = tmp.path().join("out");
    let (m, o, z) = (m.to_str().unwrap(), out.to_str().unwrap(), zip.to_str().unwrap());
    let base = ["campaign", m, "--engine", "podman", "--out", o, "--archive", z, "--quick", "--allow-unfixed-host"];
    // Sanitizer builds have their own test (sanitize_fixture.rs).
    let args = [&base[..], &["--jobs", "2", "--no-sanitize"]].concat();
    let first = xtask(&args, None);
    assert!(first.status.success());
    let text = stdout(&first);
    let steps =
        ["[2/5] verify fixture-kex", "[3/5] bench fixture-kex", "[4/5] profile fixture-kex", "[5/5] ct fixture-kex"];
    for step in steps {
        assert!(text.contains(&format!("{step}: done in")), "{step}\n{text}");
    }
    assert!(out.join("local/ct/fixture-kex/kex-p4__passes.json").is_file());
    let records = out.join("local/records/fixture-kex");
    assert!(records.join("kex-p4__pass4.json").is_file() && records.join("kex-p0__derive_b.json").is_file());
    assert!(!records.join("kex-p0__pass1.json").exists(), "a 0-pass instance has no pass");
    assert!(out.join("local/profile/fixture-kex/kex-p4__exchange.json").is_file());
    let resumed = xtask(&[&args[..], &["--resume"]].concat(), None);
    assert!(resumed.status.success());
    let text = stdout(&resumed);
    for step in steps {
        assert!(text.contains(&format!("{step}: evidence present and indexed, skipped")), "{step}\n{text}");
    }
}
