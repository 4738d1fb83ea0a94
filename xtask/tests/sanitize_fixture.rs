//! `sanitize` on fixture instances written for this project: a planted out-of-bounds
//! heap write and a planted signed overflow (`tests/fixture/kem_body.c`, `FIX_OOB`,
//! `FIX_OVERFLOW_INT`), their clean twin, and a hostile one that sets its own runtime
//! options, prints "no errors" and sends stderr to /dev/null before its out-of-bounds
//! write. Expected lines come from the markers in kem_body.c, never from the tool.

mod common;

use std::path::Path;

use common::fixture::{manifest_dir, write_tree, zip_tree, Inst, FIXTURE};
use common::xtask;
use xtask::evidence::schema::{self, SanRunVerdict, SanStatus, SanitizeRecord};

/// Line of `KEM_<label>.c` (kem_body.c after its one `#include` line) with `san-plant: <what>`.
fn planted(what: &str) -> u32 {
    let text = std::fs::read_to_string(Path::new(FIXTURE).join("kem_body.c")).unwrap();
    let n = text.lines().position(|l| l.contains(&format!("san-plant: {what}"))).expect("marker");
    n as u32 + 2
}

fn record(out: &Path, label: &str) -> SanitizeRecord {
    let path = common::layout(out).sanitize("fixture-kem", label);
    schema::read(&path).unwrap().unwrap_or_else(|| panic!("{label}: no record"))
}

#[test]
fn planted_faults_are_named_by_line_and_a_muted_runtime_is_never_clean() {
    let tmp = tempfile::tempdir().unwrap();
    let insts: Vec<Inst> = vec![
        ("san-clean", 16, String::new()),
        ("san-oob", 16, "#define FIX_OOB 1\n".into()),
        ("san-int", 16, "#define FIX_OVERFLOW_INT 1\n".into()),
        ("san-mute", 16, "#define FIX_OOB 1\n#define FIX_SAN_MUTE 1\n".into()),
    ];
    write_tree(&tmp.path().join("tree"), &insts);
    let zip = tmp.path().join("Fixture KEM v1.zip");
    zip_tree(&tmp.path().join("tree"), &zip);
    let m = manifest_dir(&tmp.path().join("m"), &zip, false, &insts);
    let out = tmp.path().join("out");
    let (m, z, o) = (m.to_str().unwrap(), zip.to_str().unwrap(), out.to_str().unwrap());
    let run = xtask(&["sanitize", m, "--archive", z, "--engine", "podman", "--out", o], None);
    assert_eq!(run.status.code(), Some(1), "findings are the command's failure");

    let clean = record(&out, "san-clean");
    assert_eq!(clean.status, SanStatus::Clean, "{:?}", clean.detail);
    let kat = &clean.runs[0];
    assert_eq!((kat.run.as_str(), kat.verdict), ("kat", SanRunVerdict::Clean));
    assert!(kat.expected_sha256.is_some() && kat.expected_sha256 == kat.actual_sha256, "the KAT digest is checked");
    assert!(clean.runs.iter().any(|r| r.run == "replay"), "the replay runs under the sanitizers too");
    assert!(!clean.checks.is_empty() && clean.checks.iter().all(|c| c.holds()));
    assert!(clean.findings.is_empty() && clean.hooks.is_empty(), "{:?}", clean.hooks);

    let oob = record(&out, "san-oob");
    assert_eq!(oob.status, SanStatus::Findings);
    let f = &oob.findings[0];
    assert_eq!((f.sanitizer.as_str(), f.kind.as_str()), ("AddressSanitizer", "heap-buffer-overflow"));
    assert_eq!((f.at.file.as_str(), f.at.line), ("san-oob/KEM_san-oob.c", planted("oob")));
    assert!(f.what.starts_with("WRITE of size 1"), "{}", f.what);
    assert_eq!(f.entry.as_deref(), Some("kem_dec"));
    assert!(f.runs.contains(&"kat".to_owned()));

    let int = record(&out, "san-int");
    assert_eq!(int.status, SanStatus::Findings);
    let f = &int.findings[0];
    assert_eq!((f.sanitizer.as_str(), f.kind.as_str()), ("UndefinedBehaviorSanitizer", "signed-integer-overflow"));
    assert_eq!((f.at.file.as_str(), f.at.line), ("san-int/KEM_san-int.c", planted("overflow")));

    // Its own defaults lose to the tool's environment, and its silenced stderr loses to
    // the exit code: a failure with its hooks listed, neither clean nor a made-up place.
    let mute = record(&out, "san-mute");
    assert_eq!(mute.status, SanStatus::Failed, "{:?}", mute.detail);
    assert!(mute.runs.iter().any(|r| r.verdict == SanRunVerdict::Unreadable));
    assert!(mute.findings.is_empty());
    assert!(mute.hooks.iter().any(|h| h.contains("defines __asan_default_options")), "{:?}", mute.hooks);

    let text = common::stdout(&run);
    assert!(text.contains(&format!("san-oob/KEM_san-oob.c:{}", planted("oob"))), "{text}");

    // The page's section, from the records alone.
    let page = xtask(&["report", m, "--out", o], None);
    assert!(page.status.success());
    let md = std::fs::read_to_string(common::layout(&out).report("fixture-kem")).unwrap();
    let section = md.split("\n## Sanitizers\n").nth(1).expect("a Sanitizers section");
    assert!(section.contains("| san-clean | clean | 0 |"), "{section}");
    assert!(section.contains(&format!("`san-int/KEM_san-int.c:{}`", planted("overflow"))), "{section}");
    assert!(section.contains("| san-mute | failed | 0 |"), "{section}");
}

