//! `cargo xtask profile` on the fixture candidate: calls per operation equal what its
//! C code does (read off `tests/fixture/kem_body.c`), a seed-dependent count is the
//! exact fractional mean (from the Rust model of the DRNG stream), and the survey finds
//! the compiled-in Keccak dead where it is never called and the verdicts follow.

mod common;

use common::fixture::*;
use common::xtask;
use xtask::evidence::schema::{self, ProfileRecord, Survey, Verdict};

fn record(out: &std::path::Path, label: &str, op: &str) -> ProfileRecord {
    schema::read(&common::layout(out).profile("fixture-kem", label, op)).unwrap().expect("profile record")
}

fn calls(r: &ProfileRecord, symbol: &str) -> f64 {
    r.groups.iter().flat_map(|g| &g.symbols).find(|s| s.symbol == symbol).unwrap().calls_per_op
}

/// Extra hash calls of `fix-vary` in one trial process: the driver seeds the DRNG with
/// bytes 00..2f, runs keygen, enc and dec once, then the warm-ups, then the timed loop;
/// each keygen draws one secret key, each enc one coin.
fn odd_keys(n: usize, warmups: u64, iterations: u64) -> u64 {
    let seed: Vec<u8> = (0..48).collect();
    let mut drng = Drng::new(&seed);
    drng.get(n); // setup keygen
    drng.get(n); // setup enc
    for _ in 0..warmups {
        drng.get(n);
    }
    (0..iterations).filter(|_| drng.get(n)[0] & 1 == 1).count() as u64
}

#[test]
fn profile_counts_calls_exactly_and_derives_the_survey() {
    let tmp = tempfile::tempdir().unwrap();
    let insts: Vec<Inst> = vec![
        ("fix-16", 16, String::new()),
        ("fix-vary", 16, "#define FIX_VARY 1\n".into()),
        ("fix-keccak", 16, "#define FIX_KECCAK_LIVE 1\n".into()),
    ];
    write_tree(&tmp.path().join("tree"), &insts);
    let zip = tmp.path().join("Fixture KEM v1.zip");
    zip_tree(&tmp.path().join("tree"), &zip);
    let m = manifest_dir(&tmp.path().join("m"), &zip, false, &insts);
    let out = tmp.path().join("out");
    let run = xtask(
        &[
            "profile",
            m.to_str().unwrap(),
            "--engine",
            "podman",
            "--archive",
            zip.to_str().unwrap(),
            "--quick",
            "--allow-unfixed-host",
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    assert!(run.status.success());

    // kem_body.c: keygen = 1 DRNG draw + H; enc = 1 draw + XOF + H; dec = 2 H + XOF.
    let expect = [
        ("keygen", [("get_random_number", 1.0), ("pseudohash", 1.0), ("pseudoXOF", 0.0)]),
        ("enc", [("get_random_number", 1.0), ("pseudohash", 1.0), ("pseudoXOF", 1.0)]),
        ("dec", [("get_random_number", 0.0), ("pseudohash", 2.0), ("pseudoXOF", 1.0)]),
    ];
    for (op, want) in expect {
        let r = record(&out, "fix-16", op);
        for (symbol, n) in want {
            assert_eq!(calls(&r, symbol), n, "fix-16 {op} {symbol}");
        }
        assert_eq!(calls(&r, "sm3hash"), 0.0);
        assert_eq!(calls(&r, "fixture_keccak_f1600"), 0.0);
        let hash = r.groups.iter().find(|g| g.name == "hash").unwrap();
        assert!(hash.share > 0.0 && hash.share < 1.0, "{}", hash.share);
        assert!(r.overhead_ratio > 0.0);
    }
    let vary = record(&out, "fix-vary", "keygen");
    let odd = odd_keys(16, vary.warmups, vary.iterations);
    assert!(odd > 0 && odd < vary.iterations, "the count must vary: {odd} of {}", vary.iterations);
    let mean = 1.0 + odd as f64 / vary.iterations as f64;
    assert!((calls(&vary, "pseudohash") - mean).abs() < 1e-12, "{} vs {mean}", calls(&vary, "pseudohash"));
    assert_eq!(calls(&record(&out, "fix-keccak", "keygen"), "fixture_keccak_f1600"), 1.0);

    let survey: Survey = schema::read(&common::layout(&out).survey("fixture-kem")).unwrap().unwrap();
    let of = |l: &str| survey.instances.iter().find(|i| i.label == l).unwrap();
    assert_eq!(of("fix-16").verdict, Verdict::IccsOnly);
    assert!(of("fix-16").notes.contains(&"Keccak dead".to_owned()), "{:?}", of("fix-16").notes);
    assert!(of("fix-16").compiled_in.get("Keccak").unwrap().iter().any(|e| e.contains("round constants")));
    assert_eq!(of("fix-keccak").verdict, Verdict::Mixed);
    assert!(of("fix-keccak").notes.is_empty(), "{:?}", of("fix-keccak").notes);
    assert_eq!(survey.verdict, Verdict::InstanceDependent);
    // The page: the seed pages' section, and the records in the raw evidence index.
    let report = xtask(&["report", m.to_str().unwrap(), "--out", out.to_str().unwrap()], None);
    assert!(report.status.success());
    let page = std::fs::read_to_string(common::layout(&out).report("fixture-kem")).unwrap();
    let section = &page[page.find("## Symmetric primitives").unwrap()..page.find("## 7.").unwrap()];
    assert!(section.contains("Survey verdict: instance-dependent"), "{section}");
    assert!(section.contains("| fix-16 | dec | "), "{section}");
    assert!(section.contains("| pseudohash 2, pseudoXOF 1 |"), "{section}");
    assert!(page.contains("| fix-vary | hash profile keygen | profile/fixture-kem/fix-vary__keygen.json |"), "{page}");
    assert!(page.contains("Paths are relative to `local/`"), "{page}");
    let check = xtask(&["evidence", "check", out.to_str().unwrap()], None);
    assert!(check.status.success(), "profile records and survey are indexed and read back");
}