#[test]
fn an_emulated_architecture_is_refused_before_any_engine() {
    let other = if cfg!(target_arch = "x86_64") { "aarch64" } else { "x86-64" };
    let tmp = tempfile::tempdir().unwrap();
    let o = tmp.path().join("out");
    // No engine on PATH: a refusal after an engine call would be exit 3, not 2.
    let args = ["sanitize", "pqclean-ml-kem", "--arch", other, "--engine", "docker", "--out", o.to_str().unwrap()];
    let run =
        std::process::Command::new(env!("CARGO_BIN_EXE_xtask")).args(args).env("PATH", tmp.path()).output().unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("qemu-user"), "{stderr}");
    assert!(!o.exists(), "nothing written");
}

/// A key exchange under the sanitizers (one instance, about 35 s, mostly its build): the
/// KAT with its digest checked, then both of the family's checks, the tampered passes
/// included; a record a later `--resume` keeps only while it derives again (unit test
/// `sanitize::tests::a_kept_record_is_derived_again`).
#[test]
fn a_key_exchange_runs_its_kat_and_both_checks_under_the_sanitizers() {
    use common::kex_fixture as kex;
    let tmp = tempfile::tempdir().unwrap();
    let insts = kex::subset(&["kex-p2"]);
    let (_, zip) = kex::write_archive(tmp.path(), &insts);
    let m = kex::manifest_dir(&tmp.path().join("m"), &zip, &insts);
    let out = tmp.path().join("out");
    let (m, z, o) = (m.to_str().unwrap(), zip.to_str().unwrap(), out.to_str().unwrap());
    let run = xtask(&["sanitize", m, "--archive", z, "--engine", "podman", "--out", o], None);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let path = common::layout(&out).sanitize(kex::ID, "kex-p2");
    let rec: SanitizeRecord = schema::read(&path).unwrap().expect("a record");
    assert_eq!(rec.status, SanStatus::Clean, "{:?}", rec.detail);
    let runs: Vec<(&str, SanRunVerdict)> = rec.runs.iter().map(|r| (r.run.as_str(), r.verdict)).collect();
    let clean = SanRunVerdict::Clean;
    assert_eq!(runs, [("kat", clean), ("length contract", clean), ("tampered passes", clean)]);
    assert!(rec.runs[0].expected_sha256.is_some() && rec.runs[0].expected_sha256 == rec.runs[0].actual_sha256);
    let checks: Vec<&str> = rec.checks.iter().filter(|c| c.holds()).map(|c| c.check.as_str()).collect();
    assert_eq!(checks, ["length contract", "tampered passes"]);
}
